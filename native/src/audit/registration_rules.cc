// The registration cache (NCCL 2.28.9 register/register.cc ncclRegister): NCCL rounds a user
// buffer out to whole pages, begAddr = data & -pageSize, endAddr = (data + size + pageSize - 1)
// & -pageSize, with pageSize = sysconf(_SC_PAGESIZE) (init.cc), and inserts it so that slots
// ascend by begAddr. A user pointer needs no alignment; a record that breaks either rule is not
// what ncclRegister wrote (freed or overwritten memory), and lookups over it go wrong.
#include "audit/audit_report.h"
#include "util/strings.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

bool hex_field(const json& buffer, const char* key, uint64_t* value) {
  auto it = buffer.find(key);
  return it != buffer.end() && it->is_string() && parse_u64(it->get<std::string>(), value);
}

json buffer_evidence(const json& buffer, uint64_t page_size) {
  return {{"registration", buffer.value("address", json())}, {"slot", buffer.value("slot", json())},
          {"begin", buffer.value("begin", json())}, {"end", buffer.value("end", json())},
          {"page_size", page_size}, {"local_refs", buffer.value("local_refs", json())},
          {"graph_refs", buffer.value("graph_refs", json())}};
}

std::string misalignment(uint64_t begin, uint64_t end, uint64_t page_size) {
  if (end < begin) return "ends (" + hex(end) + ") before it begins (" + hex(begin) + ")";
  std::string what;
  if (begin % page_size != 0) what = "begAddr " + hex(begin) + " is not a multiple of the page size " + std::to_string(page_size);
  if (end % page_size != 0)
    what += std::string(what.empty() ? "" : "; ") + "endAddr " + hex(end) + " is not a multiple of the page size " + std::to_string(page_size);
  return what;
}

}  // namespace

void check_registrations(AuditReport& report, const CommRef& ref) {
  const char* aligned_rule = "registration-not-page-aligned";
  const char* sorted_rule = "registration-cache-unsorted";
  Field buffers = comm_field(*ref.comm, "cuda.registrations.buffers");
  Field page_size = comm_field(*ref.comm, "cuda.registrations.page_size");
  if (!buffers.known() || !buffers.value->is_array()) {
    std::string why = buffers.known() ? "registrations.buffers is not a list" : buffers.why;
    report.not_checked(aligned_rule, {ref}, why);
    report.not_checked(sorted_rule, {ref}, why);
    return;
  }
  bool page_known = page_size.known() && page_size.value->is_number_integer() && page_size.value->get<int64_t>() > 0;
  uint64_t page = page_known ? page_size.value->get<uint64_t>() : 0;
  size_t misaligned = 0, unreadable = 0, unsorted = 0;
  bool have_previous = false;
  uint64_t previous_begin = 0;
  for (const json& buffer : *buffers.value) {
    uint64_t begin = 0, end = 0;
    if (!buffer.is_object() || !hex_field(buffer, "begin", &begin) || !hex_field(buffer, "end", &end)) {
      ++unreadable;
      continue;
    }
    if (have_previous && begin < previous_begin) {
      ++unsorted;
      json evidence = buffer_evidence(buffer, page);
      evidence["previous_begin"] = hex(previous_begin);
      report.fire(sorted_rule, {ref}, "registration slot " + buffer.value("slot", json()).dump() + " begins at " + hex(begin) +
                                          ", below the slot before it (" + hex(previous_begin) + ")", evidence);
    }
    have_previous = true;
    previous_begin = begin;
    std::string what = page_known ? misalignment(begin, end, page) : "";
    if (what.empty()) continue;
    ++misaligned;
    report.fire(aligned_rule, {ref}, "registration slot " + buffer.value("slot", json()).dump() + " " + what,
                buffer_evidence(buffer, page));
  }
  if (!page_known) report.not_checked(aligned_rule, {ref}, page_size.known() ? "page_size is not a positive number" : page_size.why);
  else if (unreadable > 0) report.not_checked(aligned_rule, {ref}, std::to_string(unreadable) + " registration(s) unreadable");
  else if (misaligned == 0) report.passed(aligned_rule);
  if (unreadable > 0) report.not_checked(sorted_rule, {ref}, std::to_string(unreadable) + " registration(s) unreadable");
  else if (unsorted == 0) report.passed(sorted_rule);
}

}  // namespace nsc::audit
