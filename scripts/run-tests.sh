#!/usr/bin/env bash
# Every test: native Boost.Test suites, gdb --batch extension tests, CLI
# end-to-end tests on the real cores in corefiles/. Registered with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh test
bash scripts/build.sh
build_dir=${NCCLSCOPE_BUILD_DIR:-build}
cd "$build_dir"
ctest --output-on-failure -j "${NCCLSCOPE_TEST_JOBS:-2}" --timeout 600 "$@"
