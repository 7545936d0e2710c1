#!/bin/bash
# Issue 16 (L2-resident elementwise passes; run as devrun/l2res/run.sh): eager PyTorch's copy, add,
# SiLU and fp32 cast over 256 KiB-256 MiB tensors, reading tensors a fill just wrote (warm) or
# tensors in HBM behind a 1 GiB read (cold), each kernel's duration by torch.profiler, on GPU 0
# only. Cap 200 s: the script starts no new op past its 150 s budget; timeout kills it at 200 s.
#   OUT=DIR bash devrun/l2res/run.sh -> $OUT/l2res/{l2_resident_passes.json, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/l2res"
mkdir -p "$dir"
log="$dir/l2_resident_passes.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/run.sh" "$here/l2_resident_passes.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
timeout -k 5 200 python3 "$here/l2_resident_passes.py" -o "$dir/l2_resident_passes.json" --budget-s 150 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -30 "$log"
