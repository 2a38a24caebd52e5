#include "nccl/field_sink.h"

#include "util/strings.h"

namespace nsc {

void FieldSink::put_hex(const std::string& key, const Fetched<uint64_t>& fetched) {
  if (fetched.ok()) (*object_)[key] = hex(*fetched.value);
  else put(key, fetched);
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
