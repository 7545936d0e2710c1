#!/bin/bash
# One device call for issue 16's serving validation: a Llama-2-70B-shaped decoder (8 layers) serving
# step, decode (eager and CUDA graph) and prefill (eager), TP4 on GPUs 0-3 then TP2 on {0,1} and {2,3}.
# Wall cap: 200 s in all (the script starts no point after --budget-s 150 s counted from before its
# torch import; the launch is killed at 185 s).
#   OUT=DIR bash run_serving_step.sh [bench options, e.g. --model l3_8b]
#       -> $OUT/serving/{serving_step.json, serving_step.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/serving"
mkdir -p "$dir"
log="$dir/serving_step.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/serving_step_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 185 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/serving_step_bench.py" -o "$dir/serving_step.json" --budget-s 150 "$@" >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -60 "$log"
