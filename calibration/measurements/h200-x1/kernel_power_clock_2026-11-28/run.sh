#!/bin/bash
# Issue 16 (the clock and power each kind of kernel settles at, from NVML's energy counter; run as
# devrun/kpclock/run.sh): GEMMs, HBM copy and add, an L2-resident add, SiLU, cuDNN attention
# prefill and decode, each back to back for 3 s, on GPU 0 only. Cap 300 s (budget 150 s).
#   OUT=DIR bash devrun/kpclock/run.sh -> $OUT/kpclock/{kernel_power_clock.json, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/kpclock"
mkdir -p "$dir"
log="$dir/kernel_power_clock.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/run.sh" "$here/kernel_power_clock.py" "$here/step_power_clock.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py" "$here/bench_common.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
timeout -k 5 300 python3 "$here/kernel_power_clock.py" -o "$dir/kernel_power_clock.json" --budget-s 150 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -40 "$log"
