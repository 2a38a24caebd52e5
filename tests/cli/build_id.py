"""Prints the GNU build-id of an ELF file (hex), using only the standard library."""
import struct
import sys


def build_id(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + i * shentsize + 4)
        if sh_type != 7:  # SHT_NOTE
            continue
        offset, size = struct.unpack_from("<QQ", data, shoff + i * shentsize + 0x18)
        pos = offset
        while pos + 12 <= offset + size:
            namesz, descsz, note_type = struct.unpack_from("<III", data, pos)
            name_end = pos + 12 + ((namesz + 3) & ~3)
            if note_type == 3 and data[pos + 12:pos + 12 + namesz] == b"GNU\0":
                return data[name_end:name_end + descsz].hex()
            pos = name_end + ((descsz + 3) & ~3)
    raise SystemExit(f"{path}: no build-id")


print(build_id(sys.argv[1]))
