#!/bin/bash
# Why the eager expert loop's host cost per launch differs by layer shape (gcsim issue 22): the
# bench's expert loop per shape, interleaved, one GPU (GPU 0). Writes $OUT/moehost/moe_host_shapes.json
# and $OUT/moehost/moe_host_shapes.log. Wall cap: 90 s (stages stop at a 55 s budget after the
# imports; the python is killed at 80 s).
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/moehost"
log="$OUT/moehost/moe_host_shapes.log"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  lscpu | grep -E "Model name|^CPU\(s\)|MHz|NUMA" || true
  cat /proc/loadavg
  sha256sum "$here/moe_host_shapes.py" "$here/moe_ep_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 80 python3 "$here/moe_host_shapes.py" -o "$OUT/moehost/moe_host_shapes.json" \
  --budget-s 55 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -25 "$log"
