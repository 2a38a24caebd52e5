#!/bin/bash
# Garbage written into the fixture's communicator from a live gdb session
# (`set var`, member offsets from the layout profile): after each write the
# commands still answer, flag the bad field, and re-decode by themselves (gdb's
# memory_changed event drops the cached document). Then the write is undone.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
require_comm_fixture

lib=$fake_lib
[ -r "$real_lib" ] && lib=$real_lib
start_comm_fixture "$lib"
pid=$fixture_pid
lvalue() { python3 "$src/tests/gdb/fixture_support.py" lvalue "$profile" "$fixture_comm" "$1"; }

out=${CORRUPT_OUT:-$work/corrupt.out}
gdb_run "$out" -ex "$(fixture_settings)" -p "$pid" \
  -ex "$(begin clean)" -ex 'nccl-state' -ex "$(end clean)" \
  -ex "set var $(lvalue nChannels) = 1073741824" \
  -ex "$(begin nchannels)" -ex 'nccl-state --json' -ex "$(end nchannels)" \
  -ex "$(begin nchannels-text)" -ex 'nccl-state' -ex "$(end nchannels-text)" \
  -ex "set var $(lvalue nChannels) = 2" \
  -ex "set var $(lvalue 'channels[0].ring.next') = 17" \
  -ex "$(begin ring)" -ex 'nccl-ring' -ex "$(end ring)" \
  -ex "set var $(lvalue 'channels[0].ring.userRanks') = 0x10" \
  -ex "$(begin ring-nouser)" -ex 'nccl-ring' -ex "$(end ring-nouser)" \
  -ex "$(begin ring-nouser-comm)" -ex "nccl-comm $fixture_comm" -ex "$(end ring-nouser-comm)" \
  -ex "set var $(lvalue 'channels[0].ring.next') = 0" \
  -ex "set var $(lvalue 'channels[0].ring.userRanks') = $(lvalue 'channels[1].ring.userRanks')" \
  -ex "set var $(lvalue rank) = 999" \
  -ex "$(begin rank)" -ex 'nccl-state --json' -ex "$(end rank)" \
  -ex "$(begin rank-text)" -ex 'nccl-state' -ex "$(end rank-text)" \
  -ex "set var $(lvalue rank) = 1" \
  -ex "set var $(lvalue proxyState) = 0xdead0000" \
  -ex "$(begin proxy)" -ex 'nccl-proxy' -ex "$(end proxy)" \
  -ex "$(begin proxy-json)" -ex 'nccl-proxy --json' -ex "$(end proxy-json)" \
  -ex "set var $(lvalue sharedRes) = 0xdead0000" \
  -ex "$(begin shared)" -ex 'nccl-state' -ex "$(end shared)" \
  -ex "set var $(lvalue endMagic) = 0xdeadbeef" \
  -ex "$(begin magic)" -ex 'nccl-state' -ex "$(end magic)" \
  -ex "$(begin magic-json)" -ex 'nccl-state --json' -ex "$(end magic-json)"

expect_not "$out" 'Traceback|internal error|Python Exception'
section_of "$out" clean > "$work/clean.txt"
expect "$work/clean.txt" 'rank 1/2 .* health ok$'

check_json "$out" nchannels '
c = doc["communicators"][0]
assert c["rank"] == 1 and c["seq_launched"]["AllReduce"] == 7, "still decoded"
assert any("nChannels is 1073741824" in w for w in c["warnings"]), c["warnings"]'
section_of "$out" nchannels-text > "$work/nchannels.txt"
expect "$work/nchannels.txt" '^1 communicator; [0-9]+ unreadable fields \(nccl-comm ADDR for detail\); 1 warning$'

section_of "$out" ring > "$work/ring.txt"
expect "$work/ring.txt" '^  ch0  ring: 1 -> 0 -> 1 \(ring.next is 17\)   tree: up 0 down \[\]$'
expect "$work/ring.txt" '^  ch1  ring: 1 -> 0 -> 1   tree: up 0 down \[\]$'
section_of "$out" ring-nouser > "$work/ring-nouser.txt"
# userRanks unreadable: the picture falls back to prev -> rank -> next.
expect "$work/ring-nouser.txt" '^  ch0  ring: 0 -> 1 -> 17   tree: up 0 down \[\]$'
section_of "$out" ring-nouser-comm > "$work/ring-nouser-comm.txt"
expect "$work/ring-nouser-comm.txt" '^    channels\[0\]\.ring\.user_ranks: <unreadable 0x10: '
expect "$work/ring-nouser-comm.txt" 'channel 0 ring\.next is 17, outside 0\.\.1$'

# A rank outside 0..nranks-1 fails the scanner's sanity check: rejected, and said why.
check_json "$out" rank '
assert doc["communicators"] == []
assert any("999" in r["why"] for r in doc["discovery"]["rejected"]), doc["discovery"]'
section_of "$out" rank-text > "$work/rank.txt"
expect "$work/rank.txt" "^rejected candidate $fixture_comm: .*999"

section_of "$out" proxy > "$work/proxy.txt"
expect "$work/proxy.txt" '^  proxy ops <unreadable 0xdead[0-9a-f]+: not mapped>$'
check_json "$out" proxy-json '
c = doc["communicators"][0]
assert c["proxy_ops"] is None
assert c["unavailable"]["proxy_ops"].startswith("0xdead"), c["unavailable"]'

section_of "$out" shared > "$work/shared.txt"
expect "$work/shared.txt" 'rank 1/2 .*launched AllGather=1 AllReduce=7'
expect "$work/shared.txt" '^1 communicator; [0-9]+ unreadable fields? \(nccl-comm ADDR for detail\)'

section_of "$out" magic > "$work/magic.txt"
expect "$work/magic.txt" '^0 communicators'
expect "$work/magic.txt" "^rejected candidate $fixture_comm: .*endMagic"
check_json "$out" magic-json '
assert doc["communicators"] == []
assert any("endMagic" in r["why"] for r in doc["discovery"]["rejected"]), doc["discovery"]'

state=$(process_state "$pid")
[ "$state" = S ] || fail "fixture left in state '$state' after gdb detached"
finish
