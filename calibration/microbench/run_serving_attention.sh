#!/bin/bash
# Issue 16 (the serving grids of cuDNN SDPA, run as devrun/attn2/run.sh): SDPA causal GQA prefill attention on the serving model's small grids
# (batch 1, 16-64 query heads, 512-8192 tokens), forward (serving_kernels_bench.py's attention sweep)
# and the default backend's backward, on GPU 0 only. Cap 200 s: the script starts no new TP size
# past ~150 s of its budget (counted before torch's import); timeout kills it at 185 s.
#   OUT=DIR bash devrun/attn2/run.sh -> $OUT/attn2/{attention_sweep.json, attention_sweep.log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/attn2"
mkdir -p "$dir"
log="$dir/attention_sweep.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/run.sh" "$here/serving_attention_sweep.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py" "$here/bench_common.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
timeout -k 5 185 python3 "$here/serving_attention_sweep.py" -o "$dir/attention_sweep.json" --budget-s 150 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -45 "$log"
