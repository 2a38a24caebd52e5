// What a sliced core must keep besides the decoders' reads, so gdb and our
// reader still work on it: thread stacks, ELF headers + build-id notes of
// mapped objects, the dynamic linker's list of loaded objects (r_debug,
// link_map, names), and small writable data segments (.data, .bss) of mapped objects.
#pragma once

#include <cstdint>
#include <vector>

#include "target/core_file.h"
#include "target/recording_target.h"

namespace nsc {

struct SliceKeepOptions {
  uint64_t stack_cap = 8u << 20;            // bytes kept above each thread's SP
  uint64_t stack_below_sp = 4096;           // red zone and signal frames below SP
  // SP inside a segment larger than this is on an alternate signal stack allocated from the
  // heap (python -X faulthandler's SIGABRT handler): keep only signal_stack_cap above it.
  uint64_t stack_segment_max = 64u << 20;
  uint64_t signal_stack_cap = 256u << 10;
  uint64_t tcb_bytes = 4096;                // kept on each side of a thread's fs_base
  uint64_t elf_header_bytes = 4096;         // of each file-offset-0 mapping (kernel dumps one page)
  uint64_t small_data_segment = 512u << 10; // writable file-backed segments up to this size
};

// Each thread's stack from SP up, and its thread control block (fs_base), which
// libthread_db reads to list threads; plus the top of the initial (main-thread) stack, which the
// unwinder needs when the main thread dumped core on an alternate signal stack.
std::vector<AddressRange> thread_stack_ranges(CoreFile& core, const SliceKeepOptions& options);
// The vDSO image (gdb loads its symbols from memory).
std::vector<AddressRange> vdso_ranges(CoreFile& core);
std::vector<AddressRange> elf_header_ranges(CoreFile& core, const SliceKeepOptions& options);
std::vector<AddressRange> dynamic_linker_ranges(CoreFile& core);
std::vector<AddressRange> small_data_segment_ranges(CoreFile& core, const SliceKeepOptions& options);

// All of the above, merged.
std::vector<AddressRange> default_keep_ranges(CoreFile& core, const SliceKeepOptions& options);

// "0x1000-0x2000" -> range; false when malformed or empty.
bool parse_address_range(const std::string& text, AddressRange* range);

}  // namespace nsc
