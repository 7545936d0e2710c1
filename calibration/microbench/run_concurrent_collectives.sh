#!/bin/bash
# Two all-reduces at once on one GPU (TP {0,1}{2,3} and DP {0,2}{1,3}), 4 GPUs, cap ~120 s.
#   OUT=DIR bash run_concurrent_collectives.sh -> $OUT/conc/{concurrent_collectives.json,.log}
# (run as devrun/conc/run.sh on 2026-11-27, the same text with the paths one level up)
here=$(cd "$(dirname "$0")" && pwd)

mb="$here"
dir="${OUT:?set OUT}/conc"
mkdir -p "$dir"
log="$dir/concurrent_collectives.log"
export CUDA_MODULE_LOADING=EAGER PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$mb/concurrent_collectives.py" "$mb/bench_common.py" "$mb/torch_timing.py" "$0"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'gpus', torch.cuda.device_count())"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 10 150 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$mb/concurrent_collectives.py" -o "$dir/concurrent_collectives.json" --budget-s 100 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -20 "$log"
