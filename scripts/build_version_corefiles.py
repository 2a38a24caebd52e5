#!/usr/bin/env python3
"""corefiles/<scenario>/ from one library's capture of scripts/device-nccl-versions.sh (issue 17).

  scripts/build_version_corefiles.py PACK_DIR SCENARIO [--stripped] [--executable bin/NAME.xz]

PACK_DIR is one library's folder of nccl-versions.tar.xz (pack/hang-v2.29.7, pack/system): the
slices, `state --json` of each FULL core decoded on the GPU machine with that build's own DWARF
(the expected values: never ncclScope's reading of the slice), each rank's GROUND_TRUTH line,
build-profile.json and library.txt. Every expected value is first checked against the scenario
program's own record (comm address, rank, nranks, collectives launched); a disagreement stops.
--stripped: the library has no DWARF (the machine's system libnccl): its copy without code
(libnccl.so.2.min: build-id, .rodata, .dynsym) goes with the cores, the layout is the header
profile, and the expected values come from the full core decoded with that header profile,
checked against the ground truth alone. The min copy goes with every scenario's cores (the
stripped path of tests/cli/layout_headers_test.sh decodes each through it and the header profile).
--executable: the carried scenario binary the capture ran (corefiles/bin/, named by its sha1 prefix).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXECUTABLE = "bin/nccl_hang_scenarios.c397d96595a2.xz"  # the carried scenario binary of the first captures
COMPARED = ["comm_hash", "rank", "nranks", "cuda_dev", "coll_op_count", "seq_launched"]


def ground_truth(path):
    lines = [json.loads(line) for line in open(path) if line.strip()]
    return lines[-1]


def library_facts(pack):
    text = open(os.path.join(pack, "library.txt")).read()
    build_id = re.search(r"Build ID: ([0-9a-f]+)", text).group(1)
    found = re.search(r"NCCL version ([0-9]+\.[0-9]+\.[0-9]+)", text)
    if found is None:  # 2.30.7 prints no version string: the profile extraction's log names it
        found = re.search(r"NCCL ([0-9]+\.[0-9]+\.[0-9]+), build-id " + build_id,
                          open(os.path.join(pack, "extract.log")).read())
    return build_id, found.group(1)


def expected_comms(state, truth, subject):
    comms = []
    truth_by_address = {int(c["address"], 16): c for c in truth["comms"]}
    for comm in state["communicators"]:
        known = truth_by_address.get(int(comm["address"], 16))
        if known is None:
            sys.exit(f"{subject}: comm {comm['address']} is not in the program's ground truth")
        for key in ("rank", "nranks"):
            if comm[key] != known[key]:
                sys.exit(f"{subject}: {key} {comm[key]} != ground truth {known[key]}")
        if "seq_launched" in comm.get("unavailable", {}):  # before 2.23: no seqNumber[], the op count
            own = sum(known["launched"].values())
            # splitShare: one ncclSharedResources (one count) for every comm of the process
            process = sum(sum(c["launched"].values()) for c in truth["comms"])
            if comm["coll_op_count"] not in (own, process):
                sys.exit(f"{subject}: coll_op_count {comm['coll_op_count']} != launched {own} (or {process} shared)")
            known = dict(known, launched={})
        for func, count in known["launched"].items():
            if comm["seq_launched"].get(func) != count:
                sys.exit(f"{subject}: seq_launched {func} {comm['seq_launched'].get(func)} != launched {count}")
        entry = {"address": comm["address"], "name": known["name"]}
        entry.update({key: comm[key] for key in COMPARED})
        entry["async_result"] = comm["health"]["async_result"]
        comms.append(entry)
    if len(comms) != len(truth["comms"]):
        sys.exit(f"{subject}: {len(comms)} comms decoded, the program made {len(truth['comms'])}")
    return comms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pack")
    parser.add_argument("scenario")
    parser.add_argument("--stripped", action="store_true")
    parser.add_argument("--executable", default=EXECUTABLE)
    parser.add_argument("--reference", default="skip-collective",
                        help="the corefiles/ scenario of the same mode whose culprit and triage this one shares")
    parser.add_argument("--triage", help="JSON of the expected triage, when it differs from the reference's")
    parser.add_argument("--note", default="", help="a sentence on what the capture shows")
    args = parser.parse_args()
    executable = args.executable
    build_id, version = library_facts(args.pack)
    out = os.path.join(REPO, "corefiles", args.scenario)
    os.makedirs(out, exist_ok=True)
    ranks = []
    for rank in (0, 1):
        subject = f"{args.scenario} rank {rank}"
        state = json.load(open(os.path.join(args.pack, f"rank{rank}.state.full.json")))
        truth = ground_truth(os.path.join(args.pack, f"rank{rank}.ground_truth.json"))
        core_xz = os.path.join(out, f"rank{rank}.core.xz")
        with open(core_xz, "wb") as sink:
            subprocess.run(["xz", "-9e", "-c", os.path.join(args.pack, f"rank{rank}.core.sliced")],
                           stdout=sink, check=True)
        entry = {"rank": rank, "core": os.path.basename(core_xz), "pid": truth["pid"], "role": truth["role"],
                 "core_bytes_xz": os.path.getsize(core_xz),
                 "layout_source_contains": "nccl-%s.headers.json" % version if args.stripped else build_id,
                 "comms": expected_comms(state, truth, subject)}
        ranks.append(entry)
    skip = json.load(open(os.path.join(REPO, "corefiles", args.reference, "expected.json")))
    expected = {
        "scenario": args.scenario, "nccl_version": version, "libnccl_build_id": build_id,
        "mode": skip["mode"],
        "capture": "1 H200, two ranks with their own NCCL_HOSTID (socket NET), coredump_filter 0x33, "
                   "sliced on the GPU machine (scripts/device-nccl-versions.sh)",
        "note": ("the machine's stripped system libnccl: layout from native/profiles/nccl-%s.headers.json; "
                 "expected values from the full core decoded with it, checked against the program's "
                 "ground truth" % version) if args.stripped else
                ("NCCL %s built from its tag on the GPU machine; expected values: `state --json` of the "
                 "full core with that build's DWARF, checked against the program's ground truth" % version)
                + (" " + args.note if args.note else ""),
        "executable": executable, "executable_sha1_12": executable.split(".")[-2],
        "expected_culprit_rank": skip["expected_culprit_rank"], "hang_collective": skip["hang_collective"],
        "verified_with": "the build's DWARF on the GPU machine + the program's ground truth" if not args.stripped
                         else "the program's ground truth (no DWARF exists for this build)",
        "triage": json.loads(args.triage) if args.triage else skip["triage"], "ranks": ranks,
    }
    with open(os.path.join(out, "libnccl.so.2.min.xz"), "wb") as sink:
        subprocess.run(["xz", "-9e", "-c", os.path.join(args.pack, "libnccl.so.2.min")], stdout=sink, check=True)
    if args.stripped:
        expected["libnccl"] = "libnccl.so.2.min.xz"
    else:
        shutil.copy(os.path.join(args.pack, "build-profile.json"),
                    os.path.join(REPO, "native", "profiles", build_id + ".json"))
    with open(os.path.join(out, "expected.json"), "w") as sink:
        json.dump(expected, sink, indent=2)
        sink.write("\n")
    print(f"{args.scenario}: NCCL {version}, build-id {build_id}, "
          f"{sum(r['core_bytes_xz'] for r in ranks)} bytes of cores")


if __name__ == "__main__":
    main()
