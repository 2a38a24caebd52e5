"""CuPy job over cupy.cuda.nccl that hangs in an allReduce (issue 35: node-scale triage).

One process per rank (RANK, WORLD_SIZE; several processes on one GPU: a different NCCL_HOSTID
each). Rank 0 writes NCCL's unique id to --id-file, the others read it. After a few good
allReduces the last rank skips one and parks in signal.pause(); the others block in
stream.synchronize(). Prints "GROUND_TRUTH {json}" and "HANG_POINT_REACHED".

  RANK=0 WORLD_SIZE=2 python cupy_hang.py --id-file /tmp/cupy.id
"""
import argparse
import json
import os
import signal
import time


def unique_id(nccl, rank, path):
    if rank == 0:
        uid = bytes(nccl.get_unique_id())
        with open(path + ".tmp", "wb") as out:
            out.write(uid)
        os.rename(path + ".tmp", path)
        return uid
    for _ in range(1200):
        if os.path.exists(path):
            return open(path, "rb").read()
        time.sleep(0.05)
    raise SystemExit("%s: no unique id after 60 s" % path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--id-file", required=True)
    parser.add_argument("--count", type=int, default=1 << 16)
    args = parser.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    import cupy
    from cupy.cuda import nccl

    cupy.cuda.Device(0).use()
    comm = nccl.NcclCommunicator(world, unique_id(nccl, rank, args.id_file), rank)
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.ones(args.count, dtype=cupy.float32)

    def all_reduce():
        comm.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)

    good = 3
    for _ in range(good):
        all_reduce()
    stream.synchronize()
    culprit = world - 1
    print("GROUND_TRUTH " + json.dumps({"mode": "cupy-skip-allreduce", "rank": rank, "nranks": world, "pid": os.getpid(),
                                        "cupy_version": cupy.__version__, "nccl_version": nccl.get_version(),
                                        "good_iters": good, "expected_culprit_rank": culprit,
                                        "role": "culprit" if rank == culprit else "waiter"}), flush=True)
    if rank == culprit:
        print("HANG_POINT_REACHED rank=%d where=signal.pause (skipped the allReduce)" % rank, flush=True)
        signal.pause()
        return
    all_reduce()
    print("HANG_POINT_REACHED rank=%d where=stream.synchronize" % rank, flush=True)
    stream.synchronize()
    print("COMPLETED rank=%d (unexpected: the culprit never joined)" % rank, flush=True)


if __name__ == "__main__":
    main()
