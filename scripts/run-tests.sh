#!/usr/bin/env bash
# Every test: native Boost.Test suites, gdb --batch extension tests, CLI
# end-to-end tests on the real cores in corefiles/. Registered with CTest.
# Then, in one clang build with ASan+UBSan and libFuzzer (build-fuzz):
# * a few seconds of each libFuzzer target over its committed seeds
#   (NCCLSCOPE_FUZZ_SMOKE=0 skips them);
# * the whole suite again under ASan+UBSan (scripts/asan-tests.sh; NCCLSCOPE_ASAN_SUITE=0
#   skips it). One sanitized build serves both: a second (gcc) one cost ~20 min of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh test
bash scripts/build.sh
build_dir=${NCCLSCOPE_BUILD_DIR:-build}
status=0
ctest --test-dir "$build_dir" --output-on-failure -j "${NCCLSCOPE_TEST_JOBS:-2}" --timeout 600 "$@" || status=$?
fuzz_dir=${NCCLSCOPE_FUZZ_BUILD:-build-fuzz}
if [ "${NCCLSCOPE_FUZZ_SMOKE:-1}" = 1 ] || [ "${NCCLSCOPE_ASAN_SUITE:-1}" = 1 ]; then
  CC=clang CXX=clang++ NCCLSCOPE_BUILD_DIR=$fuzz_dir \
    NCCLSCOPE_CMAKE_ARGS="-DNCCLSCOPE_FUZZ=ON -DNCCLSCOPE_SANITIZE=ON" bash scripts/build.sh fuzz_all
fi
if [ "${NCCLSCOPE_ASAN_SUITE:-1}" = 1 ]; then  # every test there, the fuzz.* short runs included
  # Two corpus tests stay out of the sanitized run (~7 of its ~19 min in CI): they compare the
  # same `state`/`py-stacks` decoders with PyTorch's truth over the same torch cores that
  # cli.multigroup_corpus_test decodes (state and triage of every rank) under ASan.
  skipped='cli\.(torch_recorder_cores|python_torch_cores)_test'
  [ "${NCCLSCOPE_FUZZ_SMOKE:-1}" = 1 ] || skipped+='|fuzz\..*'
  NCCLSCOPE_ASAN_EXCLUDE=$skipped NCCLSCOPE_PLAIN_CORE=$build_dir/native/libncclscope_core.a \
    NCCLSCOPE_ASAN_BUILD=${NCCLSCOPE_ASAN_BUILD:-$fuzz_dir} bash scripts/asan-tests.sh "$@" || status=$?
elif [ "${NCCLSCOPE_FUZZ_SMOKE:-1}" = 1 ]; then
  ctest --test-dir "$fuzz_dir" --output-on-failure -R '^fuzz\.' --timeout 300 || status=$?
fi
exit $status
