// libFuzzer target: see fuzz_entry_points.h (run_fr_dump) and docs/reliability.md.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return nsc::fuzz::run_cpu_bounded(nsc::fuzz::run_fr_dump, data, size);
}
