#!/bin/bash
# kgrid (issue 16): calibration/microbench/kernel_grid.py 1.1 on ONE GPU (GPU 0, or KGRID_GPU; other areas use
# the other GPUs at the same time), the full grid: 528 cuBLAS bf16 GEMMs, 42 eager softmax /
# log_softmax points, 7 compiled losses (~90 s on an H100 for the 1.0 grid). Cap 300 s.
#   OUT=DIR bash devrun/kgrid/run.sh -> $OUT/{kernel_grid.json, kernel_grid.log, machine.txt}
# Reads clocks and power only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
out="${OUT:?set OUT}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${KGRID_GPU:-0}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
log="$out/kernel_grid.log"
smi="clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
{ echo "== start $(date -u +%FT%TZ)"; echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
  echo "== sha256"; (cd "$here" && sha256sum run.sh kernel_grid.py torch_timing.py compiled_kernels.py)
  echo "== nvidia-smi (all GPUs)"; nvidia-smi
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,vbios_version,power.limit,power.max_limit,clocks.max.sm,clocks.max.mem,memory.total,$smi --format=csv
  echo "== nvidia-smi -q -i $CUDA_VISIBLE_DEVICES (clocks, power, performance)"; nvidia-smi -q -i $CUDA_VISIBLE_DEVICES -d CLOCK,POWER,PERFORMANCE,TEMPERATURE
  echo "== versions"; python3 -c 'import torch, platform; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "python", platform.python_version())'
  nvidia-smi topo -m; } > "$out/machine.txt" 2>&1
echo "[kgrid] $(date -u +%T) machine.txt written; starting kernel_grid.py on GPU 0"
date -u > "$log"
timeout -k 3 270 python3 "$here/kernel_grid.py" -o "$out/kernel_grid.json" --budget-s 255 \
  --gemm-until 170 --softmax-until 205 2>&1 | tee -a "$log" | grep -v "^\[.*gemm grid" 
echo "kernel_grid rc=${PIPESTATUS[0]}" | tee -a "$log"
rm -f "$out"/*.tmp  # a save cut short by the timeout: the JSON, the log and machine.txt come back
{ echo "== end $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=index,$smi --format=csv; } >> "$out/machine.txt" 2>&1
echo "[kgrid] $(date -u +%T) done"
