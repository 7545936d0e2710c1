#!/bin/bash
# Attention beside NCCL kernels that wait for a late peer, 2 GPUs (gcsim issue 16): one call, < 100 s.
#   OUT=DIR bash calibration/microbench/run_attention_beside_waiting_nccl.sh -> $OUT/ppwait/*.{json,log}
here=$(cd "$(dirname "$0")" && pwd)  # calibration/microbench/
dir="${OUT:?set OUT}/ppwait"; mkdir -p "$dir"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 OMP_NUM_THREADS=1
log="$dir/attention_beside_waiting_nccl.log"
{ date -u; sha256sum "$here/attention_beside_waiting_nccl.py"; } > "$log"
CUDA_VISIBLE_DEVICES=0,1 timeout -k 5 100 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/attention_beside_waiting_nccl.py" -o "$dir/attention_beside_waiting_nccl.json" --budget-s 70 >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
# a killed run leaves per-rank files: keep rank 0's as the result
[ -s "$dir/attention_beside_waiting_nccl.json" ] || mv "$dir/attention_beside_waiting_nccl.json.rank0" "$dir/attention_beside_waiting_nccl.json" 2>/dev/null
rm -f "$dir"/*.rank*
