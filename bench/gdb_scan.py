# Run inside gdb with a core loaded: finds every 16-byte aligned NCCL_MAGIC in
# the core's writable PT_LOAD segments with Inferior.search_memory, the way a
# user would by hand, and prints {"seconds", "bytes", "matches"} as JSON.
import json
import os
import struct
import subprocess
import time

import gdb

MAGIC = struct.pack("<Q", 0x0280028002800280)


def writable_segments(core_path):
    out = subprocess.run(["readelf", "-lW", core_path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if not fields or fields[0] != "LOAD":
            continue
        vaddr, filesz, flags = int(fields[2], 16), int(fields[4], 16), " ".join(fields[6:-1])
        if filesz > 0 and "W" in flags:
            yield vaddr, filesz


def scan(core_path):
    inferior = gdb.selected_inferior()
    matches, total = [], 0
    start = time.perf_counter()
    for base, length in writable_segments(core_path):
        total += length
        offset = 0
        while offset < length:
            found = inferior.search_memory(base + offset, length - offset, MAGIC)
            if found is None:
                break
            if found % 16 == 0:
                matches.append(found)
            offset = found - base + 8
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "bytes": total, "matches": len(matches)}))


scan(os.environ["NCCLSCOPE_BENCH_CORE"])
