#!/usr/bin/env python3
"""Compares an ncclscope.numerics/1 document with the GROUND_TRUTH line nccl_numerics_hang
printed (counts taken through float conversion, independently of ncclscope's classifier).

  check_numerics.py RANK.log NUMERICS.json [--role send|recv|both]

Prints one line per buffer and exits 1 on any difference. The receive buffer of the hang
collective is compared too: the kernel never received from the skipping rank, so it holds what
the last good AllReduce wrote (the ground truth was taken just before the hang).

A sampled buffer (`sampled`: evenly spaced chunks, when a whole read would not fit the time a
device call has) cannot equal the whole buffer's counts; it is checked for consistency instead,
and its line says so and names the sample: every count at most the buffer's, none where the
buffer has none, all of the sample where the whole buffer is that class, and the largest
magnitude at most the buffer's.
"""
import json
import sys

KEYS = ("elements", "nan", "pos_inf", "neg_inf", "subnormal", "zero")


def ground_truth(path):
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("GROUND_TRUTH "):
            return json.loads(line[len("GROUND_TRUTH "):])
    raise SystemExit("%s: no GROUND_TRUTH line" % path)


def sampled_differences(got, want):
    stats, read = got["stats"], got["stats"].get("elements_read")
    diffs = [] if got.get("elements") == want["elements"] else ["elements %s != %s" % (got.get("elements"), want["elements"])]
    if not isinstance(read, int) or not 0 < read < want["elements"]:
        return diffs + ["sampled but elements_read is %r of %d" % (read, want["elements"])]
    for key in KEYS[1:]:
        count = stats.get(key)
        if not isinstance(count, int) or count > min(want[key], read):
            diffs.append("%s %r in the sample > %d in the buffer" % (key, count, want[key]))
        elif want[key] == want["elements"] and count != read:
            diffs.append("%s %d of %d sampled, but every element is" % (key, count, read))
    if (stats.get("max_abs") or 0.0) > want["max_abs"] * (1 + 1e-6):
        diffs.append("max_abs %r > %r" % (stats.get("max_abs"), want["max_abs"]))
    return diffs


def sample_text(got, want):
    sample, read = got.get("sample") or {}, got["stats"]["elements_read"]
    counts = ", ".join("%s %d (x%.1f = %.0f; buffer %d)" % (key, got["stats"][key], want["elements"] / read,
                                                          got["stats"][key] * want["elements"] / read, want[key])
                       for key in ("nan", "pos_inf", "subnormal", "zero") if want[key] or got["stats"][key])
    return "%d of %d elements in %s chunks of %s bytes%s" % (read, want["elements"], sample.get("chunks"),
                                                          sample.get("chunk_bytes"), "; " + counts if counts else "")


def main(argv):
    truth = ground_truth(argv[1])
    document = json.load(open(argv[2], encoding="utf-8"))
    roles = ("send", "recv") if len(argv) < 4 or argv[3] in ("--role=both", "both") else (argv[3].split("=")[-1],)
    buffers = {b["address"]: b for b in document.get("buffers", []) if b.get("stage") == "launched"}
    failures = 0
    for role in roles:
        want = truth[role]
        address = "0x%x" % int(want["address"], 16)
        got = buffers.get(address)
        if got is None or not isinstance(got.get("stats"), dict):
            print("rank %d %s %s: MISSING (%s)" % (truth["rank"], role, address,
                                                 got.get("unreadable") if got else "no such buffer"))
            failures += 1
            continue
        if got.get("sampled"):
            diffs = sampled_differences(got, want)
            print("rank %d %s %s %s seq %s: %s" % (truth["rank"], role, address, got.get("element_type"), got.get("seq"),
                                                 "; ".join(diffs) if diffs else "consistent (sampled: %s)" % sample_text(got, want)))
            failures += bool(diffs)
            continue
        stats = dict(got["stats"], elements=got["elements"])
        diffs = ["%s %s != %s" % (key, stats.get(key), want[key]) for key in KEYS if stats.get(key) != want[key]]
        if got["stats"].get("elements_read") != want["elements"]:
            diffs.append("elements_read %s != %s" % (got["stats"].get("elements_read"), want["elements"]))
        max_abs = got["stats"].get("max_abs") or 0.0
        if abs(max_abs - want["max_abs"]) > 1e-6 * max(abs(want["max_abs"]), 1e-300):
            diffs.append("max_abs %r != %r" % (max_abs, want["max_abs"]))
        print("rank %d %s %s %s seq %s: %s" % (truth["rank"], role, address, got.get("element_type"), got.get("seq"),
                                             "; ".join(diffs) if diffs else "equal (%s)" % json.dumps(
                                                 {k: want[k] for k in KEYS})))
        failures += bool(diffs)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
