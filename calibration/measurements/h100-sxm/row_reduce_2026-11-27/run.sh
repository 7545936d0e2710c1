#!/bin/bash
# One device call (one GPU): row_reduce_bench.py, then Nsight Compute on the argmax and the mean
# of a decode step's shapes (8 x 128256 and 32 x 4096 fp32; ncu may lack counter permissions
# there: its output says so). Wall cap ~200 s.
#   OUT=DIR bash run_row_reduce.sh -> $OUT/{row_reduce.json, row_reduce.log, ncu.txt}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}"; mkdir -p "$dir"; log="$dir/row_reduce.log"
export PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  sha256sum "$here/row_reduce_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$here/run_row_reduce.sh"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0 timeout -k 5 120 python3 "$here/row_reduce_bench.py" -o "$dir/row_reduce.json" >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
cat > /tmp/ncu_probe.py <<'PY'
import torch
x = torch.randn(8, 128256, device="cuda")
y = torch.randn(32, 4096, device="cuda")
for _ in range(3):
    torch.argmax(x, dim=-1); y.mean(-1); x.amax(-1)
torch.cuda.synchronize()
PY
{ command -v ncu; CUDA_VISIBLE_DEVICES=0 timeout -k 5 70 ncu --launch-skip 3 --launch-count 3 -k regex:reduce_kernel \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    python3 /tmp/ncu_probe.py; echo "ncu rc=$?"; } > "$dir/ncu.txt" 2>&1
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
tail -5 "$log"; tail -30 "$dir/ncu.txt"
