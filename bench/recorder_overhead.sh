#!/usr/bin/env bash
# Flight recorder cost.
#   bench/recorder_overhead.sh cpu BUILD_DIR   per-record cost (no GPU): build/bench/recorder_overhead
#   bench/recorder_overhead.sh gpu LIBRARY     on the GPU machine: a 2-rank PyTorch DDP training loop
#       run in three configurations, interleaved run by run: off, the NCCL profiler plugin only
#       (NCCL_PROFILER_PLUGIN), and the whole recorder (+ CUDA_INJECTION64_PATH: CUPTI callbacks).
#       Each run reports its median step time (rank 0, after warm-up); the summary gives, per
#       configuration, the median over runs and the slowdown against off, plus every run's value.
# Env: PYTHON (default /opt/torch/.venv/bin/python), STEPS (default 300), RUNS (default 3),
#      MODEL small (8 x Linear(2048), batch 64: ~2.5 ms steps) or medium (8 x Linear(8192),
#      batch 1024: tens of ms, closer to a real training step).
set -euo pipefail

mode=${1:-cpu}
if [[ $mode == cpu ]]; then
  build=${2:-build}
  cmake --build "$build" --target recorder_overhead -j2 >/dev/null
  "$build/bench/recorder_overhead" 2000000 2
  exit 0
fi

library=$(readlink -f "${2:?usage: recorder_overhead.sh gpu LIBRARY}")
python=${PYTHON:-/opt/torch/.venv/bin/python}
steps=${STEPS:-300}
runs=${RUNS:-3}
export NCCL_NVLS_ENABLE=0
work=$(mktemp -d)
cat > "$work/train.py" <<'EOF'
import ctypes, json, os, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp

def header(library):
    # RecorderHeader fields (native/src/cuda/recorder_format.h, schema 1).
    lib = ctypes.CDLL(library)
    lib.ncclscope_recorder_region.restype = ctypes.c_void_p
    base = lib.ncclscope_recorder_region()
    if not base:
        return None
    u32 = lambda off: ctypes.c_uint32.from_address(base + off).value
    return {"magic": ctypes.string_at(base, 15).decode(), "schema": u32(16),
            "sources": u32(80), "threads_claimed": u32(84), "comms_claimed": u32(96)}

def run(rank, steps, out, library):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=2)
    width, batch = (8192, 1024) if os.environ.get("MODEL") == "medium" else (2048, 64)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(8)]).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    data = torch.randn(batch, width, device="cuda")
    times = []
    for step in range(steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad()
        ddp(data).square().mean().backward()
        optimizer.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    warm = sorted(times[steps // 5:])
    result = {"rank": rank, "mean_step_ms": 1000 * sum(warm) / len(warm),
              "median_step_ms": 1000 * warm[len(warm) // 2],
              "recorder": header(library) if library else None}
    with open(f"{out}.{rank}", "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()

if __name__ == "__main__":
    steps, out, library = int(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
    mp.spawn(run, args=(steps, out, library), nprocs=2)
EOF

measure() {  # $1 = off|profiler|on, $2 = run index
  local out="$work/result.$1.$2"
  case $1 in
    on) CUDA_INJECTION64_PATH=$library NCCL_PROFILER_PLUGIN=$library "$python" "$work/train.py" "$steps" "$out" "$library" ;;
    profiler) NCCL_PROFILER_PLUGIN=$library "$python" "$work/train.py" "$steps" "$out" "$library" ;;
    off) "$python" "$work/train.py" "$steps" "$out" ;;
  esac
  echo "$1 run $2: $(cat "$out.0")"
}

for run in $(seq 1 "$runs"); do
  for config in off profiler on; do measure "$config" "$run"; done
done
"$python" - "$work" "$runs" <<'PY'
import json, sys, glob, statistics
work, runs = sys.argv[1], int(sys.argv[2])
def medians(kind):
    return [json.load(open(f))["median_step_ms"] for f in sorted(glob.glob(f"{work}/result.{kind}.*.0"))]
summary = {"model": __import__("os").environ.get("MODEL", "small"), "runs": runs}
off = statistics.median(medians("off"))
for kind in ("off", "profiler", "on"):
    values = medians(kind)
    middle = statistics.median(values)
    summary[kind] = {"median_step_ms": round(middle, 3), "runs_ms": [round(v, 3) for v in values],
                     "slowdown_percent": round(100 * (middle - off) / off, 2)}
print(json.dumps(summary))
PY
rm -rf "$work"
