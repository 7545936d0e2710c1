#!/bin/bash
# How NCCL kernels hold SMs (gcsim helper "holds"), 2 GPUs, one call < 150 s (torch import included):
#   OUT=DIR bash calibration/microbench/run_holds.sh -> $OUT/holds/holds.{json,log}
# Launch 1: SDPA beside waiting NCCL ops (and profiled), then Megatron's reduce-scatter/GEMM order
# without CUDA_DEVICE_MAX_CONNECTIONS; launch 2: the order again with CUDA_DEVICE_MAX_CONNECTIONS=1.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/holds"; mkdir -p "$dir"
tmp=$(mktemp -d)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 OMP_NUM_THREADS=1
export TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING=false
export CUDA_VISIBLE_DEVICES=0,1
log="$dir/holds.log"
{ date -u; sha256sum "$here/holds_bench.py"; } > "$log"
unset CUDA_DEVICE_MAX_CONNECTIONS
timeout -k 5 80 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/holds_bench.py" -o "$tmp/conn_default.json" --mode waiting,order --budget-s 40 >> "$log" 2>&1
echo "launch 1 rc=$? $(date -u)" >> "$log"
CUDA_DEVICE_MAX_CONNECTIONS=1 timeout -k 5 45 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/holds_bench.py" -o "$tmp/conn_1.json" --mode order >> "$log" 2>&1
echo "launch 2 rc=$? $(date -u)" >> "$log"
python3 - "$tmp" "$dir/holds.json" >> "$log" 2>&1 <<'PY'
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
merged = {}
for p in sorted(glob.glob(os.path.join(tmp, "*.json.rank*"))):
    key = os.path.basename(p).replace(".json", "")
    try:
        with open(p) as f:
            merged[key] = json.load(f)
    except Exception as ex:  # noqa: BLE001
        merged[key] = {"read_error": repr(ex)}
with open(out, "w") as f:
    json.dump(merged, f, indent=1)
print("merged", sorted(merged))
PY
rm -rf "$tmp"
echo "done $(date -u)" >> "$log"
