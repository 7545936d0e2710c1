#!/bin/bash
# One device call for issue 16's multi-GPU strategy validation: a Llama-style step under DP4, TP4,
# TP2xDP2, PP2xDP2, PP4, TP2xPP2 (eager) and compiled builds, on GPUs 0-3.
# Wall cap: 6 minutes (the script starts no point after --budget-s 290 s; the launch is killed at 345 s).
#   OUT=DIR bash run_device_strategy.sh [bench options, e.g. --model gqa]
#       -> $OUT/strat/{strategy_step.json, strategy_step.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/strat"
mkdir -p "$dir"
log="$dir/strategy_step.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/strategy_step_bench.py" "$here/torch_timing.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 10 345 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/strategy_step_bench.py" -o "$dir/strategy_step.json" --budget-s 290 "$@" >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -40 "$log"
