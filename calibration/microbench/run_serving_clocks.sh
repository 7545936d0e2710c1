#!/bin/bash
# Issue 16, serving's clocks (devrun/servclk): serving_step_bench.py (the committed one, as in
# serving_step_2026-11-26) while nvidia-smi samples every GPU's SM clock, power and throttle
# reasons every 50 ms; the log's elapsed times place each point in the samples. Again: is TP2's
# long prefill's clock below what gcsim's power model gives (1796-1838 MHz), and do the eager
# decode points' host-bound steps split into two host speeds as in the 11-26 run?
#   OUT=DIR bash devrun/servclk/run.sh -> $OUT/{serving_step.json, serving_step.log, clocks.csv}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/serving_step.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u; date +%s.%N
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/serving_step_bench.py" "$here/torch_timing.py" "$here/bench_common.py" "$here/run.sh"
  lscpu | grep -E "Model name|^CPU\(s\)|MHz"
} > "$log" 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > "$dir/clocks.csv" 2>&1 &
smi=$!
echo "launch $(date +%s.%N)" >> "$log"
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 185 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/serving_step_bench.py" -o "$dir/serving_step.json" --budget-s 150 >> "$log" 2>&1
echo "rc=$? $(date -u) $(date +%s.%N)" >> "$log"
kill $smi; wait $smi 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
grep -v "^ \{5\}" "$log" | tail -30
