#!/bin/bash
# One device call: DDP's gradient buckets on 4 GPUs (DP4 eager and compiled, TP2xDP2 eager), each
# step profiled with the all-reduces on and under no_sync (ddp_bucket_timeline.py), on GPUs 0-3.
# Wall cap: 150 s (the script starts no point after --budget-s 100 s; the launch is killed at 140 s).
#   OUT=DIR bash run_ddp_bucket_timeline.sh   -> $OUT/buckets/{ddp_bucket_timeline.json, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/buckets"
mkdir -p "$dir"
log="$dir/ddp_bucket_timeline.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/ddp_bucket_timeline.py" "$here/strategy_step_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 140 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/ddp_bucket_timeline.py" -o "$dir/ddp_bucket_timeline.json" --budget-s 100 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -30 "$log"
