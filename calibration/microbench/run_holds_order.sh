#!/bin/bash
# Megatron's reduce-scatter-before-GEMM order only (holds_bench.py --mode order), 2 GPUs, < 100 s:
# CUDA_DEVICE_MAX_CONNECTIONS unset, then 1.  OUT=DIR bash ... -> $OUT/holds/holds_order.{json,log}
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/holds"; mkdir -p "$dir"
tmp=$(mktemp -d)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 OMP_NUM_THREADS=1
export CUDA_VISIBLE_DEVICES=0,1
log="$dir/holds_order.log"
{ date -u; sha256sum "$here/holds_bench.py"; } > "$log"
unset CUDA_DEVICE_MAX_CONNECTIONS
timeout -k 5 45 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/holds_bench.py" -o "$tmp/conn_default.json" --mode order >> "$log" 2>&1
echo "launch 1 rc=$? $(date -u)" >> "$log"
CUDA_DEVICE_MAX_CONNECTIONS=1 timeout -k 5 45 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/holds_bench.py" -o "$tmp/conn_1.json" --mode order >> "$log" 2>&1
echo "launch 2 rc=$? $(date -u)" >> "$log"
python3 - "$tmp" "$dir/holds_order.json" >> "$log" 2>&1 <<'PY'
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
merged = {}
for p in sorted(glob.glob(os.path.join(tmp, "*.json.rank*"))):
    try:
        with open(p) as f:
            merged[os.path.basename(p).replace(".json", "")] = json.load(f)
    except Exception as ex:  # noqa: BLE001
        merged[os.path.basename(p)] = {"read_error": repr(ex)}
with open(out, "w") as f:
    json.dump(merged, f, indent=1)
print("merged", sorted(merged))
PY
rm -rf "$tmp"
echo "done $(date -u)" >> "$log"
