#!/bin/bash
# Issue 22, capacity factor and token dropping on GPUs (devrun/moecap): moe_ep_bench.py on 4 GPUs,
# two layer shapes, 16K and 32K tokens per rank (GPU-bound), skew 0 and 1.5, each dropless, with
# capacity factor 1.0 and 1.25 (copies above capacity dropped) and 1.25 padded to capacity.
#   OUT=DIR bash devrun/moecap/run.sh -> $OUT/{moe_ep.json, moe_ep.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/moe_ep.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  lscpu | grep -E "Model name|^CPU\(s\)|MHz" || true
  sha256sum "$here/moe_ep_bench.py" "$here/torch_timing.py" "$here/run.sh"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 200 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/moe_ep_bench.py" -o "$dir/moe_ep.json" --budget-s 150 \
  --shapes 2048:1408:8:2,4096:2048:16:2 --tokens 16384,32768 --skews 0,1.5 --capacity 0,1,1.25,1.25:pad \
  --profile "" >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
grep -v "^ \{5\}" "$log" | tail -40
