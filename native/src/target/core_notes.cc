#include "target/core_notes.h"

#include <elf.h>
#include <sys/procfs.h>
#include <sys/user.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "target/launcher_environment.h"

namespace nsc {
namespace {

uint64_t load_u64(const uint8_t* p) {
  uint64_t value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// Fixed-size char array from a note, cut at the first NUL.
std::string bounded_string(const char* chars, size_t capacity) {
  return std::string(chars, strnlen(chars, capacity));
}

// NT_FILE: count, page_size, count x {start, end, page_offset}, then count names.
void add_file_note(const uint8_t* desc, size_t size, CoreNotes* notes) {
  if (size < 16) return notes->problems.push_back("NT_FILE note too short");
  uint64_t count = load_u64(desc), page_size = load_u64(desc + 8);
  size_t names_at = 16 + count * 24;
  if (count > size / 24 || names_at > size)
    return notes->problems.push_back("NT_FILE note: bad entry count");
  const char* name = reinterpret_cast<const char*>(desc + names_at);
  const char* end = reinterpret_cast<const char*>(desc + size);
  for (uint64_t i = 0; i < count && name < end; ++i) {
    const uint8_t* entry = desc + 16 + i * 24;
    MappedFile file;
    file.start = load_u64(entry);
    file.end = load_u64(entry + 8);
    file.file_offset = load_u64(entry + 16) * page_size;
    file.path = std::string(name, strnlen(name, end - name));
    name += file.path.size() + 1;
    notes->files.push_back(std::move(file));
  }
}

void add_prstatus_note(const uint8_t* desc, size_t size, CoreNotes* notes) {
  if (size < sizeof(elf_prstatus)) return notes->problems.push_back("NT_PRSTATUS note too short");
  elf_prstatus status;
  std::memcpy(&status, desc, sizeof status);
  ThreadInfo thread;
  thread.tid = status.pr_pid;
  thread.prstatus.assign(desc, desc + size);
  notes->threads.push_back(std::move(thread));
}

void add_prpsinfo_note(const uint8_t* desc, size_t size, CoreNotes* notes) {
  if (size < sizeof(elf_prpsinfo)) return notes->problems.push_back("NT_PRPSINFO note too short");
  elf_prpsinfo info;
  std::memcpy(&info, desc, sizeof info);
  notes->pid = info.pr_pid;
  notes->process_state = info.pr_sname ? info.pr_sname : '?';
  notes->command_name = bounded_string(info.pr_fname, sizeof info.pr_fname);
  notes->command_line = bounded_string(info.pr_psargs, sizeof info.pr_psargs);
}

void add_siginfo_note(const uint8_t* desc, size_t size, CoreNotes* notes) {
  notes->signal = parse_siginfo(desc, size);
  if (!notes->signal) notes->problems.push_back("NT_SIGINFO note too short");
}

void add_auxv_note(const uint8_t* desc, size_t size, CoreNotes* notes) {
  for (size_t at = 0; at + 16 <= size; at += 16) {
    uint64_t key = load_u64(desc + at);
    notes->auxv_bytes.insert(notes->auxv_bytes.end(), desc + at, desc + at + 16);
    if (key == AT_NULL) break;
    notes->auxv[key] = load_u64(desc + at + 8);
  }
}

std::optional<uint64_t> register_at(const ThreadInfo& thread, size_t offset_in_regs) {
  size_t at = offsetof(elf_prstatus, pr_reg) + offset_in_regs;
  if (thread.prstatus.size() < at + 8) return std::nullopt;
  return load_u64(thread.prstatus.data() + at);
}

// Calls visit(type, owner name, desc, desc size) for each note of a PT_NOTE segment; false when
// the segment is truncated or malformed (the notes before that point were visited).
template <typename Visit>
bool for_each_note(uint8_t* data, size_t size, Visit visit) {
  auto align4 = [](size_t n) { return (n + 3) & ~size_t{3}; };
  size_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= size) {
    Elf64_Nhdr header;
    std::memcpy(&header, data + at, sizeof header);
    size_t name_at = at + sizeof header;
    size_t desc_at = name_at + align4(header.n_namesz);
    if (header.n_namesz > size || header.n_descsz > size || desc_at + header.n_descsz > size) return false;
    const char* name = reinterpret_cast<const char*>(data + name_at);
    visit(header.n_type, std::string(name, strnlen(name, header.n_namesz)), data + desc_at, size_t{header.n_descsz});
    at = desc_at + align4(header.n_descsz);
  }
  return true;
}

// A slice's provenance note: its lines.
void add_provenance_note(const uint8_t* desc, size_t size, CoreNotes* notes) {
  std::string text(reinterpret_cast<const char*>(desc), size);
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    if (end > at) notes->slice_provenance.push_back(text.substr(at, end - at));
    at = end + 1;
  }
}

// Zeroes desc[from, to) (clipped to size); returns the bytes zeroed.
uint64_t zero_span(uint8_t* desc, size_t size, size_t from, size_t to) {
  to = std::min(to, size);
  if (from >= to) return 0;
  std::memset(desc + from, 0, to - from);
  return to - from;
}

// The FXSAVE image that starts NT_FPREGSET and NT_X86_XSTATE: control words in [0, 32), x87 ST
// and XMM registers in [32, 416); [464, 512) holds the kernel's XSAVE layout words (xcr0: gdb reads
// it) and stays. XSTATE then has the 64-byte XSAVE header (kept) and the extended registers.
constexpr size_t kFxsaveRegisters = 32, kFxsaveRegistersEnd = 416, kXsaveExtended = 576;

void redact_command_line(uint8_t* desc, size_t size) {
  if (size < sizeof(elf_prpsinfo)) return;
  char* args = reinterpret_cast<char*>(desc) + offsetof(elf_prpsinfo, pr_psargs);
  size_t length = strnlen(args, ELF_PRARGSZ);
  size_t index = 0;
  for (size_t at = 0; at < length;) {
    size_t end = at;
    while (end < length && args[end] != ' ') ++end;
    size_t visible = visible_argument_prefix(std::string_view(args + at, end - at), index++);
    std::memset(args + at + visible, '*', end - at - visible);
    at = end + 1;
  }
}

}  // namespace

uint64_t redact_note_segment(uint8_t* data, size_t size) {
  uint64_t zeroed = 0;
  for_each_note(data, size, [&](uint32_t type, const std::string& name, uint8_t* desc, size_t desc_size) {
    if (name == "CORE" && type == NT_FPREGSET)
      zeroed += zero_span(desc, desc_size, kFxsaveRegisters, kFxsaveRegistersEnd);
    if (name == "LINUX" && type == NT_X86_XSTATE)
      zeroed += zero_span(desc, desc_size, kFxsaveRegisters, kFxsaveRegistersEnd) +
                zero_span(desc, desc_size, kXsaveExtended, desc_size);
    if (name == "CORE" && type == NT_PRPSINFO) redact_command_line(desc, desc_size);
  });
  return zeroed;
}

void add_core_note(uint32_t type, const std::string& name, const uint8_t* desc, size_t size,
                   CoreNotes* notes) {
  if (name == kNcclscopeNoteOwner && type == kSliceProvenanceNote) return add_provenance_note(desc, size, notes);
  notes->notes_seen = true;
  if (name != "CORE") return;  // "LINUX" (xstate) and "GDB" notes carry nothing we parse
  switch (type) {
    case NT_SIGINFO: return add_siginfo_note(desc, size, notes);
    case NT_FILE: return add_file_note(desc, size, notes);
    case NT_PRSTATUS: return add_prstatus_note(desc, size, notes);
    case NT_PRPSINFO: return add_prpsinfo_note(desc, size, notes);
    case NT_AUXV: return add_auxv_note(desc, size, notes);
    default: return;
  }
}

void parse_note_segment(const uint8_t* data, size_t size, CoreNotes* notes) {
  // for_each_note takes writable bytes (redact_note_segment); this visit only reads them.
  bool whole = for_each_note(const_cast<uint8_t*>(data), size,
                             [&](uint32_t type, const std::string& name, const uint8_t* desc, size_t desc_size) {
                               add_core_note(type, name, desc, desc_size, notes);
                             });
  if (!whole) notes->problems.push_back("note segment truncated or malformed");
}

std::optional<SignalInfo> parse_siginfo(const uint8_t* desc, size_t size) {
  // siginfo_t on x86-64: si_signo, si_errno, si_code (int each), padding, then the union at 16:
  // {pid_t si_pid; uid_t si_uid} for kill/tgkill, {void *si_addr} for faults.
  constexpr size_t kUnion = 16;
  if (size < kUnion + 8) return std::nullopt;
  auto load_i32 = [&](size_t at) {
    int32_t value;
    std::memcpy(&value, desc + at, sizeof value);
    return static_cast<int>(value);
  };
  SignalInfo info;
  info.signo = load_i32(0);
  info.errno_value = load_i32(4);
  info.code = load_i32(8);
  info.sender_pid = load_i32(kUnion);
  info.sender_uid = load_i32(kUnion + 4);
  info.fault_address = load_u64(desc + kUnion);
  return info;
}

std::optional<int> current_signal_of(const ThreadInfo& thread) {
  if (thread.prstatus.size() < offsetof(elf_prstatus, pr_cursig) + sizeof(short)) return std::nullopt;
  short cursig;
  std::memcpy(&cursig, thread.prstatus.data() + offsetof(elf_prstatus, pr_cursig), sizeof cursig);
  return cursig;
}

std::optional<uint64_t> stack_pointer_of(const ThreadInfo& thread) {
  return register_at(thread, offsetof(user_regs_struct, rsp));
}
std::optional<uint64_t> instruction_pointer_of(const ThreadInfo& thread) {
  return register_at(thread, offsetof(user_regs_struct, rip));
}
std::optional<uint64_t> frame_pointer_of(const ThreadInfo& thread) {
  return register_at(thread, offsetof(user_regs_struct, rbp));
}
std::optional<uint64_t> thread_pointer_of(const ThreadInfo& thread) {
  return register_at(thread, offsetof(user_regs_struct, fs_base));
}

std::optional<int> syscall_of(const ThreadInfo& thread) {
  auto orig_rax = register_at(thread, offsetof(user_regs_struct, orig_rax));
  // -1 outside a system call; anything past the x86-64 table is not one either.
  if (!orig_rax || static_cast<int64_t>(*orig_rax) < 0 || *orig_rax >= 1024) return std::nullopt;
  return static_cast<int>(*orig_rax);
}

namespace {

// user_regs_struct's fields by the names gdb gives x86-64 registers.
const std::map<std::string, size_t>& register_offsets() {
  static const std::map<std::string, size_t> offsets = {
      {"r15", offsetof(user_regs_struct, r15)},           {"r14", offsetof(user_regs_struct, r14)},
      {"r13", offsetof(user_regs_struct, r13)},           {"r12", offsetof(user_regs_struct, r12)},
      {"rbp", offsetof(user_regs_struct, rbp)},           {"rbx", offsetof(user_regs_struct, rbx)},
      {"r11", offsetof(user_regs_struct, r11)},           {"r10", offsetof(user_regs_struct, r10)},
      {"r9", offsetof(user_regs_struct, r9)},             {"r8", offsetof(user_regs_struct, r8)},
      {"rax", offsetof(user_regs_struct, rax)},           {"rcx", offsetof(user_regs_struct, rcx)},
      {"rdx", offsetof(user_regs_struct, rdx)},           {"rsi", offsetof(user_regs_struct, rsi)},
      {"rdi", offsetof(user_regs_struct, rdi)},           {"orig_rax", offsetof(user_regs_struct, orig_rax)},
      {"rip", offsetof(user_regs_struct, rip)},           {"cs", offsetof(user_regs_struct, cs)},
      {"eflags", offsetof(user_regs_struct, eflags)},     {"rsp", offsetof(user_regs_struct, rsp)},
      {"ss", offsetof(user_regs_struct, ss)},             {"fs_base", offsetof(user_regs_struct, fs_base)},
      {"gs_base", offsetof(user_regs_struct, gs_base)},   {"ds", offsetof(user_regs_struct, ds)},
      {"es", offsetof(user_regs_struct, es)},             {"fs", offsetof(user_regs_struct, fs)},
      {"gs", offsetof(user_regs_struct, gs)},
  };
  return offsets;
}

}  // namespace

std::optional<std::array<uint64_t, 17>> dwarf_registers_of(const ThreadInfo& thread) {
  // DWARF numbering of the x86-64 psABI, as user_regs_struct offsets.
  static const size_t kDwarfOrder[17] = {
      offsetof(user_regs_struct, rax), offsetof(user_regs_struct, rdx), offsetof(user_regs_struct, rcx),
      offsetof(user_regs_struct, rbx), offsetof(user_regs_struct, rsi), offsetof(user_regs_struct, rdi),
      offsetof(user_regs_struct, rbp), offsetof(user_regs_struct, rsp), offsetof(user_regs_struct, r8),
      offsetof(user_regs_struct, r9),  offsetof(user_regs_struct, r10), offsetof(user_regs_struct, r11),
      offsetof(user_regs_struct, r12), offsetof(user_regs_struct, r13), offsetof(user_regs_struct, r14),
      offsetof(user_regs_struct, r15), offsetof(user_regs_struct, rip)};
  if (thread.prstatus.size() < offsetof(elf_prstatus, pr_reg) + sizeof(user_regs_struct)) return std::nullopt;
  std::array<uint64_t, 17> registers{};
  for (size_t regno = 0; regno < registers.size(); ++regno)
    registers[regno] = *register_at(thread, kDwarfOrder[regno]);
  return registers;
}

std::vector<uint8_t> prstatus_from_registers(int tid, const NamedRegisters& registers) {
  elf_prstatus status;
  std::memset(&status, 0, sizeof status);
  status.pr_pid = tid;
  std::vector<uint8_t> bytes(sizeof status);
  std::memcpy(bytes.data(), &status, sizeof status);
  auto store = [&](size_t offset_in_regs, uint64_t value) {
    std::memcpy(bytes.data() + offsetof(elf_prstatus, pr_reg) + offset_in_regs, &value, sizeof value);
  };
  store(offsetof(user_regs_struct, orig_rax), UINT64_MAX);  // -1: in no system call unless told
  for (const auto& [name, value] : registers) {
    auto offset = register_offsets().find(name);
    if (offset != register_offsets().end()) store(offset->second, value);
  }
  return bytes;
}

std::vector<std::string> missing_unwind_registers(const NamedRegisters& registers) {
  std::vector<std::string> missing;
  for (const char* name : {"rip", "rsp"})
    if (registers.count(name) == 0) missing.push_back(name);
  return missing;
}

std::optional<uint64_t> auxv_value(const std::vector<uint8_t>& auxv_bytes, uint64_t key) {
  for (size_t at = 0; at + 16 <= auxv_bytes.size(); at += 16) {
    uint64_t entry_key = load_u64(auxv_bytes.data() + at);
    if (entry_key == AT_NULL) break;
    if (entry_key == key) return load_u64(auxv_bytes.data() + at + 8);
  }
  return std::nullopt;
}

}  // namespace nsc
