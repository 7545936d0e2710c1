#!/bin/bash
# One device call for the power model's fast limiter (issue 16): GPU 1 of a 2-GPU machine (another
# area may have just loaded GPU 0), under 150 s in all.
#   OUT=DIR bash run_power_clock_bursts.sh  -> $OUT/power/{power_clock_bursts.json, .log}
# Reads power and clocks only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/power"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=1
log="$dir/power_clock_bursts.log"
{ date -u; nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 135 python3 "$here/power_clock_bench.py" --set bursts -o "$dir/power_clock_bursts.json" >> "$log" 2>&1
echo "power_clock_bench rc=$?" >> "$log"
{ date -u; nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
