#!/bin/bash
# The device driver of 2026-11-27 07:52 UTC as run (devrun/attn3/run.sh, sha256 5d4e7637...: this copy adds
# these two lines): serving_attention_sweep.py's run (devrun/attn2/) and serving_attention_noncausal.py.
# gcsim helper attn3 (issue 16), one GPU (GPU 0), cap 300 s in all. Reads the GPU's name:
#  - H200: devrun/attn2/run.sh (small-grid causal attention fwd+bwd) -> $OUT/attn2/,
#          devrun/kgrid/run.sh (single-kernel grid) -> $OUT/kgrid/ if >= 100 s are left (its own
#          timeouts end it by ~285 s; here it gets what is left of the cap, less 20 s),
#          then devrun/attn3/noncausal_sweep.py -> $OUT/noncausal/ if >= 25 s are left.
#  - H100 (or anything else): devrun/attn2/run.sh -> $OUT/attn2/, then noncausal_sweep.py -> $OUT/noncausal/.
# Reads clocks and power only; never changes a GPU setting. NVLink multicast off.
#   OUT=DIR bash devrun/attn3/run.sh
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="${OUT:?set OUT}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t0=$(date +%s)
cap=${ATTN3_CAP_S:-290}   # the lead's cap is 300 s; 10 s kept for the tar and the last nvidia-smi
left() { echo $(( cap - ($(date +%s) - t0) )); }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)
{ echo "== start $(date -u +%FT%TZ) gpu0='$gpu'"
  echo "== sha256"; sha256sum "$here/run.sh" "$here/noncausal_sweep.py" "$root/devrun/attn2/run.sh" \
    "$root/devrun/attn2/attn_sweep.py" "$root/devrun/attn2/serving_kernels_bench.py" \
    "$root/devrun/attn2/serving_step_bench.py" "$root/devrun/attn2/torch_timing.py" \
    "$root/devrun/attn2/bench_common.py" "$root/devrun/kgrid/run.sh" "$root/devrun/kgrid/kernel_grid.py" \
    "$root/devrun/kgrid/torch_timing.py" "$root/devrun/kgrid/compiled_kernels.py"
  echo "== nvidia-smi"; nvidia-smi
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,vbios_version,power.limit,clocks.max.sm,clocks.max.mem,memory.total,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "cudnn", torch.backends.cudnn.version())'
} > "$out/machine_attn3.txt" 2>&1
echo "[attn3] $(date -u +%T) GPU 0: $gpu"

echo "[attn3] $(date -u +%T) attn2 sweep (its own timeout 185 s), $(left) s left"
OUT="$out" timeout -k 5 $(( $(left) < 190 ? $(left) : 190 )) bash "$root/devrun/attn2/run.sh" > "$out/attn2_run_stdout.log" 2>&1
echo "[attn3] $(date -u +%T) attn2 rc=$? ($(tail -c 300 "$out/attn2/attention_sweep.log" 2>/dev/null | grep -o 'rc=[0-9]*' | tail -1))"

nc_sweep() {
  local l=$(left)
  if [ "$l" -lt 25 ]; then echo "[attn3] $(date -u +%T) non-causal sweep skipped: $l s left"; return; fi
  mkdir -p "$out/noncausal"
  echo "[attn3] $(date -u +%T) non-causal sweep, $l s left"
  timeout -k 3 $(( l - 5 )) python3 "$here/noncausal_sweep.py" -o "$out/noncausal/noncausal_sweep.json" \
    --budget-s $(( l - 15 < 60 ? l - 15 : 60 )) > "$out/noncausal/noncausal_sweep.log" 2>&1
  echo "[attn3] $(date -u +%T) non-causal rc=$?"; tail -3 "$out/noncausal/noncausal_sweep.log"
  rm -f "$out/noncausal/"*.tmp
}

case "$gpu" in
  *H200*)
    l=$(left)
    if [ "$l" -ge 100 ]; then
      echo "[attn3] $(date -u +%T) kgrid on the H200, $l s left (timeout $(( l - 20 )) s)"
      mkdir -p "$out/kgrid"
      OUT="$out/kgrid" timeout -k 5 $(( l - 20 )) bash "$root/devrun/kgrid/run.sh" > "$out/kgrid/run_stdout.log" 2>&1
      echo "[attn3] $(date -u +%T) kgrid rc=$?"; tail -3 "$out/kgrid/run_stdout.log"
      rm -f "$out/kgrid/"*.tmp
    else
      echo "[attn3] $(date -u +%T) kgrid skipped: $l s left"
    fi
    nc_sweep ;;
  *)
    nc_sweep ;;
esac
{ echo "== end $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$out/machine_attn3.txt" 2>&1
echo "[attn3] $(date -u +%T) done in $(( $(date +%s) - t0 )) s"
