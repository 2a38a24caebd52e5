# Run inside gdb with EXE + CORE loaded and libnccl's DWARF reachable: the job a
# user does by hand: find every comm by its magic, print identity and counters.
import os
import struct

import gdb

exec(open(os.path.join(os.path.dirname(os.environ["NCCLSCOPE_BENCH_GDB_SCAN"]), "gdb_scan.py")).read()
     .split("\nscan(")[0])  # reuse writable_segments()

MAGIC = struct.pack("<Q", 0x0280028002800280)
inferior = gdb.selected_inferior()
comm_type = gdb.lookup_type("struct ncclComm")
for base, length in writable_segments(os.environ["NCCLSCOPE_BENCH_CORE"]):
    offset = 0
    while offset < length:
        found = inferior.search_memory(base + offset, length - offset, MAGIC)
        if found is None:
            break
        offset = found - base + 8
        if found % 16:
            continue
        comm = gdb.Value(found).cast(comm_type.pointer()).dereference()
        try:
            if int(comm["endMagic"]) != 0x0280028002800280:
                continue
            print("comm 0x%x hash 0x%x rank %d/%d cudaDev %d seq %s collOpCount %d asyncResult %s" % (
                found, int(comm["commHash"]), int(comm["rank"]), int(comm["nRanks"]),
                int(comm["cudaDev"]), [int(comm["seqNumber"][i]) for i in range(5)],
                int(comm["collOpCount"]), comm["asyncResult"]))
        except gdb.MemoryError:
            continue
