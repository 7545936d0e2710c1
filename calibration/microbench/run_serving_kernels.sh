#!/bin/bash
# One device call for issue 16's serving kernels on one GPU (the lead's GPU 3): CUDA-graph vs stream
# kernel spacing (tiny kernels, the serving model's decode step and its ops) and SDPA's causal GQA
# prefill attention per TP rank. Wall cap 150 s including torch's import: the script starts no new
# point past --budget-s 120 s (counted from before its torch import); timeout kills it at 140 s.
#   OUT=DIR bash run_serving_kernels.sh   -> $OUT/serve2/{serving_kernels.json, serving_kernels.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/serve2"
mkdir -p "$dir"
log="$dir/serving_kernels.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=3 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
timeout -k 5 140 python3 "$here/serving_kernels_bench.py" -o "$dir/serving_kernels.json" --budget-s 120 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -40 "$log"
