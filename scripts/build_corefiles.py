#!/usr/bin/env python3
"""Builds corefiles/<scenario>/ from captured rank cores (maintainer tool, issue 3).

For each scenario: the sliced, xz-compressed rank cores (sliced here with `ncclscope slice`
when given full cores, or taken as sliced on the GPU machine), and expected.json: what the
scenario program knew (ground truth: comm addresses, launched counts, culprit) joined with
the fields gdb read from the same core through libnccl's DWARF (scripts/verify-core-with-gdb.sh),
so every expected value was confirmed independently of ncclscope.

  scripts/build_corefiles.py SCENARIO SOURCE_DIR EXE [--sliced] [--slice-exe EXE] [--note TEXT]

EXE is the symbol file gdb reads the comm type from: the program, or libnccl.so.2 itself.

SOURCE_DIR holds rank{0,1}.core (full) or rank{0,1}.core.xz (--sliced), and
rank{0,1}.ground_truth.json.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBDIR = "/usr/local/cuda-13.0/lib"
NCCLSCOPE = os.path.join(REPO, os.environ.get("NCCLSCOPE_BUILD_DIR", "build"), "bin", "ncclscope")


def sh(*command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs).stdout


def ground_truth(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    return lines[-1] if lines else None


def gdb_values(core, exe, truth):
    addresses = [c["address"] for c in truth["comms"] if str(c.get("address", "")).startswith("0x")]
    out = sh("bash", os.path.join(REPO, "scripts/verify-core-with-gdb.sh"), core, exe, LIBDIR, *addresses)
    return json.loads(out)["comms"]


def collective_names():
    return ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]


def expected_comm(truth_comm, gdb_comm):
    entry = {"address": truth_comm["address"], "name": truth_comm.get("name")}
    if "error" in gdb_comm:
        entry["gdb_error"] = gdb_comm["error"]
        return entry
    entry.update({"comm_hash": "0x%x" % int(gdb_comm["commHash"], 16), "rank": gdb_comm["rank"],
                  "nranks": gdb_comm["nRanks"], "cuda_dev": gdb_comm["cudaDev"],
                  "coll_op_count": gdb_comm["collOpCount"], "async_result": gdb_comm["asyncResultName"],
                  "seq_launched": dict(zip(collective_names(), gdb_comm["seqNumber"]))})
    # The program's own count of what it launched must agree with gdb's reading.
    for name, count in truth_comm.get("launched", {}).items():
        if entry["seq_launched"].get(name) != count:
            entry.setdefault("ground_truth_disagrees", {})[name] = count
    return entry


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("source")
    parser.add_argument("exe")
    parser.add_argument("--sliced", action="store_true")
    parser.add_argument("--slice-exe", default="", help="executable for slicing (default: EXE)")
    parser.add_argument("--note", default="")
    parser.add_argument("--capture", default="")
    parser.add_argument("--expect", default="", help="JSON: expected triage (verdict, culprits)")
    args = parser.parse_args()
    target = os.path.join(REPO, "corefiles", args.scenario)
    os.makedirs(target, exist_ok=True)
    work = tempfile.mkdtemp()
    ranks = []
    try:
        for rank in (0, 1):
            truth_path = os.path.join(args.source, f"rank{rank}.ground_truth.json")
            if not os.path.exists(truth_path):
                continue
            truth = ground_truth(truth_path)
            packed = os.path.join(target, f"rank{rank}.core.xz")
            if args.sliced:
                source = os.path.join(args.source, f"rank{rank}.core.xz")
                if not os.path.exists(source):
                    continue
                shutil.copy(source, packed)
            else:
                full = os.path.join(args.source, f"rank{rank}.core")
                if not os.path.exists(full):
                    continue
                small = os.path.join(work, f"rank{rank}.small.core")
                sh(NCCLSCOPE, "slice", full, "-o", small, "--exe", args.slice_exe or args.exe,
                   "--solib-search-path", LIBDIR)
                with open(packed, "wb") as out:
                    subprocess.run(["xz", "-9", "-c", small], stdout=out, check=True)
            core = os.path.join(work, f"rank{rank}.core")
            with open(core, "wb") as out:
                subprocess.run(["xz", "-dc", packed], stdout=out, check=True)
            gdb = gdb_values(core, args.exe, truth) if truth["comms"] else []
            comms = [expected_comm(t, g) for t, g in zip(truth["comms"], gdb)]
            ranks.append({"rank": rank, "core": f"rank{rank}.core.xz", "pid": truth.get("pid"),
                          "role": truth.get("role"), "core_bytes_xz": os.path.getsize(packed),
                          "comms": comms})
            first = truth
        program = args.slice_exe or args.exe
        exe_id = hashlib.sha1(open(program, "rb").read()).hexdigest()[:12]
        expected = {"scenario": args.scenario, "nccl_version": "2.28.9",
                    "libnccl_build_id": "9fcf74d93a8c3605bf7718f594d0a24366e38536",
                    "mode": first.get("mode"), "capture": args.capture, "note": args.note,
                    "executable": f"bin/{os.path.basename(program)}.{exe_id}.xz", "executable_sha1_12": exe_id,
                    "expected_culprit_rank": first.get("expected_culprit_rank"),
                    "hang_collective": first.get("hang_collective"),
                    "ranks": ranks,
                    "verified_with": "gdb 13 + libnccl 2.28.9 DWARF (scripts/verify-core-with-gdb.sh)"}
        if args.expect:
            expected["triage"] = json.loads(args.expect)
        with open(os.path.join(target, "expected.json"), "w") as out:
            json.dump(expected, out, indent=2)
            out.write("\n")
        print(f"{args.scenario}: {len(ranks)} rank core(s), "
              f"{sum(r['core_bytes_xz'] for r in ranks)} bytes xz")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    sys.exit(main())
