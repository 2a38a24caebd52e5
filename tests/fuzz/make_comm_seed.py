#!/usr/bin/env python3
"""Writes a comm_decoders seed: memory that the fuzz target repeats with a
period P (input[1:] is the period) and that holds, with the REAL 2.28.9
layout, the comm_fixture's healthy communicator at CyclicTarget::kHeap: rank 1
of 2, two channels, a proxy op (opCount 42) and a planned AllReduce.

  make_comm_seed.py PROFILE.json OUT [--mode N] [--period P]

Every object sits at an offset chosen so that none of its written fields
collide (modulo P) with another's; unwritten bytes are zero.
"""
import argparse
import json
import random
import re
import struct

HEAP = 0x10000000
HEAP_SIZE = 5 << 18
MAGIC = 0x0280028002800280


def resolve(structs, type_name, path):
    """(offset, size) of a member path like channels[1].ring.userRanks."""
    offset, size, current = 0, 0, type_name
    for part in path.split("."):
        match = re.fullmatch(r"(\w+)(?:\[(\d+)\])?", part)
        name, index = match.group(1), match.group(2)
        member = next(m for m in structs[current]["members"] if m["name"] == name)
        element = member.get("element_size", member["size"])
        offset += member["offset"] + (int(index) * element if index is not None else 0)
        size = element if index is not None or "dims" not in member else member["size"]
        current = member.get("type", "")
    return offset, size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("profile")
    parser.add_argument("output")
    parser.add_argument("--mode", type=int, default=0, help="first byte: 1 discover, 3 force scan")
    parser.add_argument("--period", type=int, default=8191)
    args = parser.parse_args()
    structs = json.load(open(args.profile))["structs"]
    comm_size = structs["ncclComm"]["size"]

    objects = {  # name -> (type, [(path, format, value or object name)])
        "comm": ("ncclComm", [
            ("startMagic", "<Q", MAGIC), ("endMagic", "<Q", MAGIC),
            ("commHash", "<Q", 0x6db0a96d9cb7fc37), ("rank", "<i", 1), ("nRanks", "<i", 2),
            ("nChannels", "<i", 2), ("p2pnChannels", "<i", 2), ("seqNumber[2]", "<Q", 1),
            ("seqNumber[4]", "<Q", 7), ("collOpCount", "<Q", 8), ("groupNext[0]", "<Q", 1),
            ("groupNext[1]", "<Q", 1), ("abortFlag", "<Q", "abort"), ("sharedRes", "<Q", "shared"),
            ("proxyState", "<Q", "proxy"), ("planner.collSorter.head", "<Q", "task"),
            ("planner.nTasksColl", "<i", 1)]
            + [(f"channels[{c}].{field}", fmt, value) for c in (0, 1) for field, fmt, value in (
                ("ring.index", "<i", 1), ("ring.userRanks", "<Q", "ranks"), ("tree.down[0]", "<i", -1),
                ("tree.down[1]", "<i", -1), ("tree.down[2]", "<i", -1), ("id", "<i", c))]),
        "abort": (None, [("", "<I", 0)]),
        "ranks": (None, [("", "<ii", (1, 0))]),
        "shared": ("ncclSharedResources", [("p2pOpCount[1]", "<Q", 3)]),
        "proxy": ("ncclProxyState", [("progressState.active", "<Q", "args")]),
        "args": ("ncclProxyArgs", [
            ("nsubs", "<i", 1), ("opCount", "<Q", 42), ("coll", "<B", 4), ("protocol", "<B", 2),
            ("subs[0].channelId", "<i", 1), ("subs[0].nsteps", "<i", 8), ("subs[0].posted", "<Q", 4),
            ("subs[0].transmitted", "<Q", 4), ("subs[0].done", "<Q", 2)]),
        "task": ("ncclTaskColl", [("func", "<i", 4), ("count", "<Q", 1024), ("datatype", "<i", 7)]),
    }
    period = args.period
    rng = random.Random(1)
    # Pointer fields are written too: their bytes are reserved before placing.
    for _ in range(2000):
        bases = {"comm": 0}
        taken = {}
        ok = True
        for name, (type_name, fields) in objects.items():
            if name != "comm":
                size = structs[type_name]["size"] if type_name else 8
                bases[name] = rng.randrange(comm_size, HEAP_SIZE - size) & ~7
            for path, fmt, _ in fields:
                offset, _ = resolve(structs, type_name, path) if type_name else (0, 0)
                for byte in range(struct.calcsize(fmt)):
                    slot = (bases[name] + offset + byte) % period
                    if slot in taken and taken[slot] != (name, path):
                        ok = False
                    taken[slot] = (name, path)
        if ok:
            break
    else:
        raise SystemExit("no collision-free placement; try another --period")
    memory = bytearray(period)
    for name, (type_name, fields) in objects.items():
        for path, fmt, value in fields:
            offset, _ = resolve(structs, type_name, path) if type_name else (0, 0)
            if isinstance(value, str):
                value = HEAP + bases[value]
            packed = struct.pack(fmt, *value) if isinstance(value, tuple) else struct.pack(fmt, value)
            for byte, data in enumerate(packed):
                memory[(bases[name] + offset + byte) % period] = data
    open(args.output, "wb").write(bytes([args.mode]) + bytes(memory))
    print(f"{args.output}: period {period}, objects at " +
          ", ".join(f"{name} +{hex(base)}" for name, base in bases.items()))


if __name__ == "__main__":
    main()
