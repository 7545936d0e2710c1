#!/bin/bash
# One device call for the elementwise access-pattern measurement (issue 16): GPU 0 only, under 3 minutes.
#   OUT=DIR bash run_elementwise_access.sh   -> $OUT/strat/{elementwise_access.json, elementwise_access.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/strat"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
log="$dir/elementwise_access.log"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 170 python3 "$here/elementwise_access.py" -o "$dir/elementwise_access.json" --budget-s 120 >> "$log" 2>&1
echo "elementwise_access rc=$?" >> "$log"
{ date -u; nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
