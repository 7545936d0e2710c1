#!/bin/bash
# Issue 16 (decode attention as cuDNN runs it; run as devrun/decsplit/run.sh): PyTorch's default SDPA
# for one decode token over batch 1-128, 256-16384 keys, GQA 1x8 ... 8x64 heads, d 128, on GPU 0 only:
# spacing by CUDA events, each call's kernels (the split-KV kernel, the lean_reduction_kernel) by
# torch.profiler. Cap 240 s: the script starts no new case past its 200 s budget (counted before
# torch's import); timeout kills it at 240 s.
#   OUT=DIR bash devrun/decsplit/run.sh -> $OUT/decsplit/{decode_attention_split.json, .log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/decsplit"
mkdir -p "$dir"
log="$dir/decode_attention_split.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/run.sh" "$here/decode_attention_split.py" "$here/serving_kernels_bench.py" "$here/serving_step_bench.py" "$here/torch_timing.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$log" 2>&1
timeout -k 5 240 python3 "$here/decode_attention_split.py" -o "$dir/decode_attention_split.json" --budget-s 200 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -30 "$log"
