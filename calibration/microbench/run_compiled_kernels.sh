#!/bin/bash
# One device call for the compiled-kernel measurement (issue 16): GPU 0 only, under 150 s wall time
# (torch import and every torch.compile included).
#   OUT=DIR bash run_compiled_kernels.sh   -> $OUT/compiled/{compiled_kernels.json, compiled_kernels.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/compiled"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
log="$dir/compiled_kernels.log"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } > "$log" 2>&1
timeout 138 python3 "$here/compiled_kernels.py" -o "$dir/compiled_kernels.json" --budget-s 112 >> "$log" 2>&1
echo "compiled_kernels rc=$?" >> "$log"
rm -f "$dir"/*.tmp  # a save cut short by the timeout: at most the JSON and the log come back
{ date -u; nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
