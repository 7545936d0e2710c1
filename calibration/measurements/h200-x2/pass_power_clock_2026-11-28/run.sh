#!/bin/bash
# Issue 16 (the settled clock and power of memory-bound passes and of NCCL's all-reduce, from NVML's
# energy counter; run as devrun/ppclock/run.sh on a 2-GPU kind): the passes on GPU 0 alone, then a
# 2-rank all-reduce (256 MiB and 1 GiB) with each rank sampling its own GPU. Caps: 240 s and 120 s.
#   OUT=DIR bash devrun/ppclock/run.sh -> $OUT/ppclock/{pass_power_clock.json, allreduce.json.rank*, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/ppclock"
mkdir -p "$dir"
log="$dir/pass_power_clock.log"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/run.sh" "$here/pass_power_clock.py" "$here/step_power_clock.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py" "$here/bench_common.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'nccl', torch.cuda.nccl.version())"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0 timeout -k 5 240 python3 "$here/pass_power_clock.py" -o "$dir/pass_power_clock.json" --budget-s 150 >> "$log" 2>&1
echo "passes rc=$? $(date -u)" >> "$log"
NCCL_NVLS_ENABLE=0 timeout -k 5 120 torchrun --nproc_per_node 2 "$here/pass_power_clock.py" -o "$dir/allreduce.json" --allreduce >> "$log" 2>&1
echo "allreduce rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -40 "$log"
