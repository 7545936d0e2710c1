#!/bin/bash
# Issue 16, serving's long-prefill clocks (devrun/phasepw): phase_power_bench.py on 4 GPUs, each
# part of TP2's 8192-token prefill (all-reduce, cuDNN attention, SiLU*up, gate+up GEMM) back to
# back alone, with NVML's energy counter and 10 ms clock samples per GPU.
#   OUT=DIR bash devrun/phasepw/run.sh -> $OUT/{phase_power.json, phase_power.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/phase_power.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u; date +%s.%N
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/phase_power_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$here/run.sh"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version())"
  python3 -c "import pynvml; print('pynvml ok')"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/phase_power_bench.py" -o "$dir/phase_power.json" --seconds 6 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -25 "$log"
