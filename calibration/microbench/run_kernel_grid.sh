#!/bin/bash
# One device call for the single-kernel measurement (issue 16: GEMM grid, softmax, compiled loss):
# GPU 3 only (other areas use the others at the same time), under 200 s wall time (torch import,
# warm-up and every torch.compile included).
#   OUT=DIR bash run_kernel_grid.sh   -> $OUT/kernels/{kernel_grid.json, kernel_grid.log}
# Reads clocks and power only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/kernels"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${KERNEL_GRID_GPU:-3}
log="$dir/kernel_grid.log"
smi="clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
{ date -u; echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm,$smi --format=csv; } > "$log" 2>&1
timeout -k 3 182 python3 "$here/kernel_grid.py" -o "$dir/kernel_grid.json" --budget-s 168 >> "$log" 2>&1
echo "kernel_grid rc=$?" >> "$log"
rm -f "$dir"/*.tmp  # a save cut short by the timeout: at most the JSON and the log come back
{ date -u; nvidia-smi --query-gpu=index,$smi --format=csv; } >> "$log" 2>&1
