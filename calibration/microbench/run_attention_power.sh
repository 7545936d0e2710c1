#!/bin/bash
# Issue 16, attention's power and clock (devrun/attnpw): phase_power_bench.py --set attention on 4
# GPUs: PyTorch's default SDPA (cuDNN) forward and backward, serving's and training's shapes, each
# as a rested burst and then back to back, with NVML's energy counter and 10 ms clock samples.
#   OUT=DIR bash devrun/attnpw/run.sh -> $OUT/{attention_power.json, attention_power.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/attention_power.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u; date +%s.%N
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/phase_power_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$here/run.sh"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 150 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/phase_power_bench.py" -o "$dir/attention_power.json" --seconds 5 --set attention >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -12 "$log"
