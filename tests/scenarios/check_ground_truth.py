#!/usr/bin/env python3
"""Compare gdb-read communicator fields (rankN.gdb.json) with each rank's GROUND_TRUTH.

  check_ground_truth.py CORES_DIR

For every comm a rank reported: the gdb rank and nRanks must equal the program's
ncclCommUserRank/ncclCommCount, and seqNumber[f] must equal the collectives of function f
the program launched (NCCL counts at enqueue, hung or not).  Prints one row per comm and
writes CORES_DIR/verification.json.  Exit 1 when a row disagrees that was not expected to.
"""
import json
import os
import sys

FUNCS = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]


def load_json_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compare(truth_comm, gdb_comm):
    if "error" in gdb_comm:
        return ["gdb: " + gdb_comm["error"]]
    problems = []
    if gdb_comm["rank"] != truth_comm["rank"]:
        problems.append("rank %d != %d" % (gdb_comm["rank"], truth_comm["rank"]))
    if gdb_comm["nRanks"] != truth_comm["nranks"]:
        problems.append("nRanks %d != %d" % (gdb_comm["nRanks"], truth_comm["nranks"]))
    launched = truth_comm.get("launched", {})
    for index, func in enumerate(FUNCS):
        if gdb_comm["seqNumber"][index] != launched.get(func, 0):
            problems.append("seqNumber[%s] %d != launched %d"
                            % (func, gdb_comm["seqNumber"][index], launched.get(func, 0)))
    return problems


def main(cores_dir):
    rows, failures = [], 0
    for scenario in sorted(os.listdir(cores_dir)):
        path = os.path.join(cores_dir, scenario)
        if scenario.startswith("_") or not os.path.isdir(path):
            continue
        for rank in (0, 1):
            truth_path = os.path.join(path, "rank%d.ground_truth.json" % rank)
            gdb_path = os.path.join(path, "rank%d.gdb.json" % rank)
            if not (os.path.exists(truth_path) and os.path.exists(gdb_path)):
                continue
            truths, gdbs = load_json_lines(truth_path), load_json_lines(gdb_path)
            if not truths or not gdbs:
                rows.append({"scenario": scenario, "rank": rank, "problems": ["no data"]})
                failures += 1
                continue
            by_address = {c["address"]: c for c in gdbs[0]["comms"]}
            for comm in truths[0]["comms"]:
                got = by_address.get(comm["address"], {"error": "not read"})
                problems = compare(comm, got)
                # ncclCommAbort frees the comm: its memory is no longer a communicator.
                expected_bad = scenario.startswith("abort") and truths[0]["role"] == "culprit"
                rows.append({"scenario": scenario, "rank": rank, "comm": comm["name"],
                             "address": comm["address"], "gdb": got, "problems": problems,
                             "expected_to_differ": expected_bad})
                if problems and not expected_bad:
                    failures += 1
    for row in rows:
        gdb = row.get("gdb", {})
        print("%-30s r%d %-6s %-15s hash=%s seq=%s collOpCount=%s async=%s %s" % (
            row["scenario"], row["rank"], row.get("comm", "-"), row.get("address", "-"),
            gdb.get("commHash", "-"), gdb.get("seqNumber", "-"), gdb.get("collOpCount", "-"),
            gdb.get("asyncResultName", "-"),
            "OK" if not row["problems"] else ("DIFFERS%s: %s" % (
                " (expected)" if row.get("expected_to_differ") else "", "; ".join(row["problems"])))))
    with open(os.path.join(cores_dir, "verification.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/work/cores"))
