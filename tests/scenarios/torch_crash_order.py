"""Crashes (issue 32) and program-order hangs (issue 33) in 4-rank multi-group PyTorch jobs.

Same launch as tests/scenarios/torch_multigroup.py (one process per rank, env RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT, one NCCL_HOSTID per rank on one GPU), run by
scripts/device-torch-multigroup.sh. Layouts: "tpdp" is TP 2 x DP 2 (tp [0,1] [2,3], dp [0,2]
[1,3]) whose steps all-reduce on tp, dp, then the loss on the world group; "pp4" a 4-stage
pipeline (stage = rank) with tied embeddings (group embed [0,3]); "pairs" two groups over the
same pairs (grad_a and grad_b over [0,1] and [2,3]). Three good steps, the deviation in step 4.

Crashes: the job dies by itself; cores come from the processes the kernel dumped.
  crash-sigkill               rank 2 is SIGKILLed (as by the OOM killer) 2 s after launching its
                              tp all_reduce #4, before its dp all_reduce #4 (no core of rank 2).
  crash-exception             rank 1 raises an uncaught RuntimeError after its tp all_reduce #4.
  crash-watchdog-timeout      rank 3 skips its dp all_reduce #4; timeout=15 s on every group and
                              TORCH_NCCL_ASYNC_ERROR_HANDLING=1: every rank's watchdog times out,
                              aborts its communicators and throws (std::terminate: SIGABRT).
  crash-cuda-illegal-address  rank 3 launches its own kernel (torch_crash_kernel.cu through ctypes)
                              that writes 4 TiB past a tensor, on its current stream, before its
                              tp all_reduce #4.
  crash-native-segfault       rank 0 calls native code (torch_crash_native.c through ctypes) that
                              writes through NULL after its tp all_reduce #4; faulthandler is
                              disabled first so the kernel's SIGSEGV (SEGV_MAPERR, address 0x4)
                              reaches the core.
Every crash-* rank runs with TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=2000 (the watchdog sleeps 4x that
before it throws), TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=20, TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN=0
and TORCH_FR_DUMP_TEMP_FILE=<dir>/pt_fr_rank (PyTorch's own dump at the failure).

Program-order hangs: the job hangs; the capture script SIGABRTs every rank.
  order-p2p-skip              pp4: in step 4 rank 1 skips its send of micro-batch 1 to rank 2 and
                              goes on to the world all_reduce; rank 2 waits in its recv, rank 3
                              behind it, rank 0 in the embed all_reduce with rank 3.
  order-split-vs-collective   tpdp without tp/dp groups for 3 steps (world all_reduce only); then
                              ranks 0-2 call dist.new_group for tp (eager: ncclCommSplit of the
                              world communicator), rank 3 skipped it and all-reduces on the world.
  order-lock-inversion        pairs: in step 4 rank 1 issues grad_b then grad_a, rank 0 grad_a then
                              grad_b, with torch.cuda.synchronize() between: deadlock, no skip.
  order-gpu-spin              tpdp: rank 2's GPU runs torch.cuda._sleep(1e13 cycles) on its
                              current stream before its step-4 collectives (host launches them).
  order-p2p-skip-fr-off, order-lock-inversion-fr-off, order-split-vs-collective-fr-off,
  order-gpu-spin-fr-off: the same with TORCH_FR_BUFFER_SIZE=0.

Prints "GROUND_TRUTH {json}" (the last one of a rank is its truth: role origin/culprit/waiter/
survivor, the call it is in, what it launched on each group, the wall time), then
"HANG_POINT_REACHED" before a blocking call, or "CRASH_POINT" just before the failure itself.
"""
import argparse
import ctypes
import datetime
import faulthandler
import json
import os
import signal
import sys
import time
import threading
import traceback

import torch_multigroup as mg

WORLD = 4
MICRO_BATCHES = 2
WATCHDOG_TIMEOUT = datetime.timedelta(seconds=15)
SPIN_CYCLES = 10 ** 13          # about 80 minutes of spin_kernel at 2 GHz
BAD_INDEX = 1 << 40             # float elements past the tensor: 4 TiB, mapped by nothing
# scenario -> (layout, the rank whose failure or deviation the others follow; -1: none)
SCENARIOS = {
    "crash-sigkill": ("tpdp", 2), "crash-exception": ("tpdp", 1), "crash-watchdog-timeout": ("tpdp", 3),
    "crash-cuda-illegal-address": ("tpdp", 3), "crash-native-segfault": ("tpdp", 0),
    "order-p2p-skip": ("pp4", 1), "order-split-vs-collective": ("tpdp", 3),
    "order-lock-inversion": ("pairs", -1), "order-gpu-spin": ("tpdp", 2),
}
VARIANTS = {
    "order-p2p-skip-fr-off": ("order-p2p-skip", {"TORCH_FR_BUFFER_SIZE": "0"}),
    "order-lock-inversion-fr-off": ("order-lock-inversion", {"TORCH_FR_BUFFER_SIZE": "0"}),
    "order-split-vs-collective-fr-off": ("order-split-vs-collective", {"TORCH_FR_BUFFER_SIZE": "0"}),
    "order-gpu-spin-fr-off": ("order-gpu-spin", {"TORCH_FR_BUFFER_SIZE": "0"}),
}
def base_scenario(name):
    """The scenario a variant runs (its name stays the job's, for the ground truth)."""
    return VARIANTS[name][0] if name in VARIANTS else name


CRASH_SETTINGS = {"TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": "2000", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "20",
                  "TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN": "0"}
TIMEOUT_SETTINGS = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--scenario", required=True, choices=sorted(list(SCENARIOS) + list(VARIANTS)))
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--elements", type=int, default=1 << 16, help="float32 elements per tensor")
    parser.add_argument("--fr-dump-dir", default=".", help="where fr_rank<R>.pkl and pt_fr_rank<R> go")
    parser.add_argument("--fr-dump-delay", type=float, default=3.0)
    parser.add_argument("--native-dir", default=".", help="holds libtorch_crash_native.so, libtorch_crash_kernel.so")
    return parser.parse_args(argv)


def settings_for(scenario, fr_dump_dir):
    settings = {}
    if scenario.startswith("crash-"):
        settings.update(CRASH_SETTINGS)
        settings["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(os.path.abspath(fr_dump_dir), "pt_fr_rank")
    if scenario == "crash-watchdog-timeout":
        settings.update(TIMEOUT_SETTINGS)
    return settings


def stamp(extra=None):
    out = {"time": time.time(), "time_utc": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    out.update(extra or {})
    return out


def announce_wait(job, call, role, extra=None):
    """GROUND_TRUTH and HANG_POINT_REACHED before a call that blocks (mg.announce, timed)."""
    mg.announce(job, dict(mg.where_am_i(2), call=call), role, stamp(extra))


def announce_failure(job, call, how, extra=None):
    """GROUND_TRUTH of the origin rank, then CRASH_POINT, just before the failure."""
    failure = {"how": how, "step": mg.DEVIANT_STEP + 1, "python_stack": traceback.format_stack()[:-1]}
    failure.update(extra or {})
    truth = job.truth(dict(mg.where_am_i(2), call=call), "origin", stamp({"failure": failure}))
    print("GROUND_TRUTH " + json.dumps(truth), flush=True)
    print("CRASH_POINT rank=%d how=%s" % (job.rank, how), flush=True)


def native_library(args, name):
    return ctypes.CDLL(os.path.join(os.path.abspath(args.native_dir), name))


def launch_bad_kernel(job, args):
    torch = job.torch
    out = torch.zeros(256, device=job.device)
    index = torch.full((256,), BAD_INDEX, dtype=torch.int64, device=job.device)
    lib = native_library(args, "libtorch_crash_kernel.so")
    lib.ncclscope_demo_launch_bad_scatter.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_void_p]
    announce_failure(job, "ncclscope_demo_launch_bad_scatter", "cuda-illegal-address",
                     {"kernel": "ncclscope_demo_scatter", "out": hex(out.data_ptr()),
                      "bad_address": hex(out.data_ptr() + 4 * BAD_INDEX),
                      "stream": hex(torch.cuda.current_stream().cuda_stream),
                      "before": "tp all_reduce #4"})
    error = lib.ncclscope_demo_launch_bad_scatter(out.data_ptr(), index.data_ptr(), 256,
                                                  torch.cuda.current_stream().cuda_stream)
    print("BAD_KERNEL_LAUNCHED rank=%d launch_error=%d" % (job.rank, error), flush=True)
    return out, index  # keep the tensors alive


def fail_mid_step(job, args):
    """The origin rank's failure after its tp all_reduce #4 (crash-sigkill/-exception/-native-segfault)."""
    if job.scenario == "crash-sigkill":
        announce_failure(job, "os.kill(SIGKILL)", "SIGKILL",
                         {"after": "tp all_reduce #4", "before": "dp all_reduce #4", "delay_s": 2.0})
        time.sleep(2.0)
        os.kill(os.getpid(), signal.SIGKILL)
    if job.scenario == "crash-exception":
        announce_failure(job, "raise RuntimeError", "python-exception",
                         {"exception": "RuntimeError", "after": "tp all_reduce #4", "before": "dp all_reduce #4"})
        raise RuntimeError("batch 3 of step 4 has no labels (rank %d)" % job.rank)
    if job.scenario == "crash-native-segfault":
        lib = native_library(args, "libtorch_crash_native.so")
        announce_failure(job, "ncclscope_demo_segfault", "SIGSEGV",
                         {"native_function": "ncclscope_demo_normalize", "fault_address": "0x4",
                          "after": "tp all_reduce #4", "before": "dp all_reduce #4",
                          "faulthandler": "disabled just before the call: the kernel's siginfo reaches the core"})
        faulthandler.disable()
        lib.ncclscope_demo_segfault()


def deviation_note(scenario):
    if scenario == "crash-watchdog-timeout":
        return {"skipped": "dp all_reduce #4"}
    if scenario == "order-gpu-spin":
        return {"gpu_busy": "torch.cuda._sleep(%d) queued on the current stream before tp all_reduce #4"
                % SPIN_CYCLES, "kernel": "at::cuda::(anonymous namespace)::spin_kernel"}
    return None


def run_tpdp(job, args, hang_point):
    """tp, dp, then world all_reduce per step; crash-*, order-gpu-spin deviate in step 4."""
    scenario, torch = base_scenario(job.scenario), job.torch
    origin = job.rank == job.culprit
    tp_act, dp_grad, keep = job.tensor(), job.tensor(), None
    for step in range(mg.GOOD_STEPS + 1):
        deviant = step == mg.DEVIANT_STEP
        if deviant and origin and scenario == "crash-cuda-illegal-address":
            keep = launch_bad_kernel(job, args)
        if deviant and origin and scenario == "order-gpu-spin":
            torch.cuda._sleep(SPIN_CYCLES)  # the GPU is busy outside NCCL before tp all_reduce #4
        job.all_reduce(tp_act, "tp")
        if deviant and origin:
            fail_mid_step(job, args)
        if not (deviant and origin and scenario == "crash-watchdog-timeout"):
            job.all_reduce(dp_grad, "dp")
        loss = dp_grad[:1].clone()
        job.all_reduce(loss, "world")
        if deviant:
            role = "survivor" if scenario.startswith("crash-") else "waiter"
            role = "origin" if origin and scenario.startswith("crash-") else "culprit" if origin else role
            announce_wait(job, "loss.item()", role, deviation_note(scenario) if origin else None)
            hang_point.set()
        loss.item()
    del keep
    print("STEPS_COMPLETED rank=%d" % job.rank, flush=True)
    mg.park_forever()


def run_split_vs_collective(job, hang_point):
    """World all_reduce for 3 steps, then tp groups: rank 3 skips new_group, all-reduces on the world."""
    grad = job.tensor()
    for step in range(mg.GOOD_STEPS):
        job.all_reduce(grad, "world")
        grad[:1].clone().item()
    if job.rank == job.culprit:
        loss = grad[:1].clone()
        job.all_reduce(loss, "world")
        announce_wait(job, "loss.item()", "culprit", {"skipped": "dist.new_group (tp)"})
        hang_point.set()
        loss.item()
    else:
        announce_wait(job, "dist.new_group", "waiter", {"group": "tp0 [0, 1] (first of tp)"})
        hang_point.set()
        job.new_groups("tp", [[0, 1], [2, 3]])
        print("NEW_GROUP_RETURNED rank=%d" % job.rank, flush=True)
    mg.park_forever()


def run_pp4(job, hang_point):
    """Forward pipeline 0->1->2->3, MICRO_BATCHES per step, embed all_reduce [0,3], world loss."""
    stage, last = job.rank, WORLD - 1
    embed_grad = job.tensor()
    for step in range(mg.GOOD_STEPS + 1):
        deviant = step == mg.DEVIANT_STEP
        activation = job.tensor(float(stage))
        for micro_batch in range(MICRO_BATCHES):
            if stage > 0:
                job.recv(activation, stage - 1)
            output = activation * 2
            skip = deviant and job.rank == job.culprit and micro_batch == MICRO_BATCHES - 1
            if stage < last and not skip:
                job.send(output, stage + 1)
        if stage in (0, last):
            job.all_reduce(embed_grad, "embed")
        loss = activation[:1].clone()
        job.all_reduce(loss, "world")
        if deviant:
            extra = {"skipped": "send of micro-batch %d to rank %d" % (MICRO_BATCHES - 1, stage + 1)} \
                if job.rank == job.culprit else None
            announce_wait(job, "loss.item()", "culprit" if job.rank == job.culprit else "waiter", extra)
            hang_point.set()
        loss.item()
    mg.park_forever()


def run_pairs(job, hang_point):
    """grad_a then grad_b with a host synchronize between; rank 1 reverses the order in step 4."""
    torch = job.torch
    grads = {"grad_a": job.tensor(), "grad_b": job.tensor()}
    for step in range(mg.GOOD_STEPS + 1):
        deviant = step == mg.DEVIANT_STEP
        order = ["grad_b", "grad_a"] if deviant and job.rank == 1 else ["grad_a", "grad_b"]
        for index, name in enumerate(order):
            job.all_reduce(grads[name], name)
            if deviant and index == 0 and job.rank in (0, 1):
                announce_wait(job, "torch.cuda.synchronize()", "cycle",
                              {"order": order, "waits_in": name})
                hang_point.set()
            torch.cuda.synchronize()  # e.g. a gradient-norm check on the host
        loss = grads["grad_b"][:1].clone()
        job.all_reduce(loss, "world")
        if deviant:
            announce_wait(job, "loss.item()", "waiter", {"order": order})
            hang_point.set()
        loss.item()
    mg.park_forever()


def make_groups(job):
    if job.layout == "tpdp" and base_scenario(job.scenario) != "order-split-vs-collective":
        job.new_groups("tp", [[0, 1], [2, 3]])
        job.new_groups("dp", [[0, 2], [1, 3]])
    elif job.layout == "pp4":
        job.new_groups("embed", [[0, WORLD - 1]])
    elif job.layout == "pairs":
        job.new_groups("grad_a", [[0, 1], [2, 3]])
        job.new_groups("grad_b", [[0, 1], [2, 3]])


def main(argv):
    args = parse_args(argv)
    variant = args.scenario
    if variant in VARIANTS:
        args.scenario, settings = VARIANTS[variant]
        os.environ.update(settings)
    os.environ.update(settings_for(args.scenario, args.fr_dump_dir))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if world != WORLD:
        sys.exit("%s needs WORLD_SIZE=%d" % (variant, WORLD))
    layout, culprit = SCENARIOS[args.scenario]
    hang_point = threading.Event()
    mg.start_fr_dumper(rank, args.fr_dump_dir, args.fr_dump_delay, hang_point)
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(args.device)
    timeout = WATCHDOG_TIMEOUT if args.scenario == "crash-watchdog-timeout" else datetime.timedelta(minutes=30)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", args.device),
                            timeout=timeout)
    job = mg.Job(variant, rank, world, args.device, args.elements, layout=layout, culprit=culprit,
                 group_timeout=timeout)
    make_groups(job)
    print("JOB_STARTED rank=%d scenario=%s %s" % (rank, variant, json.dumps(stamp())), flush=True)
    if layout == "pp4":
        run_pp4(job, hang_point)
    elif layout == "pairs":
        run_pairs(job, hang_point)
    elif args.scenario == "order-split-vs-collective":
        run_split_vs_collective(job, hang_point)
    else:
        run_tpdp(job, args, hang_point)


if __name__ == "__main__":
    main(sys.argv[1:])
