#!/usr/bin/env bash
# scripts/nccl_types_only.py keeps preprocessor lines and top-level type definitions of a .cc
# (the structs a header-built profile needs) and drops functions and variables.
set -uo pipefail
src=${NCCLSCOPE_SRC:?}
out=$(python3 "$src/scripts/nccl_types_only.py" /dev/stdin <<'CC'
#include "comm.h"
#define LONG_MACRO(x) \
  do { x; } while (0)
struct p2pShm { int a; struct { int b; } inner; };
enum p2pType { P2P_DIRECT, P2P_IPC };
static struct p2pShm* lookup(int key) {
  struct p2pShm local = {};
  if (key) { return nullptr; }
  return nullptr;
}
struct Base : public Other {
  int c;
};
int counter = 0;
typedef struct { int d; } anonymous_t;
CC
)
expected='#include "comm.h"
#define LONG_MACRO(x) \
  do { x; } while (0)
struct p2pShm { int a; struct { int b; } inner; };
enum p2pType { P2P_DIRECT, P2P_IPC };
struct Base : public Other {
  int c;
};
typedef struct { int d; } anonymous_t;'
if [ "$out" = "$expected" ]; then echo "ok   types kept, functions dropped"; exit 0; fi
diff <(echo "$expected") <(echo "$out"); echo "FAIL"; exit 1
