#!/bin/bash
# Memory-bound kernels on fewer SMs and beside NCCL all-reduces (gcsim helper "memkern"),
# 2 GPUs, one call < 150 s wall (torch import and nvcc included):
#   OUT=DIR bash calibration/microbench/run_memkern.sh -> $OUT/memkern/memkern.{json,log}
# Builds sm_holder.cu with the machine's nvcc (falls back to a libsm_holder.so carried beside
# this script), then one torchrun of memkern_bench.py on GPUs 0 and 1. MEMKERN_ARGS adds options
# (the second call: MEMKERN_ARGS="--no-sweep --ar 25x1,25x8,64x1,64x4,256x1,256x2
#  --kernels add,copy,layer_norm_fwd,layer_norm_bwd --beside-sizes 64,16,256,4"; run_memkern_l2.sh).
here=$(cd "$(dirname "$0")" && pwd)
src="$here/sm_holder.cu"; [ -f "$src" ] || src="$here/cuda/sm_holder.cu"
dir="${OUT:?set OUT}/memkern"; mkdir -p "$dir"
tmp=$(mktemp -d)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES=0,1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
log="$dir/memkern.log"
{ date -u; sha256sum "$here/memkern_bench.py" "$src" "$0"; echo "MEMKERN_ARGS=${MEMKERN_ARGS:-}"; } > "$log"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv >> "$log" 2>&1
so="$tmp/libsm_holder.so"
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if timeout 60 "$nvcc_bin" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -shared -Xcompiler -fPIC \
     -Xptxas -v -o "$so" "$src" >> "$log" 2>&1; then
  echo "built holder with $nvcc_bin $(date -u)" >> "$log"
else
  echo "nvcc failed; using the carried libsm_holder.so" >> "$log"
  cp "$here/libsm_holder.so" "$so"
fi
sha256sum "$so" >> "$log"
timeout -k 5 135 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
  "$here/memkern_bench.py" -o "$tmp/memkern.json" --holder-so "$so" \
  --beside-until-s 55 --budget-s 112 ${MEMKERN_ARGS:-} >> "$log" 2>&1
echo "torchrun rc=$? $(date -u)" >> "$log"
python3 - "$tmp" "$dir/memkern.json" >> "$log" 2>&1 <<'PY'
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
merged = {}
for p in sorted(glob.glob(os.path.join(tmp, "memkern.json.rank*"))):
    key = os.path.basename(p).replace("memkern.json.", "")
    try:
        with open(p) as f:
            merged[key] = json.load(f)
    except Exception as ex:  # noqa: BLE001
        merged[key] = {"read_error": repr(ex)}
with open(out, "w") as f:
    json.dump(merged, f, indent=1)
print("merged", sorted(merged))
PY
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv >> "$log" 2>&1
rm -rf "$tmp"
echo "done $(date -u)" >> "$log"
