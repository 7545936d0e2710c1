#!/bin/bash
# The attention-families measurement (area `attn`), one GPU (GPU 0), ~4.5 minutes at most.
#   OUT=/some/dir bash calibration/microbench/run_device_attention.sh
# Writes $OUT/attn/attention_families.json (results, rewritten after every point) and
# $OUT/attn/log.txt (machine facts, nvidia-smi before/after, the script's output).
here=$(cd "$(dirname "$0")" && pwd)
out="${OUT:?set OUT}/attn"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
log="$out/log.txt"
{
  date -u; uname -r
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem --format=csv
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/attention_families_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
timeout -k 5 280 python3 "$here/attention_families_bench.py" -o "$out/attention_families.json" \
  --budget-s "${ATTN_BUDGET_S:-225}" >> "$log" 2>&1
echo "attention_families_bench rc=$?" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
date -u >> "$log"
tail -3 "$log"
