#!/bin/bash
# One device call for the framework-profile measurement (issue 16): GPU 0 only, under 5 minutes.
#   OUT=DIR bash run_framework_step.sh      -> $OUT/framework/{framework_step.json, framework_step.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/framework"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
log="$dir/framework_step.log"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 285 python3 "$here/framework_step.py" -o "$dir/framework_step.json" --budget-s 245 >> "$log" 2>&1
echo "framework_step rc=$?" >> "$log"
{ date -u; nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
