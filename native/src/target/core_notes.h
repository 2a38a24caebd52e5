// Parsing of the notes of an x86-64 Linux ELF core: NT_FILE, NT_PRSTATUS,
// NT_PRPSINFO, NT_AUXV. Pure functions of note bytes (testable without a core).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"

namespace nsc {

struct CoreNotes {
  std::vector<MappedFile> files;             // NT_FILE, in note order
  std::vector<ThreadInfo> threads;           // one per NT_PRSTATUS
  int pid = 0;                               // NT_PRPSINFO pr_pid (else first thread)
  std::string command_name;                  // NT_PRPSINFO pr_fname (comm)
  std::string command_line;                  // NT_PRPSINFO pr_psargs (first 80 bytes)
  char process_state = '?';                  // NT_PRPSINFO pr_sname
  std::map<uint64_t, uint64_t> auxv;         // NT_AUXV: AT_* -> value
  std::vector<uint8_t> auxv_bytes;           // NT_AUXV as saved, through AT_NULL (kernel order)
  // NT_SIGINFO; nullopt when the core has none (cut before it, or a writer that omits it).
  // The thread that took the signal is the first NT_PRSTATUS (the kernel writes the dumping
  // thread first: fs/binfmt_elf.c fill_note_info).
  std::optional<SignalInfo> signal;
  bool notes_seen = false;                   // at least one PT_NOTE segment held a note
  std::vector<std::string> problems;         // malformed notes (warnings)
  std::vector<std::string> slice_provenance; // a slice's NCCLSCOPE note: what its input lacked
};

// The note `ncclscope slice` adds: owner "NCCLSCOPE", one line per thing the slice lost.
constexpr char kNcclscopeNoteOwner[] = "NCCLSCOPE";
constexpr uint32_t kSliceProvenanceNote = 1;

// Edits one PT_NOTE segment in place for a slice that is shared: the register contents of
// NT_FPREGSET and NT_X86_XSTATE become zeros (x87/SSE/AVX/AVX-512 state can hold secrets; the
// control words and the XSAVE layout stay, so gdb and libdwfl still parse the notes), and the
// argument values in NT_PRPSINFO's pr_psargs become '*' (launcher_environment.h's rule).
// Returns the number of register bytes zeroed.
uint64_t redact_note_segment(uint8_t* data, size_t size);

// Adds what one note says to `notes`. `type` is n_type, `name` the owner ("CORE").
void add_core_note(uint32_t type, const std::string& name, const uint8_t* desc, size_t size,
                   CoreNotes* notes);

// Parses a whole PT_NOTE segment (sequence of Elf64_Nhdr + name + desc, 4-aligned).
void parse_note_segment(const uint8_t* data, size_t size, CoreNotes* notes);

// siginfo_t bytes of an NT_SIGINFO note; nullopt when shorter than si_signo..si_addr.
std::optional<SignalInfo> parse_siginfo(const uint8_t* desc, size_t size);
// pr_cursig of a raw NT_PRSTATUS (the signal being delivered); nullopt when too short.
std::optional<int> current_signal_of(const ThreadInfo& thread);

// Registers of a thread, from its raw NT_PRSTATUS (x86-64 user_regs_struct order).
std::optional<uint64_t> stack_pointer_of(const ThreadInfo& thread);
std::optional<uint64_t> instruction_pointer_of(const ThreadInfo& thread);
std::optional<uint64_t> frame_pointer_of(const ThreadInfo& thread);
std::optional<uint64_t> thread_pointer_of(const ThreadInfo& thread);  // fs_base: the TCB
// The x86-64 system call number the thread sits in (orig_rax), or nullopt when in none.
std::optional<int> syscall_of(const ThreadInfo& thread);

// x86-64 DWARF registers 0-16 (rax rdx rcx rbx rsi rdi rbp rsp r8-r15, rip: the numbering
// libdwfl's unwinder takes) from a thread's NT_PRSTATUS; nullopt when it is too short.
std::optional<std::array<uint64_t, 17>> dwarf_registers_of(const ThreadInfo& thread);

// The general registers a front end names (gdb's: "rax", "rip", "orig_rax", "fs_base", ...).
using NamedRegisters = std::map<std::string, uint64_t>;

// An x86-64 NT_PRSTATUS for tid holding those registers, so that a thread whose registers a
// debugger read looks like a core's (syscall_of, stack_pointer_of, the unwinder). Registers
// not given stay 0, orig_rax -1 (in no system call). Unknown names are ignored.
std::vector<uint8_t> prstatus_from_registers(int tid, const NamedRegisters& registers);

// The names of the registers the unwinder needs to start (rip, rsp), missing from `registers`.
std::vector<std::string> missing_unwind_registers(const NamedRegisters& registers);

// The value of auxiliary-vector entry `key` (AT_ENTRY, ...) in raw NT_AUXV bytes.
std::optional<uint64_t> auxv_value(const std::vector<uint8_t>& auxv_bytes, uint64_t key);

}  // namespace nsc
