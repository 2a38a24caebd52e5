"""Multi-group PyTorch jobs that hang (issue 13, item 7): TP x DP and PP x DP, one deviating rank.

One process per rank, env RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (and, several ranks on one
GPU, a different NCCL_HOSTID per rank). Every rank runs the same training loop; the scenario makes
one rank deviate the way real jobs do:

  tpdp-fewer-steps   4 ranks, TP 2 x DP 2: rank 3 leaves the loop one step early and enters the
                     world barrier; ranks 0-2 block in step 4 (tp/dp all_reduce, then .item()).
  tpdp-rank-died     4 ranks: rank 2 is SIGKILLed in step 4 before its collectives, while the
                     others wait in theirs (no core of rank 2).
  tpdp-startup       4 ranks: rank 3 never calls init_process_group (sleeps); the others wait in
                     the rendezvous / NCCL bootstrap. No communicator exists yet.
  tpdp-size-mismatch 4 ranks: in step 4 rank 3 all-reduces twice as many elements on its dp group
                     as its peer rank 1 (a silent size mismatch: same op, same count of calls).
  tpdp-fewer-steps-timing  tpdp-fewer-steps with TORCH_NCCL_ENABLE_TIMING=1: the recorder then
                     tells "started" from "scheduled" (rank 2's dp all_reduce queues behind its
                     tp all_reduce on the GPU).
  tpdp-fr-off        tpdp-fewer-steps with TORCH_FR_BUFFER_SIZE=0: the flight recorder is off.
  ppdp-skip-send     8 ranks, PP 4 x DP 2: in step 4 stage 1 of replica 1 (rank 3) skips its send
                     of micro-batch 2 to stage 2 (rank 5).
  ppdp-microbatches  8 ranks: in step 4 stage 1 of replica 1 (rank 3) computes 3 micro-batches
                     where every other rank computes 4.

Prints "GROUND_TRUTH {json}", then "HANG_POINT_REACHED" just before the call it blocks in. A
thread then writes PyTorch's own flight-recorder dump (fr_rank<R>.pkl, the pickle of
torch._C._distributed_c10d._dump_nccl_trace()) and prints "FR_DUMPED". Run under
`python -X faulthandler`: SIGABRT then prints every thread's Python stack (ground truth for the
Python frames) before the core is written.
"""
import argparse
import datetime
import json
import os
import signal
import sys
import threading
import time

# PyTorch settings a scenario may set; the ground truth records the ones in effect.
TORCH_SETTINGS = ("TORCH_NCCL_ENABLE_TIMING", "TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                  "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
                  "TORCH_NCCL_ENABLE_MONITORING", "TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN",
                  "TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_FR_DUMP_TEMP_FILE")
GOOD_STEPS = 3          # steps every rank completes before the deviation
MICRO_BATCHES = 4
DEVIANT_STEP = GOOD_STEPS  # 0-based: the 4th step
LAYOUTS = {"tpdp": {"world": 4, "tp": 2}, "ppdp": {"world": 8, "pp": 4}}
SCENARIOS = {
    "tpdp-fewer-steps": ("tpdp", 3), "tpdp-rank-died": ("tpdp", 2), "tpdp-startup": ("tpdp", 3),
    "tpdp-size-mismatch": ("tpdp", 3),
    "ppdp-skip-send": ("ppdp", 3), "ppdp-microbatches": ("ppdp", 3),
}
# Variants: the same job under another PyTorch setting (set before torch reads it).
VARIANTS = {
    "tpdp-fewer-steps-timing": ("tpdp-fewer-steps", {"TORCH_NCCL_ENABLE_TIMING": "1"}),
    "tpdp-fr-off": ("tpdp-fewer-steps", {"TORCH_FR_BUFFER_SIZE": "0"}),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--scenario", required=True, choices=sorted(list(SCENARIOS) + list(VARIANTS)))
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--elements", type=int, default=1 << 16, help="float32 elements per tensor")
    parser.add_argument("--fr-dump-dir", default=".", help="where fr_rank<R>.pkl is written")
    parser.add_argument("--fr-dump-delay", type=float, default=3.0)
    return parser.parse_args(argv)


def where_am_i(depth=1):
    frame = sys._getframe(depth)
    return {"file": os.path.basename(frame.f_code.co_filename), "line": frame.f_lineno,
            "function": frame.f_code.co_name}


class Job:
    """The rank's groups and its own count of what it launched on each (the ground truth)."""

    def __init__(self, scenario, rank, world, device, elements, layout=None, culprit=None, group_timeout=None):
        import torch
        import torch.distributed as dist
        self.torch, self.dist = torch, dist
        self.scenario, self.rank, self.world = scenario, rank, world
        self.layout, self.culprit = (layout, culprit) if layout else SCENARIOS[scenario]
        self.group_timeout = group_timeout  # a datetime.timedelta given to every new_group, or None
        self.device = torch.device("cuda", device)
        self.elements = elements
        self.groups = {}      # name -> {"pg", "ranks"} for the groups this rank is in
        self.launched = {}    # group name -> {op: count}
        self.events = []      # [(group, op, peer)] in program order

    def new_groups(self, name, rank_lists):
        # Every rank creates every group, in the same order (torch.distributed requires it).
        for index, ranks in enumerate(rank_lists):
            desc = "%s%d" % (name, index)
            options = {"timeout": self.group_timeout} if self.group_timeout else {}
            try:
                pg = self.dist.new_group(ranks, group_desc=desc, **options)
            except TypeError:  # a PyTorch without group_desc
                pg = self.dist.new_group(ranks, **options)
            if self.rank in ranks:
                self.groups[name] = {"pg": pg, "ranks": ranks, "desc": desc}

    def count(self, group, op, peer=None):
        per_group = self.launched.setdefault(group, {})
        key = op if peer is None else "%s->%d" % (op, peer) if op == "send" else "%s<-%d" % (op, peer)
        per_group[key] = per_group.get(key, 0) + 1
        self.events.append([group, op, peer])

    def all_reduce(self, tensor, group):
        pg = None if group == "world" else self.groups[group]["pg"]
        self.dist.all_reduce(tensor, group=pg)
        self.count(group, "all_reduce")

    def send(self, tensor, peer):
        self.dist.send(tensor, dst=peer)
        self.count("p2p", "send", peer)

    def recv(self, tensor, peer):
        self.dist.recv(tensor, src=peer)
        self.count("p2p", "recv", peer)

    def tensor(self, value=1.0, elements=None):
        return self.torch.full((elements or self.elements,), value, device=self.device)

    def comm_address(self, group):
        pg = self.dist.group.WORLD if group == "world" else self.groups[group]["pg"]
        try:
            return hex(pg._get_backend(self.device)._comm_ptr())
        except Exception as error:  # a private API: say why it is missing, never fail the hang
            return "unknown: %s" % error

    def truth(self, where, role, extra=None):
        groups = [{"name": "world", "ranks": list(range(self.world)), "desc": "default_pg",
                   "address": self.comm_address("world")}]
        for name, group in sorted(self.groups.items()):
            groups.append({"name": name, "ranks": group["ranks"], "desc": group["desc"],
                           "address": self.comm_address(name)})
        truth = {"scenario": self.scenario, "layout": self.layout, "rank": self.rank,
                 "nranks": self.world, "pid": os.getpid(), "role": role,
                 "expected_culprit_rank": self.culprit, "hang_site": where,
                 "torch_version": self.torch.__version__,
                 "nccl_version": ".".join(str(v) for v in self.torch.cuda.nccl.version()),
                 "groups": groups, "launched": self.launched, "events_tail": self.events[-12:],
                 "elements": self.elements,
                 "torch_settings": {key: os.environ[key] for key in TORCH_SETTINGS if key in os.environ}}
        truth.update(extra or {})
        return truth


def announce(job, where, role, extra=None):
    print("GROUND_TRUTH " + json.dumps(job.truth(where, role, extra)), flush=True)
    print("HANG_POINT_REACHED rank=%d where=%s" % (job.rank, where["call"]), flush=True)


def start_fr_dumper(rank, directory, delay_s, hang_point):
    """Writes PyTorch's own flight-recorder dump once the rank reached its hang point."""
    def dump():
        hang_point.wait()
        time.sleep(delay_s)
        try:
            import torch
            blob = torch._C._distributed_c10d._dump_nccl_trace()
            path = os.path.join(directory, "fr_rank%d.pkl" % rank)
            with open(path + ".tmp", "wb") as out:
                out.write(blob)
            os.rename(path + ".tmp", path)
            print("FR_DUMPED rank=%d bytes=%d" % (rank, len(blob)), flush=True)
        except Exception as error:
            print("FR_DUMP_FAILED rank=%d %r" % (rank, error), flush=True)
    thread = threading.Thread(target=dump, name="fr-dumper", daemon=True)
    thread.start()


def park_forever():
    while True:
        signal.pause()


def tpdp_step(job, step, tp_act, dp_grad):
    job.all_reduce(tp_act, "tp")      # tensor parallel: partial activations
    job.all_reduce(dp_grad, "dp")     # data parallel: gradients
    return dp_grad.sum()


def run_tpdp(job, hang_point):
    tp_act, dp_grad = job.tensor(), job.tensor()
    for step in range(GOOD_STEPS + 1):
        if job.scenario == "tpdp-size-mismatch" and job.rank == job.culprit and step == DEVIANT_STEP:
            dp_grad = job.tensor(elements=2 * job.elements)  # this rank's gradient bucket differs
        if job.scenario == "tpdp-fewer-steps" and job.rank == job.culprit and step == DEVIANT_STEP:
            break  # this rank's data loader ran out one step early
        if job.scenario == "tpdp-rank-died" and job.rank == job.culprit and step == DEVIANT_STEP:
            announce(job, dict(where_am_i(), call="os.kill(SIGKILL)"), "culprit",
                     {"dies": "SIGKILL 3 s into step 4, before its collectives: the others wait in them"})
            time.sleep(3.0)
            os.kill(os.getpid(), signal.SIGKILL)
        loss = tpdp_step(job, step, tp_act, dp_grad)
        if step == DEVIANT_STEP:
            role = "culprit" if job.scenario == "tpdp-size-mismatch" and job.rank == job.culprit else "waiter"
            announce(job, dict(where_am_i(), call="loss.item()"), role, {"dp_elements": dp_grad.numel()})
            hang_point.set()
            loss.item()  # blocks: this step's collectives never finish
            print("COLLECTIVE_COMPLETED rank=%d" % job.rank, flush=True)
            park_forever()
        loss.item()
    announce(job, dict(where_am_i(), call="dist.barrier()"), "culprit")
    hang_point.set()
    job.dist.barrier()  # the early leaver: waits for ranks still in step 4
    job.count("world", "barrier")
    print("COLLECTIVE_COMPLETED rank=%d" % job.rank, flush=True)
    park_forever()


def pp_stage(job):
    return job.rank // 2, job.rank % 2   # rank = stage * DP + replica


def ppdp_step(job, step, micro_batches):
    stage, replica = pp_stage(job)
    last = LAYOUTS["ppdp"]["pp"] - 1
    prev_rank, next_rank = (stage - 1) * 2 + replica, (stage + 1) * 2 + replica
    activation = job.tensor(float(stage))
    for micro_batch in range(micro_batches):
        if stage > 0:
            job.recv(activation, prev_rank)
        output = activation * 2
        skip = (job.scenario == "ppdp-skip-send" and job.rank == job.culprit and step == DEVIANT_STEP
                and micro_batch == 2)
        if stage < last and not skip:
            job.send(output, next_rank)
    grad = job.tensor(float(step))
    job.all_reduce(grad, "dp")
    loss = grad[:1].clone()
    job.all_reduce(loss, "world")     # the loss every rank logs
    return loss


def run_ppdp(job, hang_point):
    for step in range(GOOD_STEPS + 1):
        micro_batches = MICRO_BATCHES
        if job.scenario == "ppdp-microbatches" and job.rank == job.culprit and step == DEVIANT_STEP:
            micro_batches = MICRO_BATCHES - 1  # this rank's batch split differs
        loss = ppdp_step(job, step, micro_batches)
        if step == DEVIANT_STEP:
            announce(job, dict(where_am_i(), call="loss.item()"),
                     "culprit" if job.rank == job.culprit else "waiter", {"micro_batches": micro_batches})
            hang_point.set()
            loss.item()  # blocks: the pipeline of replica 1 never drains
            print("COLLECTIVE_COMPLETED rank=%d" % job.rank, flush=True)
            park_forever()
        loss.item()


def main(argv):
    args = parse_args(argv)
    variant = args.scenario
    if variant in VARIANTS:
        args.scenario, settings = VARIANTS[variant]
        os.environ.update(settings)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    layout, culprit = SCENARIOS[args.scenario]
    if world != LAYOUTS[layout]["world"]:
        sys.exit("%s needs WORLD_SIZE=%d" % (args.scenario, LAYOUTS[layout]["world"]))
    hang_point = threading.Event()
    start_fr_dumper(rank, args.fr_dump_dir, args.fr_dump_delay, hang_point)
    if args.scenario == "tpdp-startup" and rank == culprit:
        truth = {"scenario": args.scenario, "layout": layout, "rank": rank, "nranks": world,
                 "pid": os.getpid(), "role": "culprit", "expected_culprit_rank": culprit,
                 "hang_site": dict(where_am_i(), call="time.sleep"), "groups": [], "launched": {}}
        print("GROUND_TRUTH " + json.dumps(truth), flush=True)
        print("HANG_POINT_REACHED rank=%d where=time.sleep" % rank, flush=True)
        time.sleep(3600)  # stuck before it ever joins the job (e.g. a slow data loader)
        return
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(args.device)
    if args.scenario == "tpdp-startup":
        truth = {"scenario": args.scenario, "layout": layout, "rank": rank, "nranks": world,
                 "pid": os.getpid(), "role": "waiter", "expected_culprit_rank": culprit,
                 "hang_site": dict(where_am_i(), call="dist.init_process_group"), "groups": [], "launched": {},
                 "torch_version": torch.__version__}
        print("GROUND_TRUTH " + json.dumps(truth), flush=True)
        print("HANG_POINT_REACHED rank=%d where=init_process_group" % rank, flush=True)
        dist.init_process_group("nccl", rank=rank, world_size=world,
                                device_id=torch.device("cuda", args.device),
                                timeout=datetime.timedelta(minutes=30))
        print("COLLECTIVE_COMPLETED rank=%d (init returned)" % rank, flush=True)
        park_forever()
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", args.device),
                            timeout=datetime.timedelta(minutes=30))
    job = Job(args.scenario, rank, world, args.device, args.elements)
    if layout == "tpdp":
        job.new_groups("tp", [[0, 1], [2, 3]])
        job.new_groups("dp", [[0, 2], [1, 3]])
        run_tpdp(job, hang_point)
    else:
        job.new_groups("dp", [[0, 1], [2, 3], [4, 5], [6, 7]])   # same stage, two replicas
        run_ppdp(job, hang_point)


if __name__ == "__main__":
    main(sys.argv[1:])
