#!/usr/bin/env python3
"""corefiles/gpu-numerics/<case>/ from what `SHIP_CORES=1 scripts/device-numerics-run.sh` sent back
(numerics/ship/<case>/: every rank's sliced core, the cuda-gdb nccl-numerics view of each rank it
read, each rank's log with the program's GROUND_TRUTH line, the device's triage of slices + views).

  python3 scripts/build_numerics_corefiles.py SHIP_DIR CASE [EXECUTABLE_XZ]

Writes ranks.tar.xz (rank<R>.core), views/rank<R>.numerics.json, truth/ (logs, device triage) and
expected.json. Every expected count is the program's own (GROUND_TRUTH: torch.isnan(...).sum() for
PyTorch, a host-side count of the copied-back buffer for nccl_numerics_hang), never ncclscope's.
"""
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = ("elements", "nan", "pos_inf", "neg_inf", "subnormal", "zero")


def ground_truth(log):
    for line in open(log):
        if line.startswith("GROUND_TRUTH "):
            return json.loads(line[len("GROUND_TRUTH "):])
    raise SystemExit(f"{log}: no GROUND_TRUTH line")


def expected_buffers(truths, viewed):
    buffers = []
    for rank, truth in sorted(truths.items()):
        if rank not in viewed:
            continue
        for role in ("send", "recv"):
            if role in truth:
                buffers.append({"rank": rank, "role": role, "address": truth[role]["address"],
                                "element_type": truth["dtype"], **{k: truth[role][k] for k in COUNTS}})
    return buffers


def origin(truths):
    """Where the program put the NaN/Inf: one rank's input, or the reduction's overflow."""
    first = next(iter(truths.values()))
    if first["mode"] == "overflow":
        return {"kind": "reduction"}
    return {"kind": "send", "rank": first["inject_rank"]}


def main():
    ship, case = sys.argv[1], sys.argv[2]
    executable = sys.argv[3] if len(sys.argv) > 3 else None
    src = os.path.join(ship, case)
    dest = os.path.join(ROOT, "corefiles", "gpu-numerics", case)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "views"))
    os.makedirs(os.path.join(dest, "truth"))
    ranks = sorted(int(n[4:-5]) for n in os.listdir(src) if n.startswith("rank") and n.endswith(".core"))
    truths = {r: ground_truth(os.path.join(src, f"rank{r}.log")) for r in ranks}
    viewed = [r for r in ranks if os.path.exists(os.path.join(src, f"rank{r}.numerics.json"))]
    with open(os.path.join(dest, "ranks.tar.xz"), "wb") as out:
        tar = subprocess.Popen(["tar", "-C", src, "-cf", "-"] + [f"rank{r}.core" for r in ranks], stdout=subprocess.PIPE)
        subprocess.run(["xz", "-9e", "-T2"], stdin=tar.stdout, stdout=out, check=True)
        if tar.wait() != 0:
            raise SystemExit("tar failed")
    for r in viewed:
        shutil.copy(os.path.join(src, f"rank{r}.numerics.json"), os.path.join(dest, "views"))
    for r in ranks:
        shutil.copy(os.path.join(src, f"rank{r}.log"), os.path.join(dest, "truth"))
    shutil.copy(os.path.join(src, "triage.txt"), os.path.join(dest, "truth", "triage.device.txt"))
    first = truths[ranks[0]]
    culprit = first.get("expected_culprit_rank", first.get("culprit"))
    expected = {
        "scenario": case,
        "program": "tests/scenarios/torch_numerics_nan.py" if first["mode"].startswith("torch") else
                   "tests/scenarios/nccl_numerics_hang.cu",
        "capture": "1 GPU (NVIDIA H100), %d ranks, one NCCL_HOSTID each (socket NET), 2026-12-06, "
                   "`SHIP_CORES=1 CASES=%s scripts/device-numerics-run.sh`: cuda-gdb `nccl-numerics --json` "
                   "read each viewed rank's buffers whole, then SIGABRT cores (coredump_filter 0x33), sliced "
                   "there" % (len(ranks), case),
        "executable": executable,
        "cores": "ranks.tar.xz",
        "views": [f"views/rank{r}.numerics.json" for r in viewed],
        "triage": {"verdict": "hang", "culprit_ranks": [culprit], "suspect_ranks": []},
        "numerics": {"origin": origin(truths), "buffers": expected_buffers(truths, viewed)},
    }
    with open(os.path.join(dest, "expected.json"), "w") as out:
        json.dump(expected, out, indent=2)
        out.write("\n")
    print(f"built {dest}: {len(ranks)} ranks, views of {viewed}")


if __name__ == "__main__":
    main()
