#!/usr/bin/env python3
"""Shrinks an ELF core into a small fuzz seed: every program header stays (so
addresses stay "mapped"), but only PT_LOADs chosen here keep their bytes; the
rest get p_filesz 0 ("not saved in core"), like `ncclscope slice` does.

  shrink_core.py IN OUT [--max-segment BYTES] [--writable-only] [--keep START-END ...]

A segment keeps its bytes when it is at most --max-segment bytes (and writable,
with --writable-only), or when it overlaps a --keep range (hex addresses).
"""
import argparse
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
PF_W = 2


def parse_range(text):
    start, end = text.split("-")
    return int(start, 16), int(end, 16)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--max-segment", type=lambda text: int(text, 0), default=0x2000)
    parser.add_argument("--writable-only", action="store_true")
    parser.add_argument("--keep", action="append", default=[], type=parse_range)
    args = parser.parse_args()

    data = open(args.input, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit("not a 64-bit ELF file")
    header = bytearray(data[:64])
    phoff, = struct.unpack_from("<Q", header, 32)
    phentsize, phnum = struct.unpack_from("<HH", header, 54)
    headers = [list(struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)) for i in range(phnum)]

    def keeps(entry):
        p_type, flags, offset, vaddr, _, filesz, memsz, _ = entry
        if p_type == PT_NOTE:
            return True
        if p_type != PT_LOAD or filesz == 0:
            return False
        if any(vaddr < end and start < vaddr + memsz for start, end in args.keep):
            return True
        return filesz <= args.max_segment and (not args.writable_only or flags & PF_W)

    body = bytearray()
    body_start = phoff + phnum * phentsize
    for entry in headers:
        offset, filesz = entry[2], entry[5]
        if keeps(entry):
            while (body_start + len(body)) % 16:
                body.append(0)
            entry[2] = body_start + len(body)
            body += data[offset:offset + filesz]
        elif entry[0] == PT_LOAD:
            entry[2], entry[5] = 0, 0
    out = bytearray(header) + bytearray(data[64:phoff])
    for entry in headers:
        out += struct.pack("<IIQQQQQQ", *entry).ljust(phentsize, b"\0")
    out += body
    open(args.output, "wb").write(bytes(out))
    print(f"{args.input}: {len(data)} bytes -> {args.output}: {len(out)} bytes")


if __name__ == "__main__":
    main()
