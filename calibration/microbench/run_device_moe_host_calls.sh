#!/bin/bash
# The host's cost per Python call of the eager EP MoE layer, per layer shape, one GPU (gcsim issue
# 22: is the expert loop's per-launch cost a property of the kind of call or of the shape too?).
# Writes $OUT/moe/moe_host_calls.json and $OUT/moe/moe_host_calls.log. Wall cap: 120 s (no new
# shape after 80 s; killed at 110 s).
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/moe"
log="$OUT/moe/moe_host_calls.log"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  lscpu | grep -E "Model name|^CPU\(s\)|MHz" || true
  sha256sum "$here/moe_host_calls.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0 timeout 110 python3 "$here/moe_host_calls.py" -o "$OUT/moe/moe_host_calls.json" \
  --budget-s 80 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -20 "$log"
