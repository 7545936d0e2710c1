#!/bin/bash
# NCCL measurements on GPUs 0..n-1 of a device machine inside a wall-time cap (torch import and
# NCCL init included), NVLink multicast off throughout. One script for every group size: it
# replaces run_device_nccl_2gpu.sh and run_device_nccl_4gpu.sh (their sha256 stay in the
# 2026-11-26 measurement READMEs, the scripts in git history); PLAN=sweep with GPUS=2 or 4 runs
# what they ran.
#   [GPUS=2|4] [PLAN=sweep|study|bcast] [NCCL_CAP_S=225] calibration/microbench/run_device_nccl_gpus.sh [OUTDIR]
# PLAN=sweep, on GPUS GPUs, each run only if the time left allows it:
#   1. default: every op (and device_copy) with NCCL's own choices, 8 B to 1 GiB
#   2. probe:   each op and size once with NCCL_DEBUG_SUBSYS=TUNING (what NCCL chose per size)
#   3. forced:  all_reduce under NCCL_ALGO=Ring x NCCL_PROTO={Simple,LL,LL128}, 8 B to 64 MiB
#   4. repeat:  the default run again (run-to-run spread)
# PLAN=study (issue 17: what nccl-tests' back-to-back loop measures), on GPUS GPUs, then on 2:
#   b2b_nG:   broadcast, all_gather, all_reduce, 8 B to 64 MiB, back-to-back calls
#   fence_nG: the same with every call followed by an 8-byte all_reduce (--fence): one call's
#             end-to-end time = fenced time - the 8-byte all_reduce's
#   a2a_nG:   all_to_all 256 KiB to 256 MiB, 4 sizes per octave
# PLAN=bcast (issue 17's broadcast 2-32 MiB on GPUS GPUs: what a chain's slice is), broadcast
# 1-64 MiB, 2 sizes per octave, in this order while the time lasts:
#   b2b_nG, fence_nG:             NCCL's defaults, back to back and fenced (as PLAN=study)
#   b2b_buf1m_nG, fence_buf1m_nG: NCCL_BUFFSIZE=1 MiB (Simple step 128 KiB instead of 512 KiB)
#   b2b_ch8_nG:                   NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8 (3x a channel's link share)
#   probe_nG:                     each size once with NCCL_DEBUG_SUBSYS=TUNING,COLL (algorithm,
#                                 protocol and channels NCCL picks), merged as `choices`
#   b2b_buf16m_nG:                NCCL_BUFFSIZE=16 MiB (Simple step 2 MiB)
#   The forced runs are calibration-only (rows carry "forced_env").
# Writes exactly two files: OUTDIR/<name>.json (every run merged; rows carry "run": the run's
# name, e.g. default_n4.json, fence_n2.json) and OUTDIR/<name>_info.log (machine state
# before/after, NCCL init log, run logs); <name> = nccl_<GPUS>gpu (sweep), nccl_study (study), nccl_bcast_<GPUS>gpu (bcast).
# As the lead's entry point: bash devrun/nccl/run.sh (OUTDIR = $OUT/nccl).
gpus=${GPUS:-4}
plan=${PLAN:-sweep}
out=${1:-${OUT:?set OUT or give OUTDIR}/nccl}
cap=${NCCL_CAP_S:-225}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
mkdir -p "$out"
start=$(date +%s)
tmp=$(mktemp -d)
name="nccl_${gpus}gpu"
[ "$plan" = study ] && name="nccl_study"
[ "$plan" = bcast ] && name="nccl_bcast_${gpus}gpu"
info="$out/${name}_info.log"
: > "$info"
runs=()
logs=()
left() { echo $((cap - ($(date +%s) - start))); }
smi() {
  echo "--- nvidia-smi $1 $(date -u +%FT%TZ)" >> "$info"
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$info" 2>&1
}
launch() {  # n max_seconds label outfile [args...]: runs only if 25 s more than asked are left
  local n=$1 want=$2 label=$3 file=$4; shift 4
  local l
  l=$(left)
  if [ "$l" -lt 25 ]; then echo "=== $label skipped: ${l}s left" | tee -a "$info"; return 1; fi
  local t=$(( want < l - 15 ? want : l - 15 ))
  local devs
  devs=$(seq -s, 0 $((n - 1)))
  echo "=== $label: GPUs $devs $(date -u +%T) limit ${t}s NCCL_ALGO=${NCCL_ALGO-} NCCL_PROTO=${NCCL_PROTO-}" | tee -a "$info"
  CUDA_VISIBLE_DEVICES=$devs timeout -k 5 "$t" python3 -m torch.distributed.run --standalone --nproc_per_node="$n" \
    "$here/nccl_sweep.py" -o "$file" --label "$label" "$@" > "$tmp/$label.log" 2>&1
  echo "rc=$? $(date -u +%T)" | tee -a "$info"
  # A run cut off at its limit keeps the ops it finished (nccl_sweep.py writes after each op).
  if [ -s "$file" ]; then runs+=("$file"); fi
  grep -vE "NCCL INFO" "$tmp/$label.log" | tail -40 >> "$info"
  return 0
}
smi before
(cd "$here" && sha256sum run_device_nccl_gpus.sh nccl_sweep.py torch_timing.py merge_nccl.py) >> "$info" 2>&1
nvidia-smi topo -m >> "$info" 2>&1
if [ "$plan" = sweep ]; then
  g=$gpus
  ops=all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,send_recv,device_copy
  if NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV launch "$g" 110 "default_n$g" "$tmp/default_n$g.json" --ops $ops --max-bytes 1073741824; then
    grep -E "\[0\] NCCL INFO (NCCL version|Channel|Trees|Ring|comm .* nRanks|Connected|P2P|NVLS|threadThresholds|[0-9]+ coll channels|CC Off|.*Algorithm|.*Max NThreads|.*Protocol|.*LL128|.*Simple|.* LL )" \
      "$tmp/default_n$g.log" >> "$info"
  fi
  if NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,COLL launch "$g" 40 "probe_n$g" "$tmp/probe_n$g.json" --probe --max-bytes 1073741824; then
    grep -E "\[0\] NCCL INFO .* Bytes -> Algo" "$tmp/probe_n$g.log" | sed "s/^/n$g /" > "$tmp/tuning_n$g.log"
    wc -l < "$tmp/tuning_n$g.log" | sed 's/^/tuning lines: /' >> "$info"
    logs+=(--tuning-log "$tmp/tuning_n$g.log")
  fi
  for proto in Simple LL LL128; do
    NCCL_ALGO=Ring NCCL_PROTO=$proto launch "$g" 35 "forced_Ring_${proto}_n$g" "$tmp/forced_Ring_${proto}_n$g.json" --ops all_reduce --max-bytes 67108864
  done
  if [ "$(left)" -ge 70 ]; then
    launch "$g" 110 "repeat_n$g" "$tmp/repeat_n$g.json" --ops $ops --max-bytes 1073741824
  fi
elif [ "$plan" = study ]; then
  have=$(nvidia-smi -L | wc -l)
  for g in $gpus 2; do
    if [ "$g" -gt "$have" ]; then continue; fi
    launch "$g" 60 "b2b_n$g" "$tmp/b2b_n$g.json" --ops broadcast,all_gather,all_reduce --max-bytes 67108864
    launch "$g" 60 "fence_n$g" "$tmp/fence_n$g.json" --fence --ops broadcast,all_gather,all_reduce --max-bytes 67108864
    launch "$g" 60 "a2a_n$g" "$tmp/a2a_n$g.json" --ops all_to_all --min-bytes 262144 --max-bytes 268435456 --steps-per-octave 4
    if [ "$g" = 2 ]; then break; fi
  done
elif [ "$plan" = bcast ]; then
  g=$gpus
  sizes=(--ops broadcast --min-bytes 1048576 --max-bytes 67108864 --steps-per-octave 2)
  # Rank 0's init lines (environment settings NCCL took, channels, transports) into the log.
  initlog() { grep -E "\[0\] NCCL INFO (NCCL version|.*set by environment|[0-9]+ coll channels|Channel 0[01]/|comm .* nRanks|.*P2P)" "$tmp/$1.log" | head -24 >> "$info"; }
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV launch "$g" 30 "b2b_n$g" "$tmp/b2b_n$g.json" "${sizes[@]}" && initlog "b2b_n$g"
  launch "$g" 30 "fence_n$g" "$tmp/fence_n$g.json" --fence "${sizes[@]}"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_BUFFSIZE=1048576 launch "$g" 30 "b2b_buf1m_n$g" "$tmp/b2b_buf1m_n$g.json" "${sizes[@]}" && initlog "b2b_buf1m_n$g"
  NCCL_BUFFSIZE=1048576 launch "$g" 30 "fence_buf1m_n$g" "$tmp/fence_buf1m_n$g.json" --fence "${sizes[@]}"
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_MIN_NCHANNELS=8 NCCL_MAX_NCHANNELS=8 launch "$g" 30 "b2b_ch8_n$g" "$tmp/b2b_ch8_n$g.json" "${sizes[@]}" && initlog "b2b_ch8_n$g"
  if NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING,COLL launch "$g" 30 "probe_n$g" "$tmp/probe_n$g.json" --probe "${sizes[@]}"; then
    grep -E "\[0\] NCCL INFO .* Bytes -> Algo" "$tmp/probe_n$g.log" | sed "s/^/n$g /" > "$tmp/tuning_n$g.log"
    wc -l < "$tmp/tuning_n$g.log" | sed 's/^/tuning lines: /' >> "$info"
    head -30 "$tmp/tuning_n$g.log" >> "$info"
    logs+=(--tuning-log "$tmp/tuning_n$g.log")
  fi
  NCCL_BUFFSIZE=16777216 launch "$g" 30 "b2b_buf16m_n$g" "$tmp/b2b_buf16m_n$g.json" "${sizes[@]}"
else
  echo "PLAN must be sweep, study or bcast, not '$plan'" | tee -a "$info"
fi
smi after
python3 "$here/merge_nccl.py" -o "$out/$name.json" "${runs[@]}" "${logs[@]}" 2>&1 | tee -a "$info"
echo "total $(( $(date +%s) - start ))s" | tee -a "$info"
rm -rf "$tmp"
