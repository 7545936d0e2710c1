#!/bin/bash
# MoE expert-parallel layer on 4 GPUs with the host's issue time per phase (gcsim issue 22, the
# host model's held-out check): three layer shapes (the 2-GPU fit's two and a top-4 layer with 8
# small experts per rank), 4K-32K tokens per rank, skew 0 / 0.8 / 1.5, forward and backward,
# torch.profiler kernels for two points. Writes $OUT/moe/moe_ep.json and $OUT/moe/moe_ep.log.
# Wall cap: 5 minutes (no new point after 200 s; the launch is killed at 270 s).
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/moe"
log="$OUT/moe/moe_ep.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  lscpu | grep -E "Model name|^CPU\(s\)|MHz" || true
  sha256sum "$here/moe_ep_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 270 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/moe_ep_bench.py" -o "$OUT/moe/moe_ep.json" --budget-s 200 --host-timing \
  --shapes 2048:1408:8:2,4096:2048:16:2,2048:1024:32:4 --tokens 4096,8192,16384,32768 --skews 0,0.8,1.5 \
  --profile 2048:1408:8:2/4096/1.5,2048:1408:8:2/16384/1.5,2048:1024:32:4/8192/1.5 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -45 "$log"
