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

struct SliceStats {
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  uint64_t kept_bytes = 0;      // memory bytes carried in the output
  uint64_t load_segments = 0;   // PT_LOADs written
  uint64_t note_bytes = 0;
  uint64_t redacted_bytes = 0;  // bytes written as '*' (see write_sliced_core)
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

// Writes the sliced core; throws nsc::BadInput naming output_path on I/O failure.
// Kept bytes inside `redact` are written as '*' (NULs stay NULs): secrets on a kept page.
SliceStats write_sliced_core(const CoreFile& core, const std::vector<AddressRange>& keep,
                             const std::string& output_path, const std::vector<AddressRange>& redact = {});

}  // namespace nsc
