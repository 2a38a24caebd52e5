#!/usr/bin/env python3
"""Cut a C++ source file to its preprocessor lines and top-level type definitions.

Used by scripts/nccl-layout-from-headers.sh on an NCCL .cc that does not compile against the
CUDA headers at hand: the structs it defines stay the same, the functions are dropped.
Usage: nccl_types_only.py FILE.cc > TYPES.cc
"""
import re
import sys

TYPE_START = re.compile(r"\s*(typedef\s+)?(struct|union|enum)\s+\w*\s*(:[^;(]*)?(\{.*)?$")


def types_only(lines):
    out, depth, keeping, continued = [], 0, False, False
    for line in lines:
        code = re.sub(r"//.*", "", line).rstrip()
        if depth == 0 and not keeping:
            if continued or code.lstrip().startswith("#"):
                out.append(line)
                continued = code.endswith("\\")
                continue
            keeping = TYPE_START.match(code) is not None
        if keeping:
            out.append(line)
        depth += code.count("{") - code.count("}")
        if keeping and depth == 0 and code.endswith(";"):
            keeping = False
    return "".join(out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", errors="replace") as source:
        sys.stdout.write(types_only(source))
