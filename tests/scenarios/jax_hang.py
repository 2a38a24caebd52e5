"""JAX multi-process job that hangs in a cross-process all-gather (issue 35: node-scale triage).

One process per rank (RANK, WORLD_SIZE, MASTER_PORT; several processes on one GPU: a different
NCCL_HOSTID each, XLA_PYTHON_CLIENT_PREALLOCATE=false). After a few good all-gathers
(multihost_utils.process_allgather: XLA's NCCL all-gather over one device per process) the last
rank skips one and parks in signal.pause(); the others block in it. Prints "GROUND_TRUTH {json}"
and "HANG_POINT_REACHED" like the other scenarios.
"""
import json
import os
import signal


def main():
    rank, world, port = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), os.environ["MASTER_PORT"]
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.distributed.initialize("127.0.0.1:%s" % port, num_processes=world, process_id=rank, local_device_ids=[0])
    x = jnp.full((1 << 16,), float(rank + 1), jnp.float32)
    good = 3
    for _ in range(good):
        multihost_utils.process_allgather(x)
    culprit = world - 1
    print("GROUND_TRUTH " + json.dumps({"mode": "jax-skip-allgather", "rank": rank, "nranks": world, "pid": os.getpid(),
                                        "jax_version": jax.__version__, "good_iters": good,
                                        "expected_culprit_rank": culprit,
                                        "role": "culprit" if rank == culprit else "waiter"}), flush=True)
    if rank == culprit:
        print("HANG_POINT_REACHED rank=%d where=signal.pause (skipped the all-gather)" % rank, flush=True)
        signal.pause()
        return
    print("HANG_POINT_REACHED rank=%d where=process_allgather" % rank, flush=True)
    multihost_utils.process_allgather(x)
    print("COMPLETED rank=%d (unexpected: the culprit never joined)" % rank, flush=True)


if __name__ == "__main__":
    main()
