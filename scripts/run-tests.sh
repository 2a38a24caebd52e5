#!/usr/bin/env bash
# Every test: native Boost.Test suites, gdb --batch extension tests, CLI
# end-to-end tests on the real cores in corefiles/. Registered with CTest.
# Then, each in a build of its own:
# * a few seconds of each libFuzzer target over its committed seeds (clang,
#   ASan+UBSan, build-fuzz; NCCLSCOPE_FUZZ_SMOKE=0 skips it);
# * the whole suite again under ASan+UBSan (gcc, build-asan, scripts/asan-tests.sh;
#   NCCLSCOPE_ASAN_SUITE=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh test
bash scripts/build.sh
build_dir=${NCCLSCOPE_BUILD_DIR:-build}
status=0
ctest --test-dir "$build_dir" --output-on-failure -j "${NCCLSCOPE_TEST_JOBS:-2}" --timeout 600 "$@" || status=$?
if [ "${NCCLSCOPE_FUZZ_SMOKE:-1}" = 1 ]; then
  fuzz_dir=${NCCLSCOPE_FUZZ_BUILD:-build-fuzz}
  CC=clang CXX=clang++ NCCLSCOPE_BUILD_DIR=$fuzz_dir \
    NCCLSCOPE_CMAKE_ARGS="-DNCCLSCOPE_FUZZ=ON -DNCCLSCOPE_SANITIZE=ON" bash scripts/build.sh fuzz_all
  ctest --test-dir "$fuzz_dir" --output-on-failure -R '^fuzz\.' --timeout 300 || status=$?
fi
if [ "${NCCLSCOPE_ASAN_SUITE:-1}" = 1 ]; then
  NCCLSCOPE_PLAIN_CORE=$build_dir/native/libncclscope_core.a \
    NCCLSCOPE_ASAN_BUILD=${NCCLSCOPE_ASAN_BUILD:-build-asan} bash scripts/asan-tests.sh "$@" || status=$?
fi
exit $status
