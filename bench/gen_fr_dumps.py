#!/usr/bin/env python3
"""Writes one PyTorch flight-recorder dump per rank (fr_rank<R>, pickle protocol 2 with every
key of PyTorch 2.11's dump, strings memoized as its pickler does) for a hung TPxDP job:

  gen_fr_dumps.py RANKS ENTRIES OUTDIR [--culprit R] [--part I/N]

(--part I/N: only the ranks r with r % N == I, so N processes write a job in parallel.)

RANKS ranks in tensor-parallel groups of 8 and RANKS/8-rank data-parallel groups (plus
default_pg); each rank alternates a TP and a DP all_reduce, its ring holding its last ENTRIES
records (the ring wrapped: record ids start above 0). The culprit (default 1234, or the last
rank) skipped its last DP all_reduce: its DP group waits in it; the other ranks finished it and
wait in the next TP all_reduce on a peer that never issued it. Expected verdict: hang, culprit
[R].
"""
import os
import pickle
import sys

TP = 8
FILE = "/workspace/train.py"
LIB = "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py"
LOGGER = "/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py"


def frames(line):
    return [{"name": "all_reduce", "filename": LIB, "line": 2924},
            {"name": "wrapper", "filename": LOGGER, "line": 83},
            {"name": "step", "filename": FILE, "line": line},
            {"name": "train", "filename": FILE, "line": 140},
            {"name": "<module>", "filename": FILE, "line": 170}]


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 64
    ranks, entries, out = int(argv[1]), int(argv[2]), argv[3]
    culprit = int(argv[argv.index("--culprit") + 1]) if "--culprit" in argv else min(1234, ranks - 1)
    part, parts = map(int, argv[argv.index("--part") + 1].split("/")) if "--part" in argv else (0, 1)
    if ranks % TP or ranks < 2 * TP:
        print("RANKS must be a multiple of 8, at least 16", file=sys.stderr)
        return 64
    os.makedirs(out, exist_ok=True)
    dp = ranks // TP
    tp_name = lambda k: str(1 + k)
    dp_name = lambda j: str(1 + dp + j)
    pg_config = {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ranks)))}}
    for k in range(dp):
        pg_config[tp_name(k)] = {"name": tp_name(k), "desc": "tp%d" % k, "ranks": str(list(range(k * TP, k * TP + TP)))}
    for j in range(TP):
        pg_config[dp_name(j)] = {"name": dp_name(j), "desc": "dp%d" % j, "ranks": str(list(range(j, ranks, TP)))}
    steps = entries // 2 + 500  # the ring wrapped: about 1,000 older records are gone
    strings = {}  # one object per distinct string: the pickler memoizes it (BINPUT/BINGET)
    s = lambda text: strings.setdefault(text, text)
    for rank in range(part, ranks, parts):
        k, j = rank // TP, rank % TP
        ops = []
        for step in range(1, steps + 1):
            ops.append((tp_name(k), "tp%d" % k, step, 101))
            if not (rank == culprit and step == steps):
                ops.append((dp_name(j), "dp%d" % j, step, 102))
        if j != culprit % TP:  # finished the last DP step: on to the next TP step
            ops.append((tp_name(k), "tp%d" % k, steps + 1, 101))
        records = []
        first = len(ops) - entries
        for index in range(max(first, 0), len(ops)):
            pg, desc, seq, line = ops[index]
            last = index == len(ops) - 1
            state = "completed" if not last or rank == culprit else "scheduled"
            created = 1796000000000000000 + index * 1000000
            records.append({
                "record_id": index, "pg_id": int(pg), "process_group": (s(pg), s(desc)),
                "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq, "profiling_name": s("nccl:all_reduce"),
                "time_created_ns": created, "input_sizes": [[65536]], "input_dtypes": [s("Float")],
                "output_sizes": [[65536]], "output_dtypes": [s("Float")], "state": s(state),
                "time_discovered_started_ns": None,
                "time_discovered_completed_ns": created + 500000 if state == "completed" else None,
                "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
                "thread_id": s("140000000000000"), "thread_name": s("python"),
                "frames": [{"name": s(f["name"]), "filename": s(f["filename"]), "line": f["line"]} for f in frames(line)],
            })
        # Like PyTorch's: pg_config names the groups this rank is a member of.
        own = {name: pg_config[name] for name in ("0", tp_name(k), dp_name(j))}
        dump = {"version": "2.10", "pg_config": own, "comm_lib_version": "2.28.9", "pg_status": {}, "entries": records}
        with open(os.path.join(out, "fr_rank%d" % rank), "wb") as f:
            pickle.dump(dump, f, protocol=2)
    print("%d dumps of %d entries in %s; culprit rank %d" % (ranks, entries, out, culprit))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
