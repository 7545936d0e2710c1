#!/bin/bash
# Issue 16, 2026-11-28 (session 32, second call): a held-out check, on another machine, of the H200
# profile refitted this session on calibration/measurements/h200-x1/calibration_set_2026-11-28 (and of
# the H100's, if the call lands on an H100). On ONE GPU, one after another: kernel_grid.py 1.1,
# serving_kernels_bench.py 1.0 (graph vs stream gaps, decode steps), row_reduce_bench.py 1.0.
# Reads clocks and power only; never changes a GPU setting.
#   OUT=DIR bash devrun/h2cal2/run.sh -> $OUT/{machine.txt, kernels/, serving_kernels/, row_reduce/}
cd "$(dirname "$0")/../.."
mb=calibration/microbench
out="${OUT:?set OUT}"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
smi="clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
snap() { echo "== $1 $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=index,$smi --format=csv; }
{ echo "== start $(date -u +%FT%TZ)"; nvidia-smi
  nvidia-smi --query-gpu=index,name,serial,pci.bus_id,driver_version,vbios_version,power.limit,clocks.max.sm,clocks.max.mem,memory.total,$smi --format=csv
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE
  echo "== sha256"; sha256sum devrun/h2cal2/run.sh $mb/kernel_grid.py $mb/serving_kernels_bench.py $mb/serving_attention_sweep.py \
     $mb/row_reduce_bench.py $mb/serving_step_bench.py $mb/torch_timing.py $mb/bench_common.py $mb/compiled_kernels.py
  echo "== versions"; python3 -c 'import torch, platform; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version(), "python", platform.python_version())'
  uname -r; nproc; } > "$out/machine.txt" 2>&1
cp devrun/h2cal2/run.sh "$out/run.sh"
run_one() {  # name cap cmd...
  local name=$1 cap=$2; shift 2; mkdir -p "$out/$name"
  { snap "before $name"; } >> "$out/machine.txt" 2>&1
  echo "[h2cal] $(date -u +%T) $name (cap $cap s)"
  timeout -k 5 $cap "$@" > "$out/$name/$name.log" 2>&1; echo "$name rc=$?" | tee -a "$out/$name/$name.log"
  rm -f "$out/$name"/*.tmp
  { snap "after $name"; } >> "$out/machine.txt" 2>&1
  tail -3 "$out/$name/$name.log"
}
run_one kernels 200 python3 $mb/kernel_grid.py -o "$out/kernels/kernel_grid.json" --budget-s 185 --gemm-until 150 --softmax-until 170
run_one serving_kernels 140 python3 $mb/serving_kernels_bench.py -o "$out/serving_kernels/serving_kernels.json" --budget-s 120

run_one row_reduce 60 python3 $mb/row_reduce_bench.py -o "$out/row_reduce/row_reduce.json"
echo "== end $(date -u +%FT%TZ)" >> "$out/machine.txt"
