// libFuzzer target: the flight recorder buffer decoder (cuda/recorder_decoder.h)
// over a region made of fuzzer bytes. Seeds: tests/fuzz/make_recorder_seed.py.
#include "fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return nsc::fuzz::run_cpu_bounded(nsc::fuzz::run_recorder_decoder, data, size);
}
