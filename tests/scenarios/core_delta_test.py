#!/usr/bin/env python3
"""Round trip of core_delta.py on synthetic pages: exact page classes, exact bytes back."""
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = 4096


def run(*args):
    out = subprocess.run([sys.executable, os.path.join(HERE, "core_delta.py"), *args],
                         check=True, capture_output=True, text=True).stdout
    return out


def main():
    rng = random.Random(7)
    pages = [bytes(rng.getrandbits(8) for _ in range(PAGE)) for _ in range(6)]
    base = b"".join(pages)
    # target: 2 base pages (moved), 1 zero page, 1 new page, a short tail of 100 bytes
    new_page = bytes(rng.getrandbits(8) for _ in range(PAGE))
    target = pages[4] + bytes(PAGE) + pages[1] + new_page + b"x" * 100
    with tempfile.TemporaryDirectory() as tmp:
        paths = {name: os.path.join(tmp, name) for name in ("base", "target", "delta", "back")}
        open(paths["base"], "wb").write(base)
        open(paths["target"], "wb").write(target)
        summary = run("encode", paths["delta"], paths["target"], paths["base"])
        assert '"literal": 2, "ref": 2, "zero": 1' in summary, summary
        run("decode", paths["back"], paths["delta"], paths["base"])
        assert open(paths["back"], "rb").read() == target
        # a different base must be refused, not silently produce another core
        open(paths["base"], "wb").write(base[::-1])
        result = subprocess.run([sys.executable, os.path.join(HERE, "core_delta.py"), "decode",
                                 paths["back"], paths["delta"], paths["base"]], capture_output=True)
        assert result.returncode != 0
    print("core_delta round trip OK")


if __name__ == "__main__":
    main()
