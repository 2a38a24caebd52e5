#!/usr/bin/env python3
"""Writes synthetic `ncclscope.state/1` snapshots, one file per rank, shaped like
`ncclscope state --json` output (indent 2), for the triage bench and tests.

  gen_snapshots.py --ranks 4096 --out DIR [--scenario missing-collective]
                   [--culprit R] [--comms 2] [--channels 8] [--frames 12] [--threads 4]

Scenarios: no-hang, missing-collective, collective-mismatch, p2p-cycle,
stuck-before-launch, abort (the culprit's snapshot holds no communicator),
split (the hang is on the second communicator, ranks reversed there),
unrelated (a second job's snapshot is mixed in), corrupt (one file truncated),
tp-pp-dp (4 communicators per rank: world, TP 8, PP 4, DP ranks/32; the culprit skipped an
AllReduce on its TP group, the DP groups of its TP peers wait for data from them, and the
culprit itself waits for data from a TP peer in the world AllReduce: a cycle only it breaks),
gpu-spin (issue 33 item 4: 4 ranks, TP 2 x DP 2 as tests/scenarios/torch_crash_order.py's
order-gpu-spin; every rank launched AllReduce #4 on tp, dp and world; the culprit's GPU runs
PyTorch's spin_kernel, so it has nothing in flight while its tp and dp peers receive from it;
also writes rank-<culprit>.kernels.json, the culprit's cuda-gdb view: no NCCL kernel, the
spin_kernel resident).
"""
import argparse
import zlib
import json
import os
import sys

WORLD_HASH = 0x6DB0A96D9CB7FC37
SUB_HASH = 0x1234ABCD5678EF01
SPIN_TP_HASH, SPIN_DP_HASH = 0x5A1E000000000010, 0x5A1E000000000020
NAMES = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
NCCL = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"


class Shared:
    """A subtree that many documents hold unchanged (a thread's frames, a small communicator's
    channels): TemplateWriter walks it once."""

    def __init__(self, value):
        self.value = value
        self.walked = None  # (shape, scalars)


def shared(cache, key, build):
    if key not in cache:
        cache[key] = Shared(build())
    return cache[key]


FRAME_LISTS = {}
CHANNEL_LISTS = {}


def frame(function, module, offset=16):
    return {"pc": "0x7f%010x" % (zlib.crc32(function.encode()) % (1 << 36)), "function": function,
            "module": module, "offset": offset}


def app_frames(depth):
    frames = [frame("train_step_%d" % d, "/app/train") for d in range(depth)]
    return frames + [frame("main", "/app/train"), frame("__libc_start_main", LIBC), frame("_start", "/app/train")]


def main_thread(tid, role, depth):
    # depth: total frames wanted; the leaf part takes 1-3 of them.
    if role == "waiting":
        leaf = [frame("ioctl", LIBC), frame("cuStreamSynchronize", "/usr/lib/libcuda.so.1"),
                frame("cudaStreamSynchronize", CUDART)]
        blocked = "cudaStreamSynchronize"
    elif role == "group-end":
        leaf = [frame("poll", LIBC), frame("ncclGroupEndInternal", NCCL), frame("ncclGroupEnd", NCCL)]
        blocked = "nccl-group-end"
    elif role == "culprit":
        leaf = [frame("pause", LIBC)]
        blocked = "user-code"
    else:
        leaf = [frame("clock_nanosleep", LIBC), frame("nanosleep", LIBC)]
        blocked = "sleep"
    frames = shared(FRAME_LISTS, (role, depth), lambda: leaf + app_frames(max(0, depth - len(leaf) - 3)))
    return {"tid": tid, "name": "train", "state": "S", "frames": frames, "blocked_in": blocked}


def service_thread(tid, name, blocked, function, depth):
    frames = shared(FRAME_LISTS, (function, depth), lambda: service_frames(function, depth))
    return {"tid": tid, "name": name, "state": "S", "frames": frames, "blocked_in": blocked}


def service_frames(function, depth):
    frames = [frame("poll", LIBC), frame(function, NCCL)]
    frames += [frame("%s_helper_%d" % (function, d), NCCL) for d in range(max(0, depth - 4))]
    return frames + [frame("start_thread", LIBC), frame("clone3", LIBC)]


def channels(rank, nranks, count):
    if nranks <= 4096:  # the channels of small communicators repeat across ranks
        return shared(CHANNEL_LISTS, (rank, nranks, count), lambda: channel_list(rank, nranks, count))
    return channel_list(rank, nranks, count)


def channel_list(rank, nranks, count):
    out = []
    for c in range(count):
        down = [r if r < nranks else -1 for r in (2 * rank + 1, 2 * rank + 2)] + [-1]
        out.append({"id": c,
                    "ring": {"prev": (rank - 1) % nranks, "next": (rank + 1) % nranks, "index": rank,
                             "user_ranks": []},
                    "tree": {"up": -1 if rank == 0 else (rank - 1) // 2, "down": down}})
    return out


def communicator(hash_value, rank, nranks, counts, nchannels, address):
    return {
        "address": "0x%x" % address, "comm_hash": "0x%x" % hash_value, "rank": rank, "nranks": nranks,
        "cuda_dev": rank % 8, "nvml_dev": rank % 8, "bus_id": "0000:%02x:00.0" % (0x19 + rank % 8),
        "node": rank // 8, "nnodes": max(1, nranks // 8), "local_rank": rank % 8,
        "local_ranks": min(8, nranks), "nchannels": nchannels,
        "seq_launched": dict(zip(NAMES, counts)), "coll_op_count": sum(counts), "op_count": 0,
        "p2p_op_count": {"total": 0, "per_channel": [0] * nchannels},
        "health": {"async_result": "ncclSuccess", "abort_flag": False, "destroy_flag": False,
                   "init_state": "ncclSuccess", "finalize_called": False, "revoked": False},
        "channels": channels(rank, nranks, nchannels),
        "proxy_ops": [],
        "planned": {"colls": [], "p2p": [], "n_tasks_coll": 0, "n_tasks_p2p": 0,
                    "unlaunched_plans": 0, "in_group": False},
        "unavailable": {}, "warnings": []}


def proxy_op(collective, pattern, peer, channel=0):
    return {"address": "0x7f00000f0000", "op_count": 6, "collective": collective, "pattern": pattern,
            "protocol": "Simple", "nsubs": 1, "done": 0,
            "subs": [{"channel": channel, "peer": peer, "nsteps": 8, "posted": 4, "received": 0,
                      "transmitted": 4, "done": 2}]}


def entered_subs(peer):
    """A ring step of a GPU that entered the collective: its send to `peer` transmitted 4 of 8
    steps, its receive from `peer` got nothing."""
    return [dict(data_sub(peer, True), posted=4, transmitted=4), data_sub(peer, False)]


def data_sub(peer, send, channel=0):
    return {"channel": channel, "peer": peer, "nsteps": 8, "posted": 8, "received": 0,
            "transmitted": 0, "done": 0, "send": send}


def tp_pp_dp_comms(args, rank):
    """World, TP (8), PP (4), DP (ranks/32): rank = replica * 32 + stage * 8 + tp_index."""
    n, culprit = args.ranks, args.culprit
    tp_index, stage, replica = rank % 8, (rank // 8) % 4, rank // 32
    tp_group, pp_group = rank // 8, replica * 8 + tp_index
    base = [0, 0, 0, 0, 7]
    world = communicator(WORLD_HASH, rank, n, list(base), args.channels, 0x7f1000000000 + rank * 0x1000)
    tp = communicator(0x7000000000000000 + tp_group, tp_index, 8, list(base), args.channels, 0x7f2000000000 + rank * 0x1000)
    pp = communicator(0x7100000000000000 + pp_group, stage, 4, list(base), args.channels, 0x7f3000000000 + rank * 0x1000)
    dp = communicator(0x7200000000000000 + (rank % 32), replica, n // 32, list(base), args.channels,
                      0x7f4000000000 + rank * 0x1000)
    role = "waiting"
    culprit_tp_group = culprit // 8
    tp_peer = culprit ^ 1
    if tp_group == culprit_tp_group and rank != culprit:
        tp["seq_launched"]["AllReduce"] += 1  # the culprit never launched this one
        tp["proxy_ops"].append({"op_count": 8, "collective": "AllReduce", "pattern": "ncclPatternRing",
                                "subs": [data_sub(culprit % 8, False)]})
        # Its DP all_reduce is queued behind: the DP peers wait for data it has not sent.
        dp["proxy_ops"].append({"op_count": 8, "collective": "AllReduce", "pattern": "ncclPatternRing",
                                "subs": [data_sub(r, True) for r in range(n // 32) if r != replica]})
    elif (rank % 32) // 8 == (culprit % 32) // 8 and rank % 8 != culprit % 8 and tp_group != culprit_tp_group:
        # A DP peer of one of the culprit's TP peers: waits for data from it.
        peer_replica = culprit // 32
        dp["proxy_ops"].append({"op_count": 8, "collective": "AllReduce", "pattern": "ncclPatternRing",
                                "subs": [data_sub(peer_replica, False)]})
    elif rank == culprit:
        world["proxy_ops"].append({"op_count": 9, "collective": "AllReduce", "pattern": "ncclPatternRing",
                                   "subs": [data_sub(tp_peer, False)]})
    else:
        role = "idle"
    if rank == tp_peer:
        world["proxy_ops"].append({"op_count": 9, "collective": "AllReduce", "pattern": "ncclPatternRing",
                                   "subs": [data_sub(culprit, True)]})
    return [world, tp, pp, dp], role


def tpdp_spin_comms(args, rank):
    """World, tp [0,1] [2,3], dp [0,2] [1,3]; AllReduce launched 4 times on each. In flight: the
    ranks whose step-4 collective with the culprit started (their recv from it, nothing received)."""
    tp_rank, dp_rank = rank % 2, rank // 2
    comms = [communicator(WORLD_HASH, rank, 4, [0, 0, 0, 0, 4], args.channels, 0x7f1000000000),
             communicator(SPIN_TP_HASH + rank // 2, tp_rank, 2, [0, 0, 0, 0, 4], args.channels, 0x7f2000000000),
             communicator(SPIN_DP_HASH + rank % 2, dp_rank, 2, [0, 0, 0, 0, 4], args.channels, 0x7f3000000000)]
    for comm in comms:
        comm["cuda_dev"] = 0  # one GPU, one NCCL_HOSTID per rank, as the capture runs it
    culprit = args.culprit
    if rank != culprit and rank // 2 == culprit // 2:   # its tp peer: tp #4 started
        comms[1]["proxy_ops"].append(dict(proxy_op("AllReduce", "ncclPatternRing", 1 - tp_rank),
                                          subs=entered_subs(1 - tp_rank)))
    if rank != culprit and rank % 2 == culprit % 2:     # its dp peer: dp #4 started
        comms[2]["proxy_ops"].append(dict(proxy_op("AllReduce", "ncclPatternRing", 1 - dp_rank),
                                          subs=entered_subs(1 - dp_rank)))
    if rank % 2 != culprit % 2 and rank // 2 != culprit // 2:  # tp done with a free peer; dp waits on one held up
        comms[2]["proxy_ops"].append(dict(proxy_op("AllReduce", "ncclPatternRing", 1 - dp_rank),
                                          subs=entered_subs(1 - dp_rank)))
    return comms, "waiting"


def spin_kernel_view(culprit):
    """The culprit's `nccl-kernels --json` (ncclscope.kernels/1): no NCCL kernel; PyTorch's
    torch.cuda._sleep kernel resident, as cuda-gdb 13's `info cuda kernels` lists it."""
    tp_hash, dp_hash = SPIN_TP_HASH + culprit // 2, SPIN_DP_HASH + culprit % 2
    comms = [{"address": "0x7f%d000000000" % (i + 1), "comm_hash": "0x%x" % h, "rank": r, "nranks": n,
              "cuda_dev": 0, "device": None}
             for i, (h, r, n) in enumerate([(WORLD_HASH, culprit, 4), (tp_hash, culprit % 2, 2), (dp_hash, culprit // 2, 2)])]
    queued = [dict(comm, seq_launched={"AllReduce": 4}, nccl_kernel_resident=False, relation="inferred") for comm in comms]
    spin = {"kernel": 0, "device": 0, "grid": 1201, "status": "Active", "grid_dim": "(1,1,1)", "block_dim": "(1,1,1)",
            "invocation": "at::cuda::(anonymous namespace)::spin_kernel()", "focus": True,
            "name": "at::cuda::(anonymous namespace)::spin_kernel", "stream": None, "resident_since": None,
            "unavailable": {"stream": "cuda-gdb's info cuda kernels shows no stream",
                            "resident_since": "cuda-gdb shows no launch time"},
            "queued_behind": queued}
    return {"schema": "ncclscope.kernels/1", "tool": {"name": "ncclscope", "version": "0.1.0"},
            "target": {"kind": "callback", "pid": 20000 + culprit}, "nccl": {"version": "2.28.9"},
            "kernels": [], "other_kernels": [spin], "total_kernels": 1, "communicators": comms, "errors": []}


def rank_document(args, rank):
    n, culprit, scenario = args.ranks, args.culprit, args.scenario
    pid = 10000 + rank
    is_culprit = rank == culprit
    base = [0, 0, 3, 0, 7]
    world_counts, sub_counts = list(base), list(base)
    role = "idle"
    comms = [communicator(WORLD_HASH, rank, n, world_counts, args.channels, 0x7f1000000000 + rank * 0x1000)]
    if args.comms > 1:
        comms.append(communicator(SUB_HASH, n - 1 - rank, n, sub_counts, args.channels,
                                  0x7f2000000000 + rank * 0x1000))
    world = comms[0]
    if scenario in ("missing-collective", "abort"):
        role = "culprit" if is_culprit else "waiting"
        if not is_culprit:
            world["seq_launched"]["AllGather"] += 1
            world["proxy_ops"].append(proxy_op("AllGather", "ncclPatternRing", -1))
        if scenario == "abort" and is_culprit:
            comms = []
    elif scenario == "collective-mismatch":
        role = "waiting"
        if is_culprit:
            world["seq_launched"]["ReduceScatter"] += 1
        else:
            world["seq_launched"]["AllReduce"] += 1
    elif scenario == "p2p-cycle":
        role = "waiting"
        world["proxy_ops"].append(proxy_op("Send", "ncclPatternSend", (rank + 1) % n))
    elif scenario == "stuck-before-launch":
        role = "culprit" if is_culprit else "group-end"
        if not is_culprit:
            world["planned"]["n_tasks_coll"] = 1
            world["planned"]["colls"].append({"collective": "AllReduce", "count": 1024,
                                              "datatype": "ncclFloat32", "op": "ncclSum", "root": 0})
    elif scenario == "tp-pp-dp":
        comms, role = tp_pp_dp_comms(args, rank)
    elif scenario == "gpu-spin":
        comms, role = tpdp_spin_comms(args, rank)
    elif scenario == "split" and len(comms) > 1:
        role = "culprit" if is_culprit else "waiting"
        if not is_culprit:
            comms[1]["seq_launched"]["AllReduce"] += 1
    for comm in comms:
        comm["coll_op_count"] = sum(comm["seq_launched"].values())
    depth = args.frames
    threads = [main_thread(pid, role, depth)]
    service = [("ncclProxy", "nccl-proxy-progress", "ncclProxyProgress"),
               ("ncclProxySvc", "nccl-proxy-service", "ncclProxyService"),
               ("ncclBootstrap", "nccl-bootstrap", "bootstrapRecv"),
               ("cuda-EvtHandlr", "poll/epoll", "cudaEventHandler")]
    for t in range(max(0, args.threads - 1)):
        name, blocked, function = service[t % len(service)]
        threads.append(service_thread(pid + 1 + t, name, blocked, function, depth))
    return {
        "schema": "ncclscope.state/1",
        "tool": {"name": "ncclscope", "version": "0.1.0"},
        "target": {"kind": "core", "path": "/cores/core.%d" % pid, "pid": pid, "executable": "/app/train"},
        "host": {"hostname": "node%d" % (rank // 8)},
        "nccl": {"version": "2.28.9", "library": NCCL,
                 "build_id": "9fcf74d93a8c3605bf7718f594d0a24366e38536",
                 "layout_source": "dwarf:" + NCCL, "build_id_mismatch": False},
        "discovery": {"method": "registry", "regions_scanned": 0, "bytes_scanned": 0,
                      "candidates": len(comms), "rejected": []},
        "communicators": comms,
        "threads": threads,
        "errors": []}


class TemplateWriter:
    """json.dumps(document, indent=2), fast for many documents of few shapes: each shape (the
    keys and list lengths, scalars aside) is dumped once with a marker for every scalar, and
    each document fills its shape's template with its own scalars by % formatting."""

    MARKER = "@@scalar@@"

    def __init__(self):
        self.templates = {}
        self.encoded = {}  # scalar -> its JSON text (strings repeat across ranks)

    def encode(self, value):
        key = (type(value), value)
        text = self.encoded.get(key)
        if text is None:
            text = self.encoded[key] = json.dumps(value)
        return text

    def shape(self, value, scalars):
        kind = type(value)
        if kind is dict:
            return tuple([(key, self.shape(item, scalars)) for key, item in value.items()])
        if kind is list:
            return ("[", tuple([self.shape(item, scalars) for item in value]))
        if kind is int:
            scalars.append(str(value))
            return 0
        if kind is Shared:
            if value.walked is None:
                own = []
                value.walked = (self.shape(value.value, own), own)
            scalars.extend(value.walked[1])
            return value.walked[0]
        scalars.append(self.encode(value))
        return 0

    def marked(self, value):
        kind = type(value)
        if kind is dict:
            return {key: self.marked(item) for key, item in value.items()}
        if kind is list:
            return [self.marked(item) for item in value]
        if kind is Shared:
            return self.marked(value.value)
        return self.MARKER

    def dumps(self, document):
        scalars = []
        shape = self.shape(document, scalars)
        template = self.templates.get(shape)
        if template is None:
            text = json.dumps(self.marked(document), indent=2).replace("%", "%%")
            template = self.templates[shape] = text.replace(json.dumps(self.MARKER), "%s")
        return template % tuple(scalars)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenario", default="missing-collective")
    parser.add_argument("--culprit", type=int, default=None, help="default: the last rank")
    parser.add_argument("--comms", type=int, default=2)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    if args.culprit is None:
        args.culprit = args.ranks - 1
    if args.scenario == "split":
        args.comms = max(args.comms, 2)
    if args.scenario == "gpu-spin" and args.ranks != 4:
        parser.error("gpu-spin is a 4-rank job (TP 2 x DP 2)")
    os.makedirs(args.out, exist_ok=True)
    writer = TemplateWriter()
    for rank in range(args.ranks):
        text = writer.dumps(rank_document(args, rank))
        path = os.path.join(args.out, "rank-%d.json" % rank)
        if args.scenario == "corrupt" and rank == args.culprit:
            text = text[: len(text) // 2]
        with open(path, "w") as out:
            out.write(text + "\n")
    if args.scenario == "gpu-spin":
        with open(os.path.join(args.out, "rank-%d.kernels.json" % args.culprit), "w") as out:
            json.dump(spin_kernel_view(args.culprit), out, indent=2)
    if args.scenario == "unrelated":
        other = rank_document(args, 0)
        for comm in other["communicators"]:
            comm["comm_hash"] = "0x%x" % (int(comm["comm_hash"], 16) ^ 0xFFFF)
        with open(os.path.join(args.out, "other-job-rank-0.json"), "w") as out:
            out.write(writer.dumps(other))
    return 0


if __name__ == "__main__":
    sys.exit(main())
