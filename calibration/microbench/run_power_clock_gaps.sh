#!/bin/bash
# One device call for the power model's gap sweep (issue 16, --set gaps): one GPU (index 0 unless
# POWER2_GPU names another), about 80 s, capped at 150 s.
#   OUT=DIR bash run_power_clock_gaps.sh  -> $OUT/power2/{power_clock_gaps.json, power_clock_gaps.log}
# Reads power and clocks only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/power2"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${POWER2_GPU:-0}
log="$dir/power_clock_gaps.log"
{ date -u; nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 150 python3 "$here/power_clock_bench.py" --set gaps -o "$dir/power_clock_gaps.json" >> "$log" 2>&1
echo "power_clock_bench rc=$?" >> "$log"
{ date -u; nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
