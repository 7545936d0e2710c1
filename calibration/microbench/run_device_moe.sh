#!/bin/bash
# MoE expert-parallel layer on 2 GPUs (gcsim issue 22). Writes $OUT/moe/moe_ep.json and $OUT/moe/moe_ep.log.
# Wall cap: 3 minutes (the script stops starting points after 110 s; the launch is killed at 170 s).
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/moe"
log="$OUT/moe/moe_ep.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/moe_ep_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1 timeout 170 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/moe_ep_bench.py" -o "$OUT/moe/moe_ep.json" --budget-s 110 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -30 "$log"
