#!/usr/bin/env python3
"""Builds corefiles/<scenario>/ for the multi-group PyTorch captures (issue 13, item 7).

    scripts/build_torch_corefiles.py CAPTURE_DIR CORES_DIR SCENARIO...

CAPTURE_DIR/<scenario>/ holds what scripts/device-torch-multigroup.sh brought back (each rank's
GROUND_TRUTH, log with the faulthandler traceback, flight-recorder pickle, /proc facts and the
`ncclscope state --json` of the FULL core); CORES_DIR/<scenario>.ranks.tar.xz holds the sliced
cores (one tar per scenario: ranks share most pages, so one xz dictionary over all of them is
about half the size of one xz per rank). Writes corefiles/<scenario>/ranks.tar.xz, expected.json
(program ground truth + the full-core decode, which the CI test compares with the slices) and
truth/ (ground truth, faulthandler text, FR pickles) for later decoders (Python, PyTorch records).
"""
import json
import os
import shutil
import sys

# What triage must say, from the program's own ground truth (tests/scenarios/torch_multigroup.py).
EXPECTED_TRIAGE = {
    "tpdp-fewer-steps": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": []},
    # TORCH_NCCL_ENABLE_TIMING=1: the watchdog saw rank 2's dp all_reduce #4 enqueued but not
    # started, behind its tp all_reduce #4 (started, never completed).
    "tpdp-fewer-steps-timing": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": [],
                                "kind": "queued-behind", "collective": "all_reduce"},
    # TORCH_FR_BUFFER_SIZE=0: no recorder entries, no process-group names; NCCL alone decides.
    "tpdp-fr-off": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": []},
    "ppdp-skip-send": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": [],
                       "kind": "p2p-unmatched", "collective": "Recv"},
    "ppdp-microbatches": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": [],
                          "kind": "p2p-unmatched", "collective": "Recv"},
    # Rank 2 was SIGKILLed: no core. Its absence explains the waits, but an input not given
    # looks the same, so triage may only name it a suspect.
    "tpdp-rank-died": {"verdict": "incomplete", "culprit_ranks": [], "suspect_ranks": [2]},
    "tpdp-startup": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": [], "kind": "startup-hang"},
    # Rank 3 all-reduced twice the elements of its dp peer (rank 1): NCCL completed it silently;
    # only PyTorch's flight recorder shows it. Two ranks: no majority, so no culprit.
    "tpdp-size-mismatch": {"verdict": "mismatch", "culprit_ranks": [], "suspect_ranks": [],
                           "kind": "size-mismatch", "collective": "all_reduce"},
    # Issue 32 (tests/scenarios/torch_crash_order.py): the origin is the rank whose failure no
    # other rank's explains; the survivors' failures (remote errors, watchdog aborts) are reactions.
    # Rank 2 was SIGKILLed (no core) while the others' communicators report its loss.
    "crash-sigkill": {"verdict": "crash", "culprit_ranks": [2], "suspect_ranks": []},
    # Rank 1 raised an uncaught RuntimeError and exited (status 1, no core).
    "crash-exception": {"verdict": "crash", "culprit_ranks": [1], "suspect_ranks": []},
    # Rank 3 never issued dp all_reduce #4; every rank's watchdog timed out and aborted it (item 3).
    "crash-watchdog-timeout": {"verdict": "crash", "culprit_ranks": [3], "suspect_ranks": []},
    # Rank 3's own kernel wrote 4 TiB past a tensor (cudaErrorIllegalAddress).
    "crash-cuda-illegal-address": {"verdict": "crash", "culprit_ranks": [3], "suspect_ranks": []},
    # Rank 0 wrote through NULL in native user code: its core's NT_SIGINFO is SIGSEGV.
    "crash-native-segfault": {"verdict": "crash", "culprit_ranks": [0], "suspect_ranks": []},
    # Issue 33. Rank 1 skipped its send of micro-batch 1 to rank 2 and sits in the later world
    # all_reduce; rank 2 waits in that recv, rank 3 behind it, rank 0 in embed with rank 3.
    "order-p2p-skip": {"verdict": "hang", "culprit_ranks": [1], "suspect_ranks": []},
    "order-p2p-skip-fr-off": {"verdict": "hang", "culprit_ranks": [1], "suspect_ranks": []},
    # Ranks 0-2 sit in new_group (ncclCommSplit of the world comm); rank 3 launched a world
    # all_reduce instead.
    "order-split-vs-collective": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": []},
    "order-split-vs-collective-fr-off": {"verdict": "hang", "culprit_ranks": [3], "suspect_ranks": []},
    # Ranks 0 and 1 issued grad_a and grad_b in opposite orders with a host synchronize between:
    # nobody skipped anything.
    "order-lock-inversion": {"verdict": "deadlock", "culprit_ranks": [], "suspect_ranks": []},
    "order-lock-inversion-fr-off": {"verdict": "deadlock", "culprit_ranks": [], "suspect_ranks": []},
    # Rank 2's GPU runs at::cuda spin_kernel (torch.cuda._sleep) ahead of its tp all_reduce #4.
    # Its cores alone cannot show what a GPU runs: every waiting rank stays a suspect. cuda-gdb's
    # kernel views (order-gpu-spin/gdb, a separate probe job) name the spin kernel (issue 33 item 4).
    "order-gpu-spin": {"verdict": "incomplete", "culprit_ranks": [], "suspect_ranks": [0, 1, 2, 3]},
    "order-gpu-spin-fr-off": {"verdict": "incomplete", "culprit_ranks": [], "suspect_ranks": [0, 1, 2, 3]},
}
CAPTURE_HANG = ("python -X faulthandler, SIGABRT once every rank reached its hang point; sliced on the "
                "GPU machine (scripts/device-torch-multigroup.sh)")
CAPTURE_CRASH = ("python -X faulthandler; the job ended by itself (no signal from the capture unless "
                 "ranks[].exit says so); cores of the processes the kernel dumped; sliced on the GPU "
                 "machine (scripts/device-torch-multigroup.sh, capture_crash)")


def exit_facts(source, rank):
    """rank<R>.exit of the crash flow: how the process ended, as the capture saw it."""
    path = os.path.join(source, "rank%d.exit" % rank)
    if not os.path.exists(path):
        return None
    facts = {"text": open(path).read().strip()}
    for token in facts["text"].split():
        if "=" in token:
            key, value = token.split("=", 1)
            facts[key] = value
    status = int(facts.get("wait_status", "-1"))
    facts["signal"] = status - 128 if status > 128 else None
    facts["aborted_by_capture"] = "SIGABRT by the capture" in facts["text"]
    return facts


# PyTorch's own lines that say how a rank ended (its stderr), newest last.
TEARDOWN_MARKS = ("Process group watchdog thread terminated with exception", "terminate called",
                  "Watchdog caught collective operation timeout", "failure detected by watchdog",
                  "Terminating the process after attempting", "NCCL error", "ncclRemoteError",
                  "remote process exited", "Fatal Python error", "CUDA error", "Traceback (most recent",
                  "RuntimeError", "Segmentation fault", "Aborted", "First PG on this rank to signal dumping")


def teardown_lines(log_path, limit=40):
    if not os.path.exists(log_path):
        return []
    lines = [line.rstrip()[:400] for line in open(log_path, errors="replace")
             if any(mark in line for mark in TEARDOWN_MARKS)]
    return lines[:limit]


def faulthandler_text(log_path):
    """The faulthandler dump of every thread at SIGABRT, as the interpreter printed it."""
    lines, keep = [], False
    for line in open(log_path, errors="replace"):
        if line.startswith("Fatal Python error"):
            keep = True
        if keep:
            lines.append(line)
    return "".join(lines)


def main_thread_site(fault_text, program):
    """The innermost frame of `program` on the thread that runs <module> (faulthandler's dump)."""
    threads = [block for block in fault_text.split("\n\n") if "<module>" in block]
    for block in threads:
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("File ") and program in line and " in " in line:
                parts = line.split(", line ")
                number, function = parts[1].split(" in ", 1)
                return {"file": program, "line": int(number), "function": function.strip()}
    return None


def comm_summary(state_path):
    if not os.path.exists(state_path):
        return []
    state = json.load(open(state_path))
    comms = []
    for comm in state.get("communicators", []):
        comms.append({key: comm.get(key) for key in
                      ("address", "comm_hash", "rank", "nranks", "seq_launched", "coll_op_count")}
                     | {"p2p_total": (comm.get("p2p_op_count") or {}).get("total"),
                        "async_result": (comm.get("health") or {}).get("async_result")})
    return comms


def gpu_name(capture_dir):
    """The GPU of the capture, from machine/machine.txt (nvidia-smi), else the H200 of earlier runs."""
    path = os.path.join(capture_dir, "machine", "machine.txt")
    for line in open(path) if os.path.exists(path) else []:
        if "NVIDIA" in line and "," in line:
            return line.split(",")[0].replace("NVIDIA ", "").strip()
    return "H200"


def build(capture_dir, cores_dir, scenario, out_root):
    source = os.path.join(capture_dir, scenario)
    out = os.path.join(out_root, scenario)
    os.makedirs(os.path.join(out, "truth"), exist_ok=True)
    shutil.copy(os.path.join(cores_dir, scenario + ".ranks.tar.xz"), os.path.join(out, "ranks.tar.xz"))
    ranks, truths = [], []
    for rank in range(8):
        truth_path = os.path.join(source, "rank%d.ground_truth.json" % rank)
        if not os.path.exists(truth_path):
            continue
        text = open(truth_path).read().strip()
        truth = json.loads(text.splitlines()[-1]) if text else {}
        truths.append(truth)
        state = "exited"
        if os.path.exists(os.path.join(source, "rank%d.state" % rank)):
            state = open(os.path.join(source, "rank%d.state" % rank)).read().split()[0]
        entry = {"rank": rank, "pid": truth.get("pid"), "role": truth.get("role"), "time": truth.get("time"),
                 "process": state, "hang_site": truth.get("hang_site"), "groups": truth.get("groups", []),
                 "launched": truth.get("launched", {}),
                 "core_in_tar": "rank%d.core" % rank if state == "alive" else None,
                 "comms_full_core": comm_summary(os.path.join(source, "rank%d.state.json" % rank))}
        if truth.get("failure"):
            entry["failure"] = truth["failure"]
        facts = exit_facts(source, rank)
        if facts:
            entry["exit"] = facts
            entry["teardown_log"] = teardown_lines(os.path.join(source, "rank%d.log" % rank))
        ranks.append(entry)
        shutil.copy(truth_path, os.path.join(out, "truth", "rank%d.ground_truth.json" % rank))
        log = os.path.join(source, "rank%d.log" % rank)
        site = main_thread_site(faulthandler_text(log), "torch_crash_order.py") if os.path.exists(log) else None
        if scenario.startswith("crash-") and site and entry["hang_site"] and \
                site["function"] != entry["hang_site"]["function"]:
            # The rank went on past the point it announced: its core shows where faulthandler saw it.
            entry["announced_site"] = entry["hang_site"]
            entry["hang_site"] = dict(site, call="(faulthandler: the main thread at the fatal signal)")
        if os.path.exists(log) and faulthandler_text(log):
            with open(os.path.join(out, "truth", "rank%d.faulthandler.txt" % rank), "w") as handle:
                handle.write(faulthandler_text(log))
        pickle_path = os.path.join(source, "fr_rank%d.pkl" % rank)
        if os.path.exists(pickle_path):
            shutil.copy(pickle_path, os.path.join(out, "truth", "fr_rank%d.pkl" % rank))
        torch_dump = os.path.join(source, "pt_fr_rank%d" % rank)  # PyTorch's own dump at the failure
        if os.path.exists(torch_dump):
            shutil.copy(torch_dump, os.path.join(out, "truth", "pt_fr_rank%d.pkl" % rank))
        if scenario.startswith(("crash-", "order-")) and os.path.exists(log):
            shutil.copy(log, os.path.join(out, "truth", "rank%d.log" % rank))
    if os.path.isdir(os.path.join(source, "gdb")):
        shutil.copytree(os.path.join(source, "gdb"), os.path.join(out, "truth", "gdb"), dirs_exist_ok=True)
    first = next((r for r in ranks if r["groups"]), ranks[0])
    first_truth = next((t for t in truths if t.get("layout")), {})
    expected = {
        "scenario": scenario,
        "nccl_version": "2.28.9",
        "libnccl_build_id": "9fcf74d93a8c3605bf7718f594d0a24366e38536",
        "torch_version": "2.11.0+cu130",
        "python": "3.12.3 (Ubuntu 24.04 /usr/bin/python3.12, shipped as bin/python3.12.*.xz)",
        "capture": "1 GPU (%s), one NCCL_HOSTID per rank: socket NET transport; coredump_filter 0x33; %s"
                   % (gpu_name(capture_dir), CAPTURE_CRASH if scenario.startswith("crash-") else CAPTURE_HANG),
        "layout": first_truth.get("layout") or (first.get("groups") and ("tpdp" if scenario.startswith("tpdp") else "ppdp")),
        "torch_settings": first_truth.get("torch_settings", {}),
        "executable": "bin/python3.12.28193a4dd620.xz",
        "cores": "ranks.tar.xz",
        "expected_culprit_rank": EXPECTED_TRIAGE[scenario]["culprit_ranks"][0]
        if EXPECTED_TRIAGE[scenario]["culprit_ranks"] else -1,
        "ranks": ranks,
        "triage": EXPECTED_TRIAGE[scenario],
    }
    with open(os.path.join(out, "expected.json"), "w") as handle:
        json.dump(expected, handle, indent=2)
        handle.write("\n")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    capture_dir, cores_dir, scenarios = argv[0], argv[1], argv[2:]
    out_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corefiles")
    for scenario in scenarios:
        build(capture_dir, cores_dir, scenario, out_root)
        print("built corefiles/%s" % scenario)


if __name__ == "__main__":
    main(sys.argv[1:])
