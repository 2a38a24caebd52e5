"""Decodes every committed real core in corefiles/ and compares, field by field, with
its expected.json (values confirmed with gdb + libnccl DWARF), then checks the triage
verdict of each scenario.  Usage: check_corpus.py NCCLSCOPE COREFILES_DIR [SCENARIO...]
Runs without /usr/local/cuda: libnccl's layout comes from the shipped profile (build-id)."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

CLI, COREFILES = sys.argv[1], sys.argv[2]
ONLY = sys.argv[3:]
COMPARED = ["comm_hash", "rank", "nranks", "cuda_dev", "coll_op_count", "seq_launched"]
failures = []


def fail(message):
    failures.append(message)
    print("FAIL " + message)


def unpack(scenario_dir, expected, work):
    cores = []
    for rank in expected["ranks"]:
        core = os.path.join(work, f"rank{rank['rank']}.core")
        with open(core, "wb") as out:
            subprocess.run(["xz", "-dc", os.path.join(scenario_dir, rank["core"])], stdout=out, check=True)
        cores.append((rank, core))
    args = []
    if expected.get("executable"):
        program = os.path.join(work, "program")
        with open(program, "wb") as out:
            subprocess.run(["xz", "-dc", os.path.join(COREFILES, expected["executable"])], stdout=out, check=True)
        os.chmod(program, 0o755)
        args += ["--exe", program]
    libdir = os.path.join(work, "lib")
    os.makedirs(libdir)
    for name in os.listdir(os.path.join(COREFILES, "lib")):
        with tarfile.open(os.path.join(COREFILES, "lib", name)) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    member.name = os.path.basename(member.name)
                    archive.extract(member, libdir)
    # A scenario's own libnccl (a stripped build decoded by its header profile, issue 17) is
    # searched first; it holds no DWARF, so the layout is never read from it.
    if expected.get("libnccl"):
        own = os.path.join(work, "own-lib")
        os.makedirs(own)
        with open(os.path.join(own, "libnccl.so.2"), "wb") as out:
            subprocess.run(["xz", "-dc", os.path.join(scenario_dir, expected["libnccl"])], stdout=out, check=True)
        libdir = own + ":" + libdir
    # No /usr/local/cuda here on purpose: the layout must come from the shipped profile.
    args += ["--solib-search-path", libdir]
    return cores, args


def check_state(scenario, rank, core, args, scenario_expected):
    run = subprocess.run([CLI, "state", "--core", core, "--json", *args], capture_output=True, text=True)
    if run.returncode not in (0, 1):
        return fail(f"{scenario} rank {rank['rank']}: state exit {run.returncode}: {run.stderr.strip()}")
    document = json.loads(run.stdout)
    found = {c["address"]: c for c in document["communicators"]}
    for expected in rank["comms"]:
        subject = f"{scenario} rank {rank['rank']} comm {expected['address']}"
        if "gdb_error" in expected or expected.get("nranks", 1) < 1:
            if expected["address"] in found:
                fail(f"{subject}: gdb could not read it, ncclscope decoded it")
            continue
        if "layout_source_contains" in rank and rank["layout_source_contains"] not in document["nccl"]["layout_source"]:
            fail(f"{subject}: layout {document['nccl']['layout_source']}, expected {rank['layout_source_contains']}")
        comm = found.get(expected["address"])
        if comm is None:
            fail(f"{subject}: not found (found {sorted(found)})")
            continue
        for key in COMPARED:
            if comm.get(key) != expected[key]:
                fail(f"{subject}: {key} = {comm.get(key)!r}, gdb says {expected[key]!r}")
        if comm["health"]["async_result"] != expected["async_result"]:
            fail(f"{subject}: async_result {comm['health']['async_result']} != {expected['async_result']}")
    # splitShare (before 2.24): "one" ncclSharedResources for every comm of the rank, or each its "own".
    sharing = scenario_expected.get("shared_resources")
    if sharing:
        addresses = [c.get("shared_resources") for c in document["communicators"]]
        distinct = len(set(addresses))
        if None in addresses or distinct != (1 if sharing == "one" else len(addresses)):
            fail(f"{scenario} rank {rank['rank']}: shared_resources {addresses}, expected {sharing}")


def check_triage(scenario, expected, cores, args):
    want = expected.get("triage")
    if not want:
        return
    run = subprocess.run([CLI, "triage", *[c for _, c in cores], "--json", *args],
                         capture_output=True, text=True)
    if run.returncode not in (0, 1):
        return fail(f"{scenario}: triage exit {run.returncode}: {run.stderr.strip()}")
    report = json.loads(run.stdout)
    if report["verdict"] != want["verdict"]:
        fail(f"{scenario}: triage verdict {report['verdict']}, expected {want['verdict']}")
    findings = [f for c in report["communicators"] for f in c["findings"]]
    if "kind" in want and not any(f["kind"] == want["kind"] for f in findings):
        fail(f"{scenario}: no {want['kind']} finding in {[f['kind'] for f in findings]}")
    if want.get("cycle") and not report.get("graph", {}).get("cycles"):
        fail(f"{scenario}: expected a wait-for cycle, graph has none")
    # expected.json's culprit_ranks of a finding are its communicator's own numbering.
    for key, field in (("culprit_ranks", "culprit_comm_ranks"), ("collective", "collective")):
        if key in want and not any(f.get(field, f.get(key)) == want[key] for f in findings):
            fail(f"{scenario}: no finding with {key} {want[key]}: {[(f['kind'], f.get(key)) for f in findings]}")


def main():
    # Multi-rank PyTorch captures ship one ranks.tar.xz: tests/cli/multigroup_corpus_test.sh.
    scenarios = sorted(d for d in os.listdir(COREFILES)
                       if os.path.isfile(os.path.join(COREFILES, d, "expected.json"))
                       and not os.path.exists(os.path.join(COREFILES, d, "ranks.tar.xz")))
    for scenario in scenarios:
        if ONLY and scenario not in ONLY:
            continue
        directory = os.path.join(COREFILES, scenario)
        expected = json.load(open(os.path.join(directory, "expected.json")))
        work = tempfile.mkdtemp()
        try:
            before = len(failures)
            cores, args = unpack(directory, expected, work)
            for rank, core in cores:
                check_state(scenario, rank, core, args, expected)
            check_triage(scenario, expected, cores, args)
            print(("ok   " if len(failures) == before else "FAIL ") + scenario)
        finally:
            shutil.rmtree(work)
    print(f"{len(scenarios) - len({f.split(':')[0].split(' ')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0].split(' ')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
