"""PyTorch form of issue 36 item 1: a bf16 all_reduce whose input holds NaN on one rank, then a hang.

One process per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; several ranks on one GPU: a
different NCCL_HOSTID each). Every rank runs a few good all_reduces of a warm-up tensor, fills
its bf16 tensor with rank+1, and the injecting rank writes NaN into --nan-count elements spread
evenly over it. Each rank then counts its own tensor with torch (torch.isnan(t).sum() and the
rest of check_numerics.py's keys) and prints "TORCH_COUNT rank=R nan=N" and "GROUND_TRUTH
{json}" (send = the tensor; all_reduce is in place). The last rank skips the next all_reduce and
parks in signal.pause(); the others issue it on the NaN tensor and block in
torch.cuda.synchronize(). "HANG_POINT_REACHED" is printed just before each blocks.

  torchrun-free: RANK=1 WORLD_SIZE=3 ... python torch_numerics_nan.py [--count N] [--nan-count K]
"""
import argparse
import datetime
import json
import os
import signal


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--count", type=int, default=1 << 20, help="bf16 elements of the tensor")
    parser.add_argument("--nan-count", type=int, default=4096, help="NaN written on the injecting rank")
    parser.add_argument("--inject-rank", type=int, default=1)
    parser.add_argument("--good-iters", type=int, default=3)
    parser.add_argument("--device", type=int, default=0)
    return parser.parse_args()


def torch_counts(torch, tensor):
    """check_numerics.py's keys, counted by torch itself (independent of ncclscope's classifier)."""
    finite = tensor[torch.isfinite(tensor)].float().abs()
    tiny = torch.finfo(tensor.dtype).tiny
    return {"elements": tensor.numel(),
            "nan": int(torch.isnan(tensor).sum().item()),
            "pos_inf": int(torch.isposinf(tensor).sum().item()),
            "neg_inf": int(torch.isneginf(tensor).sum().item()),
            "subnormal": int(((finite > 0) & (finite < tiny)).sum().item()),
            "zero": int((tensor == 0).sum().item()),
            "max_abs": float(finite.max().item()) if finite.numel() else 0.0}


def main():
    args = parse_args()
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if not 0 <= args.inject_rank < world - 1:
        raise SystemExit("--inject-rank must name a waiting rank (0..%d)" % (world - 2))
    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device,
                            timeout=datetime.timedelta(minutes=30))
    warm = torch.ones(args.count, dtype=torch.bfloat16, device=device)
    for _ in range(args.good_iters):
        dist.all_reduce(warm)
    tensor = torch.full((args.count,), float(rank + 1), dtype=torch.bfloat16, device=device)
    if rank == args.inject_rank and args.nan_count > 0:
        stride = max(1, args.count // args.nan_count)
        tensor[::stride][:args.nan_count] = float("nan")
    torch.cuda.synchronize()
    counts = torch_counts(torch, tensor)
    culprit = world - 1
    print("TORCH_COUNT rank=%d nan=%d (torch.isnan(t).sum())" % (rank, counts["nan"]), flush=True)
    truth = {"rank": rank, "nranks": world, "pid": os.getpid(), "dtype": "bf16", "mode": "torch-nan",
             "torch_version": torch.__version__, "nccl_version": ".".join(map(str, torch.cuda.nccl.version())),
             "inject_rank": args.inject_rank, "expected_culprit_rank": culprit,
             "hang_collective": "AllReduce", "good_iters": args.good_iters,
             "role": "culprit" if rank == culprit else "waiter",
             "send": dict(counts, address=hex(tensor.data_ptr()))}
    print("GROUND_TRUTH " + json.dumps(truth), flush=True)
    if rank == culprit:
        print("HANG_POINT_REACHED rank=%d where=signal.pause (skipped the all_reduce)" % rank, flush=True)
        signal.pause()
        return
    dist.all_reduce(tensor)
    print("HANG_POINT_REACHED rank=%d where=torch.cuda.synchronize" % rank, flush=True)
    torch.cuda.synchronize()
    print("COMPLETED rank=%d (unexpected: the culprit never joined)" % rank, flush=True)


if __name__ == "__main__":
    main()
