"""Compares `ncclscope py-stacks --json` (or a state document's per-thread
`python`) with the interpreter's own faulthandler.dump_traceback text of the
same threads: every thread, every frame's file, line and function must agree.

usage: check_python_stacks.py FAULTHANDLER_DUMP NCCLSCOPE_JSON
"""
import json
import re
import sys

HEADER = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-f]+) \(most recent call first\):$")
FRAME = re.compile(r'^  File "(.*)", line (\d+|\?\?\?) in (.*)$')


def faulthandler_escape(text):
    """The escaping faulthandler's _Py_DumpASCII applies to names and paths."""
    out = []
    for ch in text:
        code = ord(ch)
        if code < 0x80 and ch.isprintable():
            out.append(ch)
        elif code <= 0xff:
            out.append("\\x%02x" % code)
        elif code <= 0xffff:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    return "".join(out)


def parse_dump(path):
    """{thread_id: frames} and whether faulthandler stopped at its 100-thread cap ("...")."""
    threads, current, capped = {}, None, False
    for line in open(path, encoding="ascii", errors="replace"):
        line = line.rstrip("\n")
        if line == "...":
            capped = True
        header = HEADER.match(line)
        if header:
            current = int(header.group(1), 16)
            threads[current] = []
        elif FRAME.match(line) and current is not None:
            file, lineno, name = FRAME.match(line).groups()
            threads[current].append((file, None if lineno == "???" else int(lineno), name))
    return threads, capped


def python_threads(document):
    if document.get("schema") == "ncclscope.python/1":
        return document["threads"]
    return [t["python"] for t in document["threads"] if t.get("python")]


def main():
    expected, capped = parse_dump(sys.argv[1])
    document = json.load(open(sys.argv[2]))
    got = {int(t["thread_id"], 16): t for t in python_threads(document)}
    failures = []
    # faulthandler lists at most 100 threads: past that, each one it lists must be ours.
    missing, extra = set(expected) - set(got), set(got) - set(expected)
    if missing or (extra and not capped):
        failures.append("threads differ: only faulthandler has %s, only ncclscope has %s" %
                        (sorted(map(hex, missing)), sorted(map(hex, extra))))
    frames_checked = 0
    for thread_id, frames in expected.items():
        if thread_id not in got:
            continue
        ours = [(faulthandler_escape(f.get("file", "")), f.get("line"), faulthandler_escape(f.get("function", "")))
                for f in got[thread_id]["frames"]]
        if ours != frames:
            failures.append("thread %s:\n  faulthandler %s\n  ncclscope    %s" % (hex(thread_id), frames, ours))
        frames_checked += len(frames)
    if not expected or not any(expected.values()):
        failures.append("the faulthandler dump holds no frames")
    if failures:
        print("\n".join(failures))
        return 1
    print("ok: %d threads, %d frames agree with faulthandler%s" %
          (len(expected), frames_checked, " (its 100-thread cap; ncclscope has %d)" % len(got) if capped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
