#!/usr/bin/env python3
"""Thread stacks of one process as two builds read them: every thread's frames compared.

  compare_stacks.py OLD_STATE.json NEW_STATE.json [--label NAME]
  compare_stacks.py --eu-stack EU_STACK_OUTPUT STATE.json... (each frame's function, by thread
                    id and pc, against eu-stack's; versions "@GLIBC_2.34" dropped)

Both files are `ncclscope state --stacks --json` of the same process (a hung rank: its threads
hardly move between the two reads). A frame is (function, module, offset) or, where no symbol is
named, (module, offset). Prints one line: threads and frames compared, threads whose frames
differ (and the first difference of up to 3 of them). Exit 0 when all are equal, 1 otherwise.
Used by scripts/device-node-speed-run.sh (COMPARE=1) on the GPU machine's real processes.
"""
import json
import sys


def frames_by_tid(path):
    with open(path) as f:
        document = json.load(f)
    threads = {}
    for thread in document.get("threads") or []:
        threads[thread.get("tid")] = [(frame.get("function"), frame.get("module"), frame.get("offset"))
                                      for frame in thread.get("frames") or []]
    return threads


def eu_stack_functions(path):
    """(tid, pc) -> function name ("" when eu-stack names none) from eu-stack -p output."""
    functions, tid = {}, None
    for line in open(path, errors="replace"):
        words = line.split()
        if len(words) >= 2 and words[0] == "TID":
            tid = int(words[1].rstrip(":"))
        elif tid is not None and len(words) >= 2 and words[0].startswith("#") and words[1].startswith("0x"):
            name = " ".join(words[2:]).split("@")[0]
            functions[(tid, int(words[1], 16))] = name
    return functions


def compare_with_eu_stack(eu_path, state_paths):
    theirs = eu_stack_functions(eu_path)
    compared = equal = 0
    examples = []
    for path in state_paths:
        with open(path) as f:
            document = json.load(f)
        for thread in document.get("threads") or []:
            for frame in thread.get("frames") or []:
                pc = frame.get("pc")
                key = (thread.get("tid"), int(pc, 16) if isinstance(pc, str) else pc)
                if key not in theirs:
                    continue
                compared += 1
                ours = frame.get("function") or ""
                if ours == theirs[key]:
                    equal += 1
                elif len(examples) < 5:
                    examples.append("tid %s pc 0x%x: ncclscope %r, eu-stack %r" % (key[0], key[1], ours, theirs[key]))
    print("%d frames named as eu-stack names them, of %d at the same thread and pc%s" % (
        equal, compared, "".join("\n  " + example for example in examples)))
    return 0 if equal == compared and compared > 0 else 1


def main():
    args = sys.argv[1:]
    if args[:1] == ["--eu-stack"] and len(args) >= 3:
        return compare_with_eu_stack(args[1], args[2:])
    label = ""
    if "--label" in args:
        at = args.index("--label")
        label = args[at + 1] + ": "
        del args[at:at + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    old, new = frames_by_tid(args[0]), frames_by_tid(args[1])
    tids = sorted(set(old) & set(new))
    frames = sum(len(new[tid]) for tid in tids)
    differing, examples = 0, []
    for tid in tids:
        if old[tid] == new[tid]:
            continue
        differing += 1
        if len(examples) < 3:
            pairs = list(zip(old[tid], new[tid]))
            first = next((i for i, (a, b) in enumerate(pairs) if a != b), len(pairs))
            shown_old = old[tid][first] if first < len(old[tid]) else "end"
            shown_new = new[tid][first] if first < len(new[tid]) else "end"
            examples.append("tid %s frame #%d: %s -> %s" % (tid, first, shown_old, shown_new))
    only = len(set(old) ^ set(new))
    print("%s%d threads, %d frames compared: %d threads differ%s%s" % (
        label, len(tids), frames, differing, "; %d threads in one read only" % only if only else "",
        "".join("\n  " + example for example in examples)))
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
