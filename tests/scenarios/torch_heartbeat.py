"""A 2-rank PyTorch job whose rank 0 hangs in a collective its peer never issues (issue 32).

Run by scripts/device-heartbeat-probe.sh, one process per rank on one GPU (env RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NCCL_HOSTID per rank). Three good all_reduces, then
rank 1 skips all_reduce #4 and sleeps in Python: rank 0 waits in loss.item() until its
watchdog's timeout (--timeout-s) fires; with TORCH_NCCL_ASYNC_ERROR_HANDLING=1 it aborts its
communicator and rethrows (std::terminate: SIGABRT). Rank 1's watchdog has nothing pending and
keeps beating. Prints HANG_POINT_REACHED rank=R once each rank is where it stays.
"""
import argparse
import datetime
import os
import sys
import time


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    args = parser.parse_args(argv)
    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", 0),
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    grad = torch.ones(1 << 16, device="cuda")
    for step in range(4):
        if step == 3 and rank == 1:
            print("HANG_POINT_REACHED rank=1 skipped=all_reduce#4 time=%.3f" % time.time(), flush=True)
            time.sleep(3600)
        dist.all_reduce(grad)
        if step == 3:
            print("HANG_POINT_REACHED rank=0 waiting=all_reduce#4 time=%.3f" % time.time(), flush=True)
        grad[:1].item()
    print("STEPS_COMPLETED rank=%d" % rank, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
