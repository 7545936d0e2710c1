#!/bin/bash
# Issue 16, second strategy call (devrun/strat2): strategy_step_bench.py on GPUs 0-3 for
# TP2xDP2 eager, TP2xDP2 compile, TP2xPP2 compile, TP2xPP2 eager with every rank's kernel table
# and a per-rank kernel timeline of one step (name, class, stream, start, duration).
# Wall cap: 300 s (the script starts no point after --budget-s 220 s; the launch is killed at 265 s).
#   OUT=DIR bash devrun/strat2/run.sh  -> $OUT/strat2/{strategy_ranks.json, strategy_ranks.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/strat2"
mkdir -p "$dir"
log="$dir/strategy_ranks.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/strategy_step_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$here/framework_step.py" "$here/run.sh"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version(), 'gpus', torch.cuda.device_count())"
} > "$log" 2>&1
echo "start $(date -u +%T)"
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 10 265 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/strategy_step_bench.py" -o "$dir/strategy_ranks.json" --budget-s 220 \
  --points TP2xDP2:eager,TP2xDP2:compile,TP2xPP2:compile,TP2xPP2:eager --all-rank-kernels --timeline >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
ls -la "$dir" >> "$log"
grep -v "^ \{5\}" "$log" | tail -60
