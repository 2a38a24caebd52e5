#!/usr/bin/env python3
"""Helpers for the gdb fixture tests (no gdb needed).

  fixture_support.py build-id LIB
      the GNU build-id of an ELF file (hex)
  fixture_support.py fake-profile PROFILE LIB OUTDIR
      copies a layout profile under LIB's build-id into OUTDIR (for the
      stand-in libnccl, which has no DWARF); prints the new file's path
  fixture_support.py lvalue PROFILE BASE PATH
      a gdb lvalue for member PATH ("channels[0].ring.next") of the struct
      ncclComm at gdb expression BASE, with the offset and type taken from the
      profile: offsets are never written into the tests by hand
"""
import json
import os
import re
import struct
import sys

C_TYPES = {("signed", 1): "signed char", ("signed", 2): "short", ("signed", 4): "int",
           ("signed", 8): "long", ("unsigned", 1): "unsigned char", ("unsigned", 2): "unsigned short",
           ("unsigned", 4): "unsigned int", ("unsigned", 8): "unsigned long",
           ("pointer", 8): "unsigned long", ("enum", 4): "int", ("bool", 1): "unsigned char"}


def build_id(path):
    """The NT_GNU_BUILD_ID note of a 64-bit little-endian ELF (from its section headers)."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit("%s: not a 64-bit ELF" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for index in range(shnum):
        base = shoff + index * shentsize
        sh_type, = struct.unpack_from("<I", data, base + 4)
        offset, size = struct.unpack_from("<QQ", data, base + 0x18)
        if sh_type != 7:  # SHT_NOTE
            continue
        position = offset
        while position + 12 <= offset + size:
            namesz, descsz, note_type = struct.unpack_from("<III", data, position)
            name_start = position + 12
            desc_start = name_start + ((namesz + 3) & ~3)
            if note_type == 3 and data[name_start:name_start + namesz].rstrip(b"\0") == b"GNU":
                return data[desc_start:desc_start + descsz].hex()
            position = desc_start + ((descsz + 3) & ~3)
    raise SystemExit("%s: no GNU build-id note" % path)


def fake_profile(profile_path, library, out_dir):
    with open(profile_path) as handle:
        profile = json.load(handle)
    identifier = build_id(library)
    profile["build_id"] = identifier
    profile["symbols"] = {}  # the stand-in has no ncclComms registry
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, identifier + ".json")
    with open(out, "w") as handle:
        json.dump(profile, handle)
    return out


def member_lvalue(profile_path, base, path):
    with open(profile_path) as handle:
        structs = json.load(handle)["structs"]
    struct_name, offset, member = "ncclComm", 0, None
    for part in path.split("."):
        match = re.fullmatch(r"(\w+)((?:\[\d+\])*)", part)
        if not match:
            raise SystemExit("bad member path %s" % path)
        name, indexes = match.groups()
        members = {m["name"]: m for m in structs[struct_name]["members"]}
        if name not in members:
            raise SystemExit("struct %s has no member %s" % (struct_name, name))
        member = members[name]
        offset += member["offset"]
        for index in re.findall(r"\[(\d+)\]", indexes):
            offset += int(index) * member.get("element_size", member["size"])
        struct_name = member.get("type")
    size = member.get("element_size", member["size"])
    c_type = C_TYPES.get((member["kind"], size))
    if c_type is None:
        raise SystemExit("no C type for %s (%s, %d bytes)" % (path, member["kind"], size))
    return "*(%s *)((char *)(%s) + %d)" % (c_type, base, offset)


def main(argv):
    if len(argv) == 3 and argv[1] == "build-id":
        print(build_id(argv[2]))
    elif len(argv) == 5 and argv[1] == "fake-profile":
        print(fake_profile(argv[2], argv[3], argv[4]))
    elif len(argv) == 5 and argv[1] == "lvalue":
        print(member_lvalue(argv[2], argv[3], argv[4]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
