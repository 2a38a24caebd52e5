#!/usr/bin/env python3
"""Page-level delta of a core file against one or more base cores (transport only).

Two ranks of one program dump cores that share most of their pages (driver copies of the
same cubins, the same libraries' data), but xz's window cannot see across two 500 MB files.
This stores each 4 KiB page of TARGET as a reference to an identical base page, a zero
page, or the literal bytes; xz then squeezes the literals.  The device capture uses it so
that every rank core of a run fits in the little that comes back from the GPU machine.

  core_delta.py encode OUT.delta TARGET BASE [BASE...]
  core_delta.py decode OUT.core DELTA BASE [BASE...]   (checks the target's sha256)
"""
import hashlib
import json
import struct
import sys

MAGIC = b"NCCLSCOPE-CORE-DELTA-1\n"
PAGE = 4096
TAG_LITERAL, TAG_REF, TAG_ZERO = 0, 1, 2
ZERO_PAGE = bytes(PAGE)


def sha256_of(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def index_pages(bases):
    """Map page bytes -> (base number, page number); the first occurrence wins."""
    index = {}
    for base_no, data in enumerate(bases):
        for page_no in range(len(data) // PAGE):
            page = data[page_no * PAGE:(page_no + 1) * PAGE]
            index.setdefault(page, (base_no, page_no))
    return index


def encode(out_path, target_path, base_paths):
    target = read(target_path)
    bases = [read(p) for p in base_paths]
    index = index_pages(bases)
    header = {"page": PAGE, "target_size": len(target), "target_sha256": sha256_of(target),
              "bases": [{"name": p.rsplit("/", 1)[-1], "size": len(b), "sha256": sha256_of(b)}
                        for p, b in zip(base_paths, bases)]}
    counts = {"literal": 0, "ref": 0, "zero": 0}
    with open(out_path, "wb") as out:
        out.write(MAGIC + json.dumps(header).encode() + b"\n")
        for offset in range(0, len(target), PAGE):
            page = target[offset:offset + PAGE]
            if page == ZERO_PAGE:
                out.write(bytes([TAG_ZERO]))
                counts["zero"] += 1
            elif len(page) == PAGE and page in index:
                base_no, page_no = index[page]
                out.write(struct.pack("<BBI", TAG_REF, base_no, page_no))
                counts["ref"] += 1
            else:
                out.write(bytes([TAG_LITERAL]) + page)
                counts["literal"] += 1
    print(json.dumps({"delta": out_path, "target": target_path, **counts}))


def decode(out_path, delta_path, base_paths):
    data = read(delta_path)
    if not data.startswith(MAGIC):
        sys.exit("%s: not a core delta" % delta_path)
    header_end = data.index(b"\n", len(MAGIC))
    header = json.loads(data[len(MAGIC):header_end])
    bases = [read(p) for p in base_paths]
    for want, have in zip(header["bases"], bases):
        if sha256_of(have) != want["sha256"]:
            sys.exit("base %s does not match the delta's base" % want["name"])
    pos, size, pieces, written = header_end + 1, header["target_size"], [], 0
    while written < size:
        tag = data[pos]
        length = min(PAGE, size - written)
        if tag == TAG_ZERO:
            pieces.append(ZERO_PAGE[:length])
            pos += 1
        elif tag == TAG_REF:
            _, base_no, page_no = struct.unpack_from("<BBI", data, pos)
            pieces.append(bases[base_no][page_no * PAGE:(page_no + 1) * PAGE])
            pos += 6
        else:
            pieces.append(data[pos + 1:pos + 1 + length])
            pos += 1 + length
        written += length
    target = b"".join(pieces)
    if sha256_of(target) != header["target_sha256"]:
        sys.exit("decoded core does not match the recorded sha256")
    with open(out_path, "wb") as f:
        f.write(target)
    print(json.dumps({"core": out_path, "size": len(target), "sha256": header["target_sha256"]}))


def main(argv):
    if len(argv) < 4 or argv[0] not in ("encode", "decode"):
        sys.exit(__doc__)
    (encode if argv[0] == "encode" else decode)(argv[1], argv[2], argv[3:])


if __name__ == "__main__":
    main(sys.argv[1:])
