"""PyTorch (torch.distributed, NCCL backend) job that hangs in all_reduce (issue 3, item 1h).

Launch one process per rank with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set (and, for two
ranks on one GPU, a different NCCL_HOSTID per rank).  After a few good all_reduces the culprit
(the last rank) skips one; the others issue it and block in torch.cuda.synchronize().
Prints "GROUND_TRUTH {json}" and then "HANG_POINT_REACHED" like nccl_hang_scenarios.
"""
import argparse
import datetime
import json
import os
import signal
import sys


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", type=int, default=int(os.environ.get("SCENARIO_DEVICE", "0")),
                        help="CUDA device index for every rank (one GPU: all ranks share 0)")
    parser.add_argument("--good-iters", type=int, default=3)
    parser.add_argument("--count", type=int, default=1 << 20, help="float32 elements")
    return parser.parse_args(argv)


def comm_address(pg, device):
    """The ncclComm_t of the process group, when this PyTorch exposes it (else None)."""
    try:
        backend = pg._get_backend(device)
        ptr = backend._comm_ptr()  # ProcessGroupNCCL::getCommPtr, PyTorch >= 2.4
        return hex(ptr) if ptr else None
    except Exception as error:  # a private API: say why it is missing, never fail the hang
        return "unknown: %s" % error


def main(argv):
    args = parse_args(argv)
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    dist.init_process_group("nccl", rank=rank, world_size=world_size, device_id=device,
                            timeout=datetime.timedelta(minutes=30))
    pg = dist.group.WORLD
    tensor = torch.ones(args.count, device=device)
    for _ in range(args.good_iters):
        dist.all_reduce(tensor)
    torch.cuda.synchronize()
    culprit = world_size - 1
    truth = {
        "mode": "torch-skip-allreduce", "rank": rank, "nranks": world_size, "pid": os.getpid(),
        "device": args.device, "torch_version": torch.__version__,
        "nccl_version": ".".join(str(v) for v in torch.cuda.nccl.version()),
        "expected_culprit_rank": culprit, "hang_collective": "AllReduce", "hang_comm": "world",
        "role": "culprit" if rank == culprit else "waiter", "good_iters": args.good_iters,
        "count": args.count,
        "comms": [{"name": "world", "address": comm_address(pg, device), "rank": rank,
                   "nranks": world_size,
                   "launched": {"AllReduce": args.good_iters + (0 if rank == culprit else 1)}}],
        "notes": "address from ProcessGroupNCCL._comm_ptr() when available; the eager init "
                 "(device_id) may add internal collectives PyTorch issues itself",
    }
    if rank == culprit:
        print("GROUND_TRUTH " + json.dumps(truth), flush=True)
        print("HANG_POINT_REACHED rank=%d where=signal.pause" % rank, flush=True)
        while True:
            signal.pause()
    dist.all_reduce(tensor)
    print("GROUND_TRUTH " + json.dumps(truth), flush=True)
    print("HANG_POINT_REACHED rank=%d where=torch.cuda.synchronize" % rank, flush=True)
    torch.cuda.synchronize()
    print("COLLECTIVE_COMPLETED rank=%d" % rank, flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1:])
