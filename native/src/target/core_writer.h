// Writes a sliced copy of an ELF core: the same notes, every original PT_LOAD
// still described (so addresses stay "mapped"), but only the kept ranges carry
// bytes; the rest becomes PT_LOADs with p_filesz 0 ("not saved in core").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "target/core_file.h"
#include "target/recording_target.h"

namespace nsc {

// What a slice must not carry although it keeps the page (a slice is made to be shared), and
// what it says about itself. Memory inside a redact list is written as '*' (NULs stay NULs, so
// strings stay well formed); the FP/SIMD registers of every thread are always zeroed.
struct SliceEdits {
  std::vector<AddressRange> redact_environment;  // environment values on the initial stack
  std::vector<AddressRange> redact_arguments;    // argument values (argv[1..]) on the initial stack
  std::vector<AddressRange> redact_stacks;       // thread stack bytes no decoder read
  // Lines of the slice's provenance note (owner "NCCLSCOPE"): what the input lacked or what
  // could not be read while slicing; CoreFile reports each line as a warning of the slice.
  std::vector<std::string> provenance;
};

struct SliceStats {
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  uint64_t kept_bytes = 0;      // memory bytes carried in the output
  uint64_t load_segments = 0;   // PT_LOADs written
  uint64_t note_bytes = 0;
  uint64_t redacted_environment_bytes = 0;  // bytes written as '*', per SliceEdits list
  uint64_t redacted_argument_bytes = 0;
  uint64_t redacted_stack_bytes = 0;
  uint64_t cleared_register_bytes = 0;      // FP/SIMD register bytes zeroed in the notes
};

// One output PT_LOAD: [vaddr, vaddr+memsz) with bytes from the input when `saved`.
struct SlicePiece {
  uint64_t vaddr = 0;
  uint64_t memsz = 0;
  bool saved = false;
  uint32_t flags = 0;
  uint64_t input_offset = 0;  // offset of vaddr's bytes in the input core (when saved)
};

// Splits each input segment along the page-aligned kept ranges.
std::vector<SlicePiece> plan_slice(const CoreFile& core, const std::vector<AddressRange>& keep);

// Writes the sliced core to `output` (an open descriptor, named output_name in messages);
// throws nsc::BadInput naming it on I/O failure.
SliceStats write_sliced_core(const CoreFile& core, const std::vector<AddressRange>& keep, int output,
                             const std::string& output_name, const SliceEdits& edits = {});
// The same into output_path, through a ReplacingOutput (util/output_file.h): refuses a path
// that is the core itself, a symbolic link or anything but a regular file.
SliceStats write_sliced_core(const CoreFile& core, const std::vector<AddressRange>& keep,
                             const std::string& output_path, const SliceEdits& edits = {});
// Throws nsc::BadInput when output_path names the core being sliced.
void check_not_the_input(const CoreFile& core, const std::string& output_path);

}  // namespace nsc
