#!/bin/bash
# Issue 16 (the clock a sustained decode step runs at; run as devrun/dsclock/run.sh): the serving
# model's TP4/TP2 decode step (one rank's shard, 8 layers, KV 2048) as a CUDA graph replayed for 2 s
# at batch 1-256, nvidia-smi clock and power sampled every 50 ms, GPU 0 only. Cap 240 s: the script
# starts no new point past its 200 s budget; timeout kills it at 240 s.
#   OUT=DIR bash devrun/dsclock/run.sh -> $OUT/dsclock/{decode_step_clock.json, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/dsclock"
mkdir -p "$dir"
log="$dir/decode_step_clock.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/run.sh" "$here/decode_step_clock.py" "$here/decode_gemm_clock.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
timeout -k 5 240 python3 "$here/decode_step_clock.py" -o "$dir/decode_step_clock.json" --budget-s 200 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -30 "$log"
