#!/bin/bash
# compiled_norm_fold.py on GPU 0 (one GPU, H100 or H200), cap ~200 s.
here=$(cd "$(dirname "$0")" && pwd)

mb="$here"
dir="${OUT:?set OUT}"
mkdir -p "$dir"
log="$dir/compiled_norm_fold.log"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$mb/compiled_norm_fold.py" "$mb/bench_common.py" "$mb/torch_timing.py" "$0"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} > "$log" 2>&1
timeout -k 10 190 python3 "$mb/compiled_norm_fold.py" -o "$dir/compiled_norm_fold.json" --budget-s 150 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
tail -20 "$log"
