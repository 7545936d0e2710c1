#!/bin/bash
# Llama-2-70B, all 80 layers, TP4 (35 GB of weights a GPU: fits an H100), decode and prefill up to
# 8192 tokens, with nvidia-smi sampling clocks and power every 100 ms. On GPUs with more than
# 100 GB (H200), TP2's prefill of 4096 and 8192 tokens as well.
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > "$OUT/clocks.csv" 2>&1 &
smi=$!
OUT=$OUT/tp4 bash calibration/microbench/run_serving_step.sh --model l70_full --tp 4 --points full --max-cache-tokens 262144 --prefill 512,2048,4096,8192 --budget-s 150
mem=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
if [ "${mem:-0}" -gt 100000 ]; then
  OUT=$OUT/tp2 bash calibration/microbench/run_serving_step.sh --model l70_full --tp 2 --points full --max-cache-tokens 262144 --prefill 4096,8192 --budget-s 150
fi
kill $smi; wait $smi 2>/dev/null
