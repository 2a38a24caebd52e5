# Shared start of the corpus CLI tests (sourced, not run): BUILD, SRC and NSC (the CLI) from
# CTest's environment; skips (77) when the CLI is not built or python3 or xz is missing.
set -u
BUILD=${NCCLSCOPE_BUILD:?}
SRC=${NCCLSCOPE_SRC:?}
NSC=$BUILD/bin/ncclscope
[ -x "$NSC" ] || { echo "SKIP: $NSC not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
command -v xz >/dev/null || { echo "SKIP: xz missing"; exit 77; }
