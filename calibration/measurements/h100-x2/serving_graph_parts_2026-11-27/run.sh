#!/bin/bash
# One device call: serving_graph_parts_bench.py on 4 GPUs (TP4 on GPUs 0-3, TP2 on {0,1} and {2,3}),
# or on NPROC=2 GPUs (TP2), both serving models. Wall cap 290 s (the script starts no point after --budget-s 240 s counted from
# before its torch import; the launch is killed at 280 s).
#   OUT=DIR bash run_serving_graph_parts.sh [bench options]  -> $OUT/{graph_parts.json, graph_parts.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"
mkdir -p "$dir"
log="$dir/graph_parts.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/serving_graph_parts_bench.py" "$here/serving_step_bench.py" "$here/bench_common.py" "$here/torch_timing.py"
} > "$log" 2>&1
n=${NPROC:-4}
CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) timeout -k 5 280 python3 -m torch.distributed.run --standalone --nproc_per_node=$n \
  "$here/serving_graph_parts_bench.py" -o "$dir/graph_parts.json" --budget-s 240 "$@" >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -60 "$log"
