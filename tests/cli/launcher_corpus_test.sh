#!/usr/bin/env bash
# The real cores in corefiles/ were captured with RANK=<rank> WORLD_SIZE=2 set by
# the capture script (scripts/device-capture-corpus.sh start_rank): `ncclscope state`
# must read launcher.rank = the rank of expected.json from each core's initial stack,
# and a re-slice of a core must give the same launcher object.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
command -v xz > /dev/null || { echo "skip: xz absent"; exit 77; }
ls "$src"/corefiles/*/rank*.core.xz > /dev/null 2>&1 || { echo "skip: no cores in corefiles/"; exit 77; }
work=$(mktemp -d)
export XDG_CACHE_HOME=$work/cache
trap 'rm -rf "$work"' EXIT
python3 - "$build/bin/ncclscope" "$src/corefiles" "$work" <<'PY'
import json, os, subprocess, sys, tarfile
cli, corefiles, work = sys.argv[1:4]
libdir = os.path.join(work, "lib")
os.makedirs(libdir)
for name in os.listdir(os.path.join(corefiles, "lib")):
    with tarfile.open(os.path.join(corefiles, "lib", name)) as archive:
        for member in archive.getmembers():
            if member.isfile():
                member.name = os.path.basename(member.name)
                archive.extract(member, libdir)
args = ["--solib-search-path", libdir]
failures = checked = 0
def launcher(core, own_args=()):
    run = subprocess.run([cli, "state", "--core", core, "--json", *own_args, *args], capture_output=True, text=True)
    return json.loads(run.stdout)["launcher"] if run.returncode in (0, 1) else {"error": run.stderr.strip()}
resliced = False
for scenario in sorted(os.listdir(corefiles)):
    expected_path = os.path.join(corefiles, scenario, "expected.json")
    if not os.path.exists(expected_path) or os.path.exists(os.path.join(corefiles, scenario, "ranks.tar.xz")):
        continue  # ranks.tar.xz scenarios: tests/cli/multigroup_corpus_test.sh
    expected = json.load(open(expected_path))
    own_args = []
    if expected.get("libnccl"):  # the scenario's own stripped libnccl (issue 17) comes first
        own = os.path.join(work, "own-lib", scenario)
        os.makedirs(own, exist_ok=True)
        with open(os.path.join(own, "libnccl.so.2"), "wb") as out:
            subprocess.run(["xz", "-dc", os.path.join(corefiles, scenario, expected["libnccl"])], stdout=out, check=True)
        own_args = ["--solib-search-path", own]
    for rank in expected["ranks"]:
        core = os.path.join(work, "core")
        with open(core, "wb") as out:
            subprocess.run(["xz", "-dc", os.path.join(corefiles, scenario, rank["core"])], stdout=out, check=True)
        got = launcher(core, own_args)
        ok = (got.get("rank") == rank["rank"] and got.get("world_size") == 2 and got.get("rank_from") == "RANK"
              and got.get("source") == "initial stack")
        checked += 1
        if not ok:
            failures += 1
        print(("ok   " if ok else "FAIL ") + f"{scenario} {rank['core']}: launcher rank {got.get('rank')}"
              f" (expected {rank['rank']}), world_size {got.get('world_size')}" + ("" if ok else f": {got}"))
        if not resliced:  # one slice of a real core: the launcher object survives it
            resliced = True
            small = os.path.join(work, "small.core")
            run = subprocess.run([cli, "slice", core, "-o", small, *args], capture_output=True, text=True)
            same = run.returncode in (0, 1) and launcher(small) == got
            failures += 0 if same else 1
            print(("ok   " if same else "FAIL ") + f"{scenario} {rank['core']}: re-sliced core gives the same launcher"
                  + ("" if same else f" (slice: {run.stderr.strip()})"))
        os.unlink(core)
print(f"{checked} cores checked, {failures} failure(s)")
sys.exit(1 if failures or checked == 0 else 0)
PY
