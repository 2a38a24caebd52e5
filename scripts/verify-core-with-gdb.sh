#!/usr/bin/env bash
# Independent check of communicator fields in a core, with gdb and libnccl's own DWARF
# (issue 3: the values expected.json is built from).  No ncclscope code is involved.
#
#   scripts/verify-core-with-gdb.sh CORE EXE LIBDIR [COMM_ADDR...]
#
# LIBDIR holds the libnccl.so.2 the process ran with (same build: its DWARF gives the
# layout).  Without COMM_ADDR, the addresses come from GROUND_TRUTH JSON next to the core
# (rankN.ground_truth.json for rankN.core).  Prints one JSON object: per address commHash,
# rank, nRanks, seqNumber[0..4] (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce),
# collOpCount, opCount, asyncResult, startMagic/endMagic, node/nNodes/localRanks, cudaDev.
# Exit 77 when gdb is missing.
set -euo pipefail
core=${1:?CORE}; exe=${2:?EXE}; libdir=${3:?LIBDIR}; shift 3
command -v gdb >/dev/null || { echo "gdb not found" >&2; exit 77; }
addresses=("$@")
if [ ${#addresses[@]} -eq 0 ]; then
  truth=${core%.core}.ground_truth.json
  [ -f "$truth" ] || { echo "no COMM_ADDR given and no $truth" >&2; exit 2; }
  mapfile -t addresses < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.strip():
        for comm in json.loads(line)["comms"]:
            if str(comm.get("address", "")).startswith("0x"):
                print(comm["address"])' "$truth")
fi
[ ${#addresses[@]} -gt 0 ] || { echo "no communicator address to check" >&2; exit 2; }

script=$(mktemp --suffix=.py)
trap 'rm -f "$script"' EXIT
cat > "$script" <<'PY'
import json
import gdb

FIELDS_INT = ["rank", "nRanks", "cudaDev", "node", "nNodes", "localRanks", "collOpCount", "opCount"]

def read_comm(address):
    comm = gdb.parse_and_eval("*(struct ncclComm *)%s" % address)
    out = {"address": address}
    for name in FIELDS_INT:
        out[name] = int(comm[name])
    for name in ["commHash", "startMagic", "endMagic"]:
        out[name] = "0x%016x" % (int(comm[name]) & 0xFFFFFFFFFFFFFFFF)
    seq = comm["seqNumber"]
    out["seqNumber"] = [int(seq[i]) for i in range(seq.type.range()[1] + 1)]
    out["asyncResult"] = int(comm["asyncResult"])
    out["asyncResultName"] = str(comm["asyncResult"])
    return out

results = []
for address in ADDRESSES:
    try:
        results.append(read_comm(address))
    except gdb.error as error:  # e.g. freed or unmapped: report, keep going
        results.append({"address": address, "error": str(error)})
nccl = [o.filename for o in gdb.objfiles() if "libnccl" in o.filename]
print("VERIFY_JSON " + json.dumps({"core": CORE, "libnccl": nccl, "comms": results}))
PY
python3 - "$script" "$core" "${addresses[@]}" <<'PY'
import json, sys
path, core, addrs = sys.argv[1], sys.argv[2], sys.argv[3:]
body = open(path).read()
open(path, "w").write("ADDRESSES = %s\nCORE = %s\n" % (json.dumps(addrs), json.dumps(core)) + body)
PY
# sysroot points nowhere so gdb takes no local system library for the device's; libnccl comes
# from LIBDIR by file name through solib-search-path.
gdb -nx -batch -ex "set sysroot /nonexistent-sysroot" -ex "set solib-search-path $libdir" \
    -ex "set debuginfod enabled off" -ex "file $exe" -ex "core-file $core" \
    -ex "source $script" 2>/dev/null | sed -n 's/^VERIFY_JSON //p'
