#!/usr/bin/env bash
# Issue 37: partial inputs never produce a culprit the evidence does not support. Every
# corefiles/ scenario is triaged with each rank left out in turn, and with each rank replaced
# by an empty file, a copy cut at 128 KiB and a copy cut in half: culprit_ranks must be empty
# or the scenario's true culprit (expected.json's expected_culprit_rank), and a rank with no
# input, an empty or a 128 KiB core is never a culprit. Skips (77) without corefiles/.
# Standalone: NCCLSCOPE_BUILD=build NCCLSCOPE_SRC=. bash tests/cli/triage_partial_inputs_test.sh
source "$(dirname "$0")/corpus_prelude.sh"
ls "$SRC"/corefiles/*/expected.json >/dev/null 2>&1 || { echo "SKIP: no corefiles/"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib"
for packed in "$SRC"/corefiles/lib/*.tar.xz; do
  [ -f "$packed" ] && tar -C "$WORK/lib" -xJf "$packed" --transform 's|.*/||'
done
python3 - "$NSC" "$SRC/corefiles" "$WORK" "${NCCLSCOPE_PARTIAL_SCENARIOS:-}" <<'PY'
import json, os, subprocess, sys, tarfile, lzma, shutil
nsc, corpus, work, only = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split()

def unpack(scenario, expected):
    """The scenario's rank cores (rank order), executable and library path, unpacked once."""
    directory = os.path.join(corpus, scenario)
    out = os.path.join(work, scenario)
    os.makedirs(out)
    for name in sorted(os.listdir(directory)):
        if name.endswith(".core.xz"):
            with lzma.open(os.path.join(directory, name)) as src, open(os.path.join(out, name[:-3]), "wb") as dst:
                shutil.copyfileobj(src, dst)
    if os.path.exists(os.path.join(directory, "ranks.tar.xz")):
        with tarfile.open(os.path.join(directory, "ranks.tar.xz")) as tar:
            tar.extractall(out)
    args = []
    if expected.get("executable"):
        exe = os.path.join(out, "program")
        with lzma.open(os.path.join(corpus, expected["executable"])) as src, open(exe, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.chmod(exe, 0o755)
        args += ["--exe", exe]
    lib_path = os.path.join(work, "lib") + ":/usr/local/cuda-13.0/lib"
    if expected.get("libnccl"):
        os.makedirs(os.path.join(out, "own-lib"))
        with lzma.open(os.path.join(directory, expected["libnccl"])) as src, \
             open(os.path.join(out, "own-lib", "libnccl.so.2"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        lib_path = os.path.join(out, "own-lib") + ":" + lib_path
    args += ["--solib-search-path", lib_path]
    cores = sorted((f for f in os.listdir(out) if f.endswith(".core")),
                   key=lambda f: int("".join(c for c in f if c.isdigit()) or 0))
    return out, [os.path.join(out, c) for c in cores], args

def damaged_copy(core, how, out):
    path = os.path.join(out, "damaged-" + how, os.path.basename(core))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    size = {"empty": 0, "cut-128k": 128 * 1024, "cut-half": os.path.getsize(core) // 2}[how]
    with open(core, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read(size))
    return path

trials = wrong = 0
for scenario in sorted(os.listdir(corpus)):
    expected_path = os.path.join(corpus, scenario, "expected.json")
    if not os.path.exists(expected_path) or (only and scenario not in only):
        continue
    expected = json.load(open(expected_path))
    truth = expected.get("expected_culprit_rank")
    allowed = set() if truth is None or truth < 0 else {truth}
    out, cores, args = unpack(scenario, expected)
    if len(cores) < 2:
        continue
    for index, core in enumerate(cores):
        for how in ("left-out", "empty", "cut-128k", "cut-half"):
            inputs = [c for c in cores if c != core]
            if how != "left-out":
                inputs.insert(index, damaged_copy(core, how, out))
            run = subprocess.run([nsc, "triage", *inputs, *args, "--json", "--jobs", "1"],
                                 capture_output=True, text=True)
            trials += 1
            try:
                report = json.loads(run.stdout)
            except ValueError:
                if run.returncode == 2:
                    continue  # nothing usable: no verdict, no culprit
                print(f"FAIL {scenario} rank {index} {how}: exit {run.returncode}, no JSON: {run.stderr[-300:]}")
                wrong += 1
                continue
            culprits = set(report.get("culprit_ranks") or [])
            problems = []
            if not culprits <= allowed:
                problems.append(f"culprit_ranks {sorted(culprits)}, truth {sorted(allowed)}")
            # The rank is the core's own number (rank0.core, rank3.core: not its position).
            rank = int("".join(c for c in os.path.basename(core) if c.isdigit()) or index)
            # A crash's origin without input is blamed on its peers' ncclRemoteError (issue 32),
            # never on its absence: only then, and only the true culprit.
            on_peers_evidence = (report.get("crash") or {}).get("rule") == "no-input" and rank in allowed
            if how in ("left-out", "empty", "cut-128k") and rank in culprits and not on_peers_evidence:
                problems.append(f"rank {rank} blamed on the strength of an input that is {how}")
            if problems:
                wrong += 1
                print(f"FAIL {scenario} rank {rank} {how}: verdict {report['verdict']}: "
                      + "; ".join(problems) + f" ({report['summary'][:200]})")
    shutil.rmtree(out)
print(f"{trials} trials, {wrong} wrong culprits")
sys.exit(1 if wrong else 0)
PY
