#!/usr/bin/env bash
# Every real core in corefiles/ decoded and compared with expected.json; triage verdicts.
set -uo pipefail
export XDG_CACHE_HOME=$(mktemp -d)
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
python3 "${NCCLSCOPE_SRC:?}/tests/cli/check_corpus.py" "${NCCLSCOPE_BUILD:?}/bin/ncclscope" "$NCCLSCOPE_SRC/corefiles"
