#!/bin/bash
# One device call for the power model's kernel mix and roofline sweep (issue 16, --set mix): GPU 2 of
# a 4x H100 host (other areas use the other GPUs at the same time), under 200 s in all.
#   OUT=DIR bash run_power_clock_mix.sh  -> $OUT/power/{power_clock_mix.json, power_clock_mix.log}
# Reads power and clocks only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/power"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=2
log="$dir/power_clock_mix.log"
{ date -u; nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 180 python3 "$here/power_clock_bench.py" --set mix -o "$dir/power_clock_mix.json" >> "$log" 2>&1
echo "power_clock_bench rc=$?" >> "$log"
{ date -u; nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
