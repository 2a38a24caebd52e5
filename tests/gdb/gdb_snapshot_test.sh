#!/bin/bash
# The gdb glue on a hand-written ncclscope.state/1 document (`set ncclscope
# snapshot FILE`): every command in text and --json, help, one-line errors,
# `set ncclscope debug on`. Needs gdb, not the native library.
source "$(dirname "$0")/lib.sh"
require_gdb
data=$src/tests/gdb/data/state_two_comms.json
out=$work/snapshot.out

gdb_run "$out" -ex "set ncclscope snapshot $data" \
  -ex "$(begin state)" -ex 'nccl-state' -ex "$(end state)" \
  -ex "$(begin state-json)" -ex 'nccl-state --json' -ex "$(end state-json)" \
  -ex "$(begin comm)" -ex 'nccl-comm #1' -ex "$(end comm)" \
  -ex "$(begin comm-json)" -ex 'nccl-comm 0x6db0a96d9cb7fc37 --json' -ex "$(end comm-json)" \
  -ex "$(begin ring)" -ex 'nccl-ring 0x6db0a96d9cb7fc37' -ex "$(end ring)" \
  -ex "$(begin ring-json)" -ex 'nccl-ring --json' -ex "$(end ring-json)" \
  -ex "$(begin proxy-json)" -ex 'nccl-proxy --json' -ex "$(end proxy-json)" \
  -ex "$(begin threads)" -ex 'nccl-threads' -ex "$(end threads)" \
  -ex "$(begin errors)" -ex 'nccl-comm 0x1234' -ex 'nccl-ring --bogus' -ex 'nccl-comm' \
  -ex 'p $nccl_comm(5)' -ex 'p $nccl_comm(0)' -ex 'nccl-kernels' -ex "$(end errors)" \
  -ex "$(begin help)" -ex 'help nccl-proxy' -ex 'nccl-threads --help' -ex "$(end help)"

section_of "$out" state > "$work/state.txt"
expect "$work/state.txt" '^#0  0x55d0c8a1b2c0  hash 0x6db0a96d9cb7fc37  rank 0/2  dev 0 \(0000:19:00.0\)  launched AllGather=1 AllReduce=7 +health ok$'
expect "$work/state.txt" '^#1  0x55d0c8c00000 .*health async_result=ncclSystemError, abort_flag <unreadable 0x7f3a30000040: not saved in core>$'
expect "$work/state.txt" '^2 communicators; 6 unreadable fields'
check_json "$out" state-json '
assert doc["schema"] == "ncclscope.state/1"
assert [c["comm_hash"] for c in doc["communicators"]] == ["0x6db0a96d9cb7fc37", "0x1122334455667788"]
assert doc["communicators"][0]["seq_launched"]["AllReduce"] == 7'
section_of "$out" comm > "$work/comm.txt"
expect "$work/comm.txt" '^    ch1  ring: 17 -> 1 -> <unreadable 0x55d0c8c02008: short read>   tree: up 0 down \[\?\]$'
expect "$work/comm.txt" '^    proxy ops <unreadable: proxyState is NULL>$'
check_json "$out" comm-json '
assert isinstance(doc, list) and len(doc) == 1
assert doc[0]["address"] == "0x55d0c8a1b2c0" and doc[0]["proxy_ops"][0]["subs"][1]["transmitted"] == 2'
section_of "$out" ring > "$work/ring.txt"
expect "$work/ring.txt" '^  ch0-1  ring: 0 -> 1 -> 0   tree: up -1 down \[1\]$'
check_json "$out" ring-json '
comms = doc["communicators"]
assert comms[1]["unavailable"]["channels[1].ring.next"] == "0x55d0c8c02008: short read"
assert comms[1]["channels"][0]["ring"]["user_ranks"] == [1, 2, 3, 0]'
check_json "$out" proxy-json '
assert doc["communicators"][0]["proxy_ops"][0]["op_count"] == 3
assert doc["communicators"][1]["proxy_ops"] is None'
section_of "$out" threads > "$work/threads.txt"
# No process: the threads come from the document; the evil name is escaped.
expect "$work/threads.txt" '^thread 4250 "evil\\x1b\[2Jname" \[S\] blocked in nccl-proxy-service$'
expect "$work/threads.txt" '^2 threads \(from document\)$'
expect_not "$out" $'\x1b' "a raw escape character reached the terminal"
section_of "$out" errors > "$work/errors.txt"
expect "$work/errors.txt" '^nccl-comm: no communicator has address or hash 0x1234 \(2 known; nccl-state lists them\)$'
expect "$work/errors.txt" '^nccl-ring: unrecognized arguments: --bogus \(try nccl-ring --help\)$'
expect "$work/errors.txt" '^nccl-comm: the following arguments are required: ADDR\|HASH\|#INDEX'
expect "$work/errors.txt" '^\$nccl_comm: no communicator 5 \(2 known; nccl-state lists them\)$'
expect "$work/errors.txt" '^\$nccl_comm: no DWARF for struct ncclComm in this session'
expect "$work/errors.txt" '^nccl-kernels: needs cuda-gdb \(GPU kernels are not visible to gdb\)$'
expect_not "$work/errors.txt" 'Traceback|Python Exception'
section_of "$out" help > "$work/help.txt"
expect "$work/help.txt" '^List the proxy operations in flight'
expect "$work/help.txt" '^usage: nccl-threads \[-h\] \[--json\] \[--frames N\]'

# An internal error is one line by default, a traceback with `set ncclscope debug on`
# (a snapshot can no longer cause one: the session's loader is made to fail here).
gdb_run "$work/debug.out" -ex "set ncclscope snapshot $data" \
  -ex 'python import ncclscope.gdb_commands as c; c.SESSION.document = lambda refresh=False: {}["boom"]' \
  -ex 'nccl-state' -ex 'set ncclscope debug on' -ex 'show ncclscope debug' -ex 'nccl-state --refresh'
expect "$work/debug.out" '^nccl-state: internal error: KeyError: .*\(set ncclscope debug on for a traceback\)$'
expect "$work/debug.out" '^ncclscope debug is on\.$'
expect "$work/debug.out" '^Traceback \(most recent call last\):'
expect "$work/debug.out" 'nccl-state: internal error: KeyError: [^(]*$'

# Malformed snapshots (issue 14): every command, and $nccl_comm, answers the same one line
# naming the file and the field; an unknown schema version is refused.
python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
good = {"schema": "ncclscope.state/1", "target": {"kind": "snapshot"}, "communicators": [
    {"address": "0x10", "comm_hash": "0x1", "rank": 0, "nranks": 2, "channels": [{"id": 0, "ring": {"prev": 1}}],
     "proxy_ops": [{"op_count": 1, "subs": [{"peer": 1}]}]}], "threads": [{"tid": 1, "frames": []}]}
def variant(name, change):
    doc = json.loads(json.dumps(good)); change(doc)
    with open(f"{work}/bad-{name}.json", "w") as out: json.dump(doc, out)
variant("schema99", lambda d: d.update(schema="ncclscope.state/99"))
variant("comms", lambda d: d.update(communicators=5))
variant("comm", lambda d: d["communicators"].__setitem__(0, "x"))
variant("channels", lambda d: d["communicators"][0].update(channels={"id": 0}))
variant("userranks", lambda d: d["communicators"][0]["channels"][0]["ring"].update(user_ranks=["a"]))
variant("subs", lambda d: d["communicators"][0]["proxy_ops"][0].update(subs=7))
variant("address", lambda d: d["communicators"][0].update(address=16))
variant("unavailable", lambda d: d["communicators"][0].update(unavailable=[1]))
variant("frames", lambda d: d["threads"][0].update(frames=[3]))
variant("target", lambda d: d.update(target="core"))
with open(f"{work}/bad-deep.json", "w") as out:  # deeper than Python's json reader goes
    out.write('{"schema": "ncclscope.state/1", "recorder": ' + "[" * 100000 + "]" * 100000 + "}")
PY
declare -A field_of=([schema99]='schema: "ncclscope.state/99" is not ncclscope.state/1' [comms]='communicators: expected a list'
  [comm]='communicators\[0\]: expected an object' [channels]='communicators\[0\].channels: expected a list'
  [userranks]='communicators\[0\].channels\[0\].ring.user_ranks\[0\]: expected an integer'
  [subs]='communicators\[0\].proxy_ops\[0\].subs: expected a list' [address]='communicators\[0\].address: expected a string'
  [unavailable]='communicators\[0\].unavailable: expected an object' [frames]='threads\[0\].frames\[0\]: expected an object'
  [target]='target: expected an object' [deep]='nested too deeply')
for name in "${!field_of[@]}"; do
  file=$work/bad-$name.json
  gdb_run "$work/bad-$name.out" -ex "set ncclscope snapshot $file" -ex 'nccl-state' -ex 'nccl-state --json' \
    -ex 'nccl-comm #0' -ex 'nccl-ring' -ex 'nccl-proxy --json' -ex 'nccl-threads' -ex 'p $nccl_comm(0)'
  lines=$(grep -c "^ncclscope: snapshot $file: ${field_of[$name]}" "$work/bad-$name.out")
  [ "$lines" = 7 ] || fail "bad-$name: $lines of 7 commands named the file and field (${field_of[$name]})"
  expect_not "$work/bad-$name.out" 'Traceback|Python Exception|internal error|Error occurred in Python'
done

# Special files (issue 37): refused in one line naming the file, never read (a FIFO blocked
# gdb forever; /dev/zero grew it to 23.7 GB before the OOM killer came).
mkfifo "$work/fifo"
declare -A kind_of=(["$work/fifo"]='a FIFO' [/dev/zero]='a character device')
for special in "$work/fifo" /dev/zero; do
  gdb_run "$work/special.out" -ex "set ncclscope snapshot $special" -ex 'nccl-state' -ex 'nccl-state --json'
  lines=$(grep -c "^ncclscope: snapshot $special: not a regular file (${kind_of[$special]})$" "$work/special.out")
  [ "$lines" = 2 ] || fail "snapshot $special: $lines of 2 commands refused it in one line"
  expect_not "$work/special.out" 'Traceback|Python Exception|internal error|Error occurred in Python'
done

# No target and no snapshot: a one-line user error.
gdb_run "$work/none.out" -ex 'nccl-state'
expect "$work/none.out" '^ncclscope: no process or core: attach \(gdb -p PID\), open a core'
finish
