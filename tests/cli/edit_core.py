#!/usr/bin/env python3
"""Writes values into a copy of a core's memory, by struct field, for damage tests.

usage: edit_core.py IN OUT PROFILE ADDRESS FIELD=VALUE...
  ADDRESS: the struct ncclComm's address in the core (hex);
  FIELD:   a member path of struct ncclComm in the layout profile: "endMagic",
           "opCount", "seqNumber[4]", "channels[0].ring.userRanks->0" ("->N" follows a
           pointer to its N-th element); VALUE: an integer (negative: two's complement).
Offsets come from the profile, never from this file. Prints "FIELD at 0xADDR".
"""
import json
import re
import shutil
import struct
import sys


def load_segments(path):
    with open(path, "rb") as core:
        header = core.read(64)
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        segments = []
        for index in range(phnum):
            core.seek(phoff + index * phentsize)
            p_type, _flags, offset, vaddr, _paddr, filesz = struct.unpack("<IIQQQQ", core.read(40))
            if p_type == 1 and filesz:  # PT_LOAD with bytes in the file
                segments.append((vaddr, filesz, offset))
    return segments


def file_offset(segments, address, size):
    for vaddr, filesz, offset in segments:
        if vaddr <= address and address + size <= vaddr + filesz:
            return offset + address - vaddr
    raise SystemExit("edit_core: 0x%x (%d bytes) is not saved in the core" % (address, size))


def resolve(profile, address, path, read):
    """(address, size) of the member path, following "->N" through pointers."""
    struct_name, size = "ncclComm", 0
    for part in path.split("."):
        match = re.fullmatch(r"(\w+)(?:\[(\d+)\])?(?:->(\d+))?", part)
        name, index, pointee = match.groups()
        member = {m["name"]: m for m in profile["structs"][struct_name]["members"]}[name]
        address, size = address + member["offset"], member["size"]
        if index is not None:
            address, size = address + int(index) * member["element_size"], member["element_size"]
        if pointee is not None:
            element = 4 if member["type"] in ("int", "unsigned int") else 8
            pointer, = struct.unpack("<Q", read(address, 8))
            address, size = pointer + int(pointee) * element, element
        struct_name = member["type"]
    return address, size


def main():
    source, target, profile_path, comm = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 16)
    shutil.copyfile(source, target)
    profile = json.load(open(profile_path))
    segments = load_segments(target)
    with open(target, "r+b") as core:
        def read(address, size):
            core.seek(file_offset(segments, address, size))
            return core.read(size)
        for edit in sys.argv[5:]:
            path, value = edit.split("=")
            address, size = resolve(profile, comm, path, read)
            core.seek(file_offset(segments, address, size))
            core.write((int(value, 0) % (1 << (8 * size))).to_bytes(size, "little"))
            print("%s at 0x%x" % (path, address))


if __name__ == "__main__":
    main()
