#!/bin/bash
# Issue 16 (the clock and power of sustained serving work, from NVML's energy counter; run as
# devrun/spclock/run.sh): the serving model's eager prefill (TP4/TP2, 2048-8192 tokens) and graph
# decode steps (one rank's shard, 8 layers), then decode GEMMs alone (1-256 tokens), each back to
# back for 3-4 s, on GPU 0 only. Cap 300 s: the script starts no new loop past its 240 s budget.
#   OUT=DIR bash devrun/spclock/run.sh -> $OUT/spclock/{step_power_clock.json, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/spclock"
mkdir -p "$dir"
log="$dir/step_power_clock.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/run.sh" "$here/step_power_clock.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py" "$here/bench_common.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
timeout -k 5 300 python3 "$here/step_power_clock.py" -o "$dir/step_power_clock.json" --budget-s 240 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -40 "$log"
