#!/bin/bash
# Issue 16, the SM clock the kernels get (devrun/clock): clock_truth_bench.py on every GPU at once,
# one process each, with cuda/clock_probe.cu built here by nvcc.
#   OUT=DIR bash run_clock_truth.sh -> $OUT/{gpuN.json, clock_truth.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/clock_truth.log"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
n=$(nvidia-smi -L | wc -l)
{
  date -u; date +%s.%N
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/clock_truth_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$here/cuda/clock_probe.cu" "$0"
  nvcc --version | tail -2
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
lib=/tmp/libclock_probe.so
nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -shared -Xcompiler -fPIC -o $lib "$here/cuda/clock_probe.cu" >> "$log" 2>&1 || { echo "nvcc failed" >> "$log"; exit 1; }
pids=()
for g in $(seq 0 $((n - 1))); do
  CUDA_VISIBLE_DEVICES=$g timeout -k 5 170 python3 "$here/clock_truth_bench.py" --lib $lib --nvml-index $g \
    -o "$dir/gpu$g.json" "$@" > "$dir/gpu$g.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; echo "pid $p rc=$?" >> "$log"; done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
echo "done $(date -u)" >> "$log"
tail -5 "$log"; cat "$dir"/gpu*.log | grep -v "^$" | tail -40
