#!/bin/bash
# NCCL sweeps on a 2-GPU device machine inside a wall-time cap (default 225 s, torch import and
# NCCL init included), NVLink multicast off throughout. Runs, in order, each only if the time
# left allows it:
#   1. default: every op (and device_copy) on GPUs 0-3 with NCCL's own choices, 8 B to 1 GiB
#   2. probe:   each op and size once with NCCL_DEBUG_SUBSYS=TUNING (what NCCL chose per size)
#   3. forced:  all_reduce under NCCL_ALGO=Ring x NCCL_PROTO={Simple,LL,LL128}, 8 B to 64 MiB
#   4. repeat:  the default run again (run-to-run spread)
# Writes exactly two files: OUTDIR/nccl_4gpu.json (every run merged; rows carry "run": the
# run's name, e.g. default_n4.json, forced_Ring_LL_n4.json, repeat_n4.json) and
# OUTDIR/nccl_4gpu_info.log (machine state before/after, NCCL init log, run log).
#   [NCCL_CAP_S=225] calibration/microbench/run_device_nccl_4gpu.sh [OUTDIR]
# As the lead's entry point: bash devrun/nccl/run.sh (OUTDIR = $OUT/nccl).
out=${1:-${OUT:?set OUT}/nccl4}
cap=${NCCL_CAP_S:-225}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
mkdir -p "$out"
start=$(date +%s)
tmp=$(mktemp -d)
info="$out/nccl_4gpu_info.log"
: > "$info"
runs=()
logs=()
left() { echo $((cap - ($(date +%s) - start))); }
smi() {
  echo "--- nvidia-smi $1 $(date -u +%FT%TZ)" >> "$info"
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$info" 2>&1
}
launch() {  # max_seconds label outfile [args...]: runs only if 25 s more than asked are left
  local want=$1 label=$2 file=$3; shift 3
  local l=$(left)
  if [ "$l" -lt 25 ]; then echo "=== $label skipped: ${l}s left" | tee -a "$info"; return 1; fi
  local t=$(( want < l - 15 ? want : l - 15 ))
  echo "=== $label: GPUs 0-3 $(date -u +%T) limit ${t}s NCCL_ALGO=${NCCL_ALGO-} NCCL_PROTO=${NCCL_PROTO-}" | tee -a "$info"
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 "$t" python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
    "$here/nccl_sweep.py" -o "$file" --label "$label" "$@" > "$tmp/$label.log" 2>&1
  echo "rc=$? $(date -u +%T)" | tee -a "$info"
  return 0
}
smi before
nvidia-smi topo -m >> "$info" 2>&1
ops=all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,send_recv,device_copy
if NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV launch 110 default_n4 "$tmp/default_n4.json" --ops $ops --max-bytes 1073741824; then
  grep -E "\[0\] NCCL INFO (NCCL version|Channel|Trees|Ring|comm .* nRanks|Connected|P2P|NVLS|threadThresholds|[0-9]+ coll channels|CC Off|.*Algorithm|.*Max NThreads|.*Protocol|.*LL128|.*Simple|.* LL )" \
    "$tmp/default_n4.log" >> "$info"
  grep -vE "NCCL INFO" "$tmp/default_n4.log" | tail -60 >> "$info"
  runs+=("$tmp/default_n4.json")
fi
if NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,COLL launch 40 probe_n4 "$tmp/probe_n4.json" --probe --max-bytes 1073741824; then
  grep -E "\[0\] NCCL INFO .* Bytes -> Algo" "$tmp/probe_n4.log" | sed "s/^/n4 /" > "$tmp/tuning_n4.log"
  grep -vE "NCCL INFO" "$tmp/probe_n4.log" | tail -10 >> "$info"
  wc -l < "$tmp/tuning_n4.log" | sed 's/^/tuning lines: /' >> "$info"
  logs+=(--tuning-log "$tmp/tuning_n4.log")
fi
for proto in Simple LL LL128; do
  if NCCL_ALGO=Ring NCCL_PROTO=$proto launch 35 "forced_Ring_${proto}_n4" "$tmp/forced_Ring_${proto}_n4.json" --ops all_reduce --max-bytes 67108864; then
    grep -vE "NCCL INFO" "$tmp/forced_Ring_${proto}_n4.log" | tail -8 >> "$info"
    runs+=("$tmp/forced_Ring_${proto}_n4.json")
  fi
done
if [ "$(left)" -ge 70 ] && launch 110 repeat_n4 "$tmp/repeat_n4.json" --ops $ops --max-bytes 1073741824; then
  grep -vE "NCCL INFO" "$tmp/repeat_n4.log" | tail -20 >> "$info"
  runs+=("$tmp/repeat_n4.json")
fi
smi after
python3 "$here/merge_nccl.py" -o "$out/nccl_4gpu.json" "${runs[@]}" "${logs[@]}" 2>&1 | tee -a "$info"
echo "total $(( $(date +%s) - start ))s" | tee -a "$info"
rm -rf "$tmp"
