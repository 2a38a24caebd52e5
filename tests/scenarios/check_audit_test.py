#!/usr/bin/env python3
"""check_audit.py on the real audit documents in corefiles/gpu-audit (H100 2026-12-05; abort-stuck and
register-leak H200 2026-12-06): each case passes on its own run and fails on another case's run, a
rule id missing from the audit's rule table fails, and a registration range is found or not in a
state snapshot. Exit 77 without them."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_AUDIT = os.path.join(HERE, "..", "..", "corefiles", "gpu-audit")
CASES = ["revoke-no-destroy", "destroy-stuck", "peer-exit", "register-unaligned", "abort-stuck", "register-leak"]


def run(case, audit, *extra):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "check_audit.py"), case, audit, *extra],
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout.strip()


def truth(case, kind="live"):
    base = os.path.join(GPU_AUDIT, case, "truth", case)
    return base + "." + kind + ".audit.json", ["--truth", base + "-rank0.log", "--truth", base + "-rank1.log"]


def expect(code, got, what):
    if got[0] != code:
        sys.exit("FAIL %s: exit %d, wanted %d: %s" % (what, got[0], code, got[1]))


def registration_state(tmp, begin, end):
    path = os.path.join(tmp, "rank1.state.json")
    json.dump({"communicators": [{"rank": 1, "cuda": {"registrations": {"buffers": [
        {"begin": hex(begin), "end": hex(end)}]}}}]}, open(path, "w"))
    return path


def main():
    if not all(os.path.exists(truth(case)[0]) for case in CASES):
        print("skipped: corefiles/gpu-audit truth documents not present")
        return 77
    for case in CASES:
        for kind in ("live", "cores"):
            audit, truths = truth(case, kind)
            expect(0, run(case, audit, *truths), "%s on its own %s run" % (case, kind))
        other = CASES[(CASES.index(case) + 1) % len(CASES)]
        expect(1, run(case, truth(other)[0]), "%s on %s's run" % (case, other))
    with tempfile.TemporaryDirectory() as tmp:
        audit = json.load(open(truth("destroy-stuck")[0]))
        audit["rules"] = [r for r in audit["rules"] if r["id"] != "seq-spread"]
        renamed = os.path.join(tmp, "audit.json")
        json.dump(audit, open(renamed, "w"))
        got = run("destroy-stuck", renamed)
        expect(1, got, "a rule id the audit does not list")
        if "not in the audit's rule table: seq-spread" not in got[1]:
            sys.exit("FAIL unknown rule id not named: " + got[1])
        audit_path, truths = truth("register-unaligned")
        line = [l for l in open(truths[3]) if l.startswith("GROUND_TRUTH ")][0]
        record = json.loads(line[len("GROUND_TRUTH "):])
        begin, end = int(record["expected_begin"], 16), int(record["expected_end"], 16)
        good = registration_state(tmp, begin, end)
        expect(0, run("register-unaligned", audit_path, *truths, "--state", good), "registration listed")
        shifted = registration_state(tmp, begin + 100, end)
        expect(1, run("register-unaligned", audit_path, *truths, "--state", shifted), "registration off by 100")
    print("check_audit: %d cases pass on their runs and fail on others; rule table and registration checks fail when wrong"
          % len(CASES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
