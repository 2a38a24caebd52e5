#!/usr/bin/env python3
"""usage: png_colors.py IMAGE.png RRGGBB[:MIN_PIXELS]...

Decodes a PNG (8-bit RGB/RGBA, non-interlaced: what Chromium writes) with zlib alone and
checks that each colour covers at least MIN_PIXELS pixels (default 50). Prints the size and
the count of each colour; exit 1 when one is missing or the file is not such a PNG.
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    offset, idat, header = 8, b"", None
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("unsupported PNG (depth %d, colour type %d, interlace %d)" % (depth, colour, interlace))
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    pixels, previous, position = [], bytearray(stride), 0
    for _ in range(height):
        kind = raw[position]
        line = bytearray(raw[position + 1:position + 1 + stride])
        position += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + predictor) & 0xFF
        pixels.append(bytes(line))
        previous = line
    return width, height, channels, pixels


def main(argv):
    width, height, channels, rows = decode(argv[1])
    counts = {}
    for row in rows:
        for x in range(0, len(row), channels):
            key = row[x:x + 3]
            counts[key] = counts.get(key, 0) + 1
    print("  %dx%d, %d colours" % (width, height, len(counts)))
    ok = True
    for spec in argv[2:]:
        colour, _, minimum = spec.partition(":")
        wanted = bytes.fromhex(colour)
        found = counts.get(wanted, 0)
        print("  #%s: %d pixels" % (colour, found))
        ok = ok and found >= int(minimum or 50)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (ValueError, OSError, zlib.error, struct.error) as error:
        print("  %s: %s" % (sys.argv[1], error))
        sys.exit(1)
