#!/bin/bash
# One device call (issue 16, serving's clocks): prefill_soak.py on 4 GPUs (TP4), the 8192-token prefill
# for 40 s, then the 2048-token one for 20 s on the warm GPUs, while nvidia-smi samples every GPU's SM
# clock, power, temperature and throttle reasons every 100 ms. Wall cap ~150 s.
#   OUT=DIR bash run_prefill_soak.sh -> $OUT/{soak_8192.json, soak_2048.json, clocks.csv, soak.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/soak.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u; date +%s.%N
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/prefill_soak.py" "$here/serving_step_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$0"
} > "$log" 2>&1
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > "$dir/clocks.csv" 2>&1 &
smi=$!
for run in "8192 40" "2048 20"; do
  set -- $run
  echo "launch $1 $(date +%s.%N)" >> "$log"
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 90 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
    "$here/prefill_soak.py" -o "$dir/soak_$1.json" --tokens $1 --seconds $2 >> "$log" 2>&1
  echo "rc=$? $(date -u) $(date +%s.%N)" >> "$log"
done
kill $smi; wait $smi 2>/dev/null
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -20 "$log"
