#include "nccl/field_sink.h"

#include <climits>

#include "util/strings.h"

namespace nsc {

void FieldSink::put_hex(const std::string& key, const Fetched<uint64_t>& fetched) {
  if (fetched.ok()) (*object_)[key] = hex(*fetched.value);
  else put(key, fetched);
}

std::string FieldSink::impossible_count_reason(uint64_t value) {
  if (value <= static_cast<uint64_t>(INT64_MAX)) return "";
  return "impossible value " + std::to_string(value) + " (beyond 2^63-1: torn or never-written memory)";
}

void FieldSink::put_count(const std::string& key, const Fetched<uint64_t>& fetched) {
  if (!fetched.ok()) return put(key, fetched);
  std::string impossible = impossible_count_reason(*fetched.value);
  if (impossible.empty()) {
    (*object_)[key] = static_cast<int64_t>(*fetched.value);
    return;
  }
  (*object_)[key] = nullptr;
  mark_unavailable(key, impossible, 0);
  warn(prefix_ + key + ": " + impossible);
}

void FieldSink::mark_unavailable(const std::string& key, const std::string& why, uint64_t address) {
  std::string field = prefix_ + key;
  (*scope_->unavailable)[field] = why;
  // address != 0: the layout knew the field but its memory could not be read.
  if (address != 0 && scope_->errors != nullptr) {
    scope_->errors->push_back({{"kind", "read"},
                               {"subject", scope_->subject + " " + field},
                               {"address", hex(address)},
                               {"reason", why}});
  }
}

void FieldSink::warn(const std::string& message) {
  // Garbage memory can repeat one problem without end: keep the first ones and the last.
  constexpr size_t kMaxWarnings = 64;
  if (scope_->warnings->size() < kMaxWarnings)
    scope_->warnings->push_back(scope_->subject + ": " + message);
  else
    (*scope_->warnings)[kMaxWarnings] = scope_->subject + ": more warnings left out; the last: " + message;
}

}  // namespace nsc
