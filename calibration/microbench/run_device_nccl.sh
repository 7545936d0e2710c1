#!/bin/bash
# NCCL sweeps on a multi-GPU device machine, NVLink multicast off throughout.
#   calibration/microbench/run_device_nccl.sh OUTDIR default|forced [GROUP_SIZES]
# default: every op on each group size (GPUs 0..n-1) with NCCL's own choices, plus one
#          probe run per group size with NCCL_DEBUG_SUBSYS=TUNING (what NCCL chose per size);
# forced:  all_reduce on 2 GPUs under NCCL_ALGO x NCCL_PROTO = {Ring, Tree} x {Simple, LL, LL128},
#          8 B to 256 MiB (MAX_FORCED_BYTES).
# Each run's JSON is also copied to COPY_DIR (if set) as soon as it ends, so a call cut off
# at its time limit keeps what finished.
# Writes OUTDIR/nccl_<mode>.json (merged) and OUTDIR/nccl_<mode>_info.log.
out=${1:?OUTDIR}
mode=${2:?default|forced}
sizes=${3:-"2 4"}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d)
info="$out/nccl_${mode}_info.log"
have=$(nvidia-smi -L | wc -l)
runs=()
logs=()
launch() {  # n label outfile [args...]
  local n=$1 label=$2 file=$3; shift 3
  local vis=$(seq -s, 0 $((n - 1)))
  echo "=== $label: $n GPUs ($vis) $(date -u +%T) NCCL_ALGO=${NCCL_ALGO-} NCCL_PROTO=${NCCL_PROTO-}" | tee -a "$info"
  CUDA_VISIBLE_DEVICES=$vis timeout ${LAUNCH_TIMEOUT:-300} python3 -m torch.distributed.run --standalone --nproc_per_node=$n \
    "$here/nccl_sweep.py" -o "$file" --label "$label" "$@" > "$tmp/$label.log" 2>&1
  echo "rc=$? $(date -u +%T)" | tee -a "$info"
  [ -n "${COPY_DIR:-}" ] && [ -f "$file" ] && cp "$file" "$COPY_DIR/"
  true
}
if [ "$mode" = default ]; then
  nvidia-smi topo -m >> "$info" 2>&1
  for n in $sizes; do
    [ "$n" -le "$have" ] || continue
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV launch $n "default_n$n" "$tmp/default_n$n.json"
    grep -E "\[0\] NCCL INFO (NCCL version|Channel|Trees|Ring|comm .* nRanks|Connected|P2P|NVLS|threadThresholds|[0-9]+ coll channels|CC Off|.*Algorithm|.*Max NThreads|.*Protocol|.*LL128|.*Simple|.* LL )" \
      "$tmp/default_n$n.log" >> "$info"
    grep -vE "NCCL INFO" "$tmp/default_n$n.log" | tail -120 >> "$info"
    runs+=("$tmp/default_n$n.json")
    [ -n "${SKIP_PROBE:-}" ] && continue
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,COLL launch $n "probe_n$n" "$tmp/probe_n$n.json" --probe
    grep -E "\[0\] NCCL INFO .* Bytes -> Algo" "$tmp/probe_n$n.log" | sed "s/^/n$n /" > "$tmp/tuning_n$n.log"
    grep -m1 -E "\[0\].*nranks" "$tmp/probe_n$n.log" | sed "s/^/n$n /" >> "$tmp/tuning_n$n.log"
    cat "$tmp/tuning_n$n.log" >> "$info"
    logs+=(--tuning-log "$tmp/tuning_n$n.log")
  done
else
  for algo in Ring Tree; do
    for proto in Simple LL LL128; do
      NCCL_ALGO=$algo NCCL_PROTO=$proto launch 2 "forced_${algo}_${proto}_n2" "$tmp/forced_${algo}_${proto}.json" --ops all_reduce --max-bytes ${MAX_FORCED_BYTES:-268435456}
      grep -vE "NCCL INFO" "$tmp/forced_${algo}_${proto}_n2.log" | tail -30 >> "$info"
      runs+=("$tmp/forced_${algo}_${proto}.json")
    done
  done
fi
python3 "$here/merge_nccl.py" -o "$out/nccl_$mode.json" "${runs[@]}" "${logs[@]}" 2>&1 | tee -a "$info"
grep -E "^=== |rc=|merged" "$info"
