#!/usr/bin/env python3
"""Finds PyTorch's watchdog and heartbeat-monitor objects in a live process, independently of
ncclscope (scripts/device-heartbeat-probe.sh; run as root): for each thread named
pt_nccl_watchdg / pt_nccl_heartbt, scans its stack mapping from the stack pointer
(/proc/PID/task/TID/syscall) to the mapping's end (the TCB) for a pointer to an object whose
first word is the vtable of its std::thread state (+16), then follows the state to the
Watchdog / HeartbeatMonitor and its ProcessGroupNCCL at the offsets printed by
scripts/heartbeat-offsets.cpp. Prints one JSON document; --repeat-after S reads the
heartbeat again S seconds later.

Usage: heartbeat_find.py PID OFFSETS.txt NM.txt [--repeat-after S]
  OFFSETS.txt: heartbeat-offsets output; NM.txt: `nm libtorch_cuda.so` lines (VALUE TYPE NAME).
"""
import json
import os
import struct
import sys
import time

THREADS = {"pt_nccl_watchdg": "WatchdogState", "pt_nccl_heartbt": "MonitorState"}


def parse_offsets(path):
    offsets, types, sizes = {}, {}, {}
    for line in open(path):
        f = line.split()
        if len(f) == 4 and f[0] == "OFFSET":
            offsets[f[1]] = (int(f[2]), int(f[3]))
        elif len(f) == 3 and f[0] == "TYPE":
            types[f[1]] = f[2]
        elif len(f) == 3 and f[0] == "SIZE":
            sizes[f[1]] = int(f[2])
    return offsets, types, sizes


def parse_nm(path):
    symbols = {}
    for line in open(path):
        f = line.split()
        if len(f) == 3:
            symbols[f[2]] = int(f[0], 16)
    return symbols


class Memory:
    def __init__(self, pid):
        self.pid = pid
        self.maps = []
        for line in open("/proc/%d/maps" % pid):
            f = line.split(None, 5)
            start, end = (int(x, 16) for x in f[0].split("-"))
            self.maps.append((start, end, f[1], int(f[2], 16), f[5].strip() if len(f) > 5 else ""))
        self.mem = open("/proc/%d/mem" % pid, "rb", buffering=0)

    def mapping(self, address):
        for m in self.maps:
            if m[0] <= address < m[1]:
                return m
        return None

    def read(self, address, size):
        try:
            self.mem.seek(address)
            data = self.mem.read(size)
            return data if len(data) == size else None
        except (OSError, OverflowError, ValueError):
            return None

    def u64(self, address):
        data = self.read(address, 8)
        return struct.unpack("<Q", data)[0] if data else None

    def base_of(self, suffix):
        for start, _, _, offset, path in self.maps:
            if path.endswith(suffix) and offset == 0:
                return start, path
        return None, None


def thread_sp(pid, tid):
    try:
        fields = open("/proc/%d/task/%d/syscall" % (pid, tid)).read().split()
    except OSError:
        return None
    return int(fields[-2], 16) if len(fields) >= 3 and fields[0] != "running" else None


def scan_for_state(memory, sp, vptr):
    m = memory.mapping(sp)
    if m is None:
        return None, None
    start = sp & ~7
    data = memory.read(start, m[1] - start)
    if data is None:
        return None, None
    for i in range(0, len(data) - 7, 8):
        word = struct.unpack_from("<Q", data, i)[0]
        if word and memory.mapping(word) and memory.u64(word) == vptr:
            return start + i, word
    return None, None


def field(memory, offsets, base, name):
    offset, size = offsets[name]
    data = memory.read(base + offset, size)
    if data is None:
        return None
    value = int.from_bytes(data[:8], "little")
    return {"address": hex(base + offset), "size": size, "value": value, "hex": data.hex()}


def main(argv):
    pid, offsets_path, nm_path = int(argv[0]), argv[1], argv[2]
    repeat = float(argv[4]) if len(argv) > 4 and argv[3] == "--repeat-after" else 0
    offsets, types, sizes = parse_offsets(offsets_path)
    symbols = parse_nm(nm_path)
    memory = Memory(pid)
    base, library = memory.base_of("libtorch_cuda.so")
    out = {"pid": pid, "libtorch_cuda": library, "base": hex(base or 0), "threads": []}
    sleep_symbol = "_ZN4c10d16ProcessGroupNCCL26kWatchdogThreadSleepMillisE"
    should_dump = "_ZN4c10d16ProcessGroupNCCL11shouldDump_E"
    if base is not None:
        for name in (sleep_symbol, should_dump):
            if name in symbols:
                out[name] = {"address": hex(base + symbols[name]), "value": memory.u64(base + symbols[name])}
    for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % pid)):
        comm = open("/proc/%d/task/%d/comm" % (pid, tid)).read().strip()
        if comm not in THREADS:
            continue
        kind = THREADS[comm]
        entry = {"tid": tid, "comm": comm, "state_type": types.get(kind)}
        vtable = symbols.get("_ZTV" + types.get(kind, "?"))
        sp = thread_sp(pid, tid)
        entry["sp"] = hex(sp) if sp else None
        if vtable is None or base is None or sp is None:
            entry["error"] = "no vtable symbol, library base or stack pointer"
            out["threads"].append(entry)
            continue
        vptr = base + vtable + 16
        entry["vtable"] = hex(base + vtable)
        slot, state = scan_for_state(memory, sp, vptr)
        entry["stack_slot"], entry["state"] = (hex(slot), hex(state)) if state else (None, None)
        if state:
            entry["state_words"] = [hex(memory.u64(state + 8 * i) or 0) for i in range(4)]
            obj = memory.u64(state + offsets[kind + ".object"][0])
            entry["object"] = hex(obj)
            cls = "PG::Watchdog" if kind == "WatchdogState" else "PG::HeartbeatMonitor"
            entry["fields"] = {k.split(".", 1)[1]: field(memory, offsets, obj, k) for k in offsets if k.startswith(cls + ".")}
            pg = memory.u64(obj + offsets[cls + ".pg_"][0])
            entry["pg"] = hex(pg)
            entry["pg_fields"] = {k.split(".", 1)[1]: field(memory, offsets, pg, k) for k in offsets if k.startswith("PG.")}
            back = "PG.watchdog_" if kind == "WatchdogState" else "PG.heartbeatMonitor_"
            entry["pg_points_back"] = memory.u64(pg + offsets[back][0]) == obj
            opts = memory.u64(pg + offsets["PG.options_"][0])
            if opts and "PG::Options.timeout" in offsets:
                entry["options"] = hex(opts)
                entry["timeout_ms"] = field(memory, offsets, opts, "PG::Options.timeout")
            status = memory.u64(pg + offsets["PG.pgStatus_"][0])
            if status:
                entry["pg_status"] = {k.split(".", 1)[1]: field(memory, offsets, status, k)
                                      for k in offsets if k.startswith("c10d::ProcessGroupStatus.")}
        out["threads"].append(entry)
    if repeat:
        time.sleep(repeat)
        for entry in out["threads"]:
            if entry.get("object") and entry["comm"] == "pt_nccl_watchdg":
                entry["heartbeat_again"] = field(memory, offsets, int(entry["object"], 16), "PG::Watchdog.heartbeat_")
                entry["repeat_after_s"] = repeat
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
