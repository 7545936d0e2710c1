#!/bin/bash
# gcsim helper "interf4" (issue 16): kernels beside NCCL collectives on 4 GPUs, both sides' times.
#  1. 4 GPUs: gemm_beside_nccl.py --suite ddp+interf: an eager backward's memory-bound kernels
#     (bf16 add 8/32/64 MiB, mul 32, silu 32, bf16->fp32 cast 16/64, rms_norm 32) beside
#     back-to-back 25 MiB all-reduces (fp32 and bf16, 8 distinct bucket buffers cycled) and
#     256 MiB bf16 ones ("steady"), then the existing interf suite (GEMMs + add beside
#     all-reduce 256 MiB / 1 GiB, reduce-scatter, all-gather 256 MiB). budget 130 s, kill 170 s.
#     The default (the second call; INTERF4_SUITE=ddp+interf was the first) adds, after the ddp cases, single kernels of
#     the measured DP4 step's eager backward at its sizes (SwiGLU backward's cat, silu_backward,
#     mul; RMSNorm backward's fp32 pow and broadcast mul; the whole RMSNorm backward) beside fp32
#     all-reduces of the step's 344 MiB fc1 bucket and of 25 MiB. budget 150 s, kill 190 s.
#  2. 2 GPUs (0,1) of the same host: --suite ddp only (world-size effect). budget 60 s, kill 90 s.
# Writes $OUT/interf4/{w4.json,w4.log,w2.json,w2.log,machine.txt}. Cap ~290 s. Reads clocks and
# power only; never changes a GPU setting. NVLS off.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/interf4"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
{
  date -u
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/run.sh" "$here/gemm_beside_nccl.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version(), 'gpus', torch.cuda.device_count())"
} > "$dir/machine.txt" 2>&1
cat "$dir/machine.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -gt 4 ] && ngpu=4

run_one() {  # name world suite budget cap
  local name=$1 w=$2 suite=$3 budget=$4 cap=$5
  local part; part=$(mktemp -d /tmp/interf4_partials.XXXXXX)
  local devs; devs=$(seq -s, 0 $((w - 1)))
  local log="$dir/$name.log"
  { date -u; echo "world $w suite $suite budget $budget cap $cap CUDA_VISIBLE_DEVICES=$devs"; } > "$log"
  echo "== $name: world $w suite $suite $(date -u)"
  CUDA_VISIBLE_DEVICES=$devs timeout -k 5 $cap python3 -m torch.distributed.run --standalone \
    --nproc_per_node=$w "$here/gemm_beside_nccl.py" --suite "$suite" --out "$dir" \
    --name "$name.json" --partial-dir "$part" --budget-s "$budget" >> "$log" 2>&1
  echo "rc=$? $(date -u)" >> "$log"
  if [ ! -s "$dir/$name.json" ]; then
    python3 - "$part" "$dir/$name.json" >> "$log" 2>&1 <<'PY'
import glob, json, os, sys
ranks = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "rank*_partial.json"))):
    try:
        with open(p) as f:
            ranks[os.path.basename(p)[4:-len("_partial.json")]] = json.load(f)
    except Exception as ex:  # noqa: BLE001
        ranks[os.path.basename(p)] = {"error": repr(ex)}
with open(sys.argv[2], "w") as f:
    json.dump({"schema": "gcsim.calibration.interference.v1", "partial": True, "ranks": ranks},
              f, indent=1)
print("merged partials of", len(ranks), "ranks (the run did not finish)")
PY
  fi
  { date -u; nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv; } >> "$log" 2>&1
  rm -rf "$part"
  grep -v "NCCL INFO" "$log" | tail -60
}

suite4=${INTERF4_SUITE:-ddp+step+interf}
if [ "$ngpu" -ge 4 ]; then
  if [ "$suite4" = ddp+interf ]; then run_one w4 4 "$suite4" 130 170; else run_one w4 4 "$suite4" 150 190; fi
else
  echo "only $ngpu GPUs: no 4-GPU run"
fi
if [ "$ngpu" -ge 2 ]; then
  run_one w2 2 ddp 60 90
fi
echo "all done $(date -u)"
