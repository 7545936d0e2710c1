#!/bin/bash
# One device call for the power model's held-out phases (issue 16): GPU 0 only, under 150 s.
#   OUT=DIR bash run_power_clock_heldout.sh  -> $OUT/power/{power_clock_heldout.json, .log}
# Reads power and clocks only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/power"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
log="$dir/power_clock_heldout.log"
{ date -u; nvidia-smi -i 0 --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 135 python3 "$here/power_clock_bench.py" --set heldout -o "$dir/power_clock_heldout.json" >> "$log" 2>&1
echo "power_clock_bench rc=$?" >> "$log"
{ date -u; nvidia-smi -i 0 --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
