#!/bin/bash
# gcsim helper "interf4" (issue 16): memory-bound kernels beside NCCL all-reduces on 4 GPUs, both
# sides' times (calibration/microbench/gemm_beside_nccl.py, suites ddp and step, "pair" releases:
# memkern_bench.py's gating, one event pair per side). Three processes, so that a stalled
# collective in one cannot take the others' time:
#  1. w4_big (4 GPUs): an eager backward's memory-bound kernels (bf16 add 8/32/64 MiB, mul 32,
#     silu 32, bf16->fp32 cast 16/64, rms_norm 32) beside back-to-back 256 MiB bf16 all-reduces;
#     single kernels of the measured DP4 step's eager backward at its sizes (SwiGLU backward's cat,
#     silu_backward, mul; RMSNorm backward's fp32 pow and broadcast mul; the whole RMSNorm
#     backward) beside fp32 all-reduces of the step's 344 MiB fc1 bucket (2 buffers).
#  2. w4_25 (4 GPUs): the same kernels beside DDP's 25 MiB bucket (fp32 and bf16, 8 buffers).
#  3. w2_ddp (GPUs 0,1): stage 1's and 2's ddp kernels on 2 GPUs (256 MiB first).
# The second call's per-item harness stalled at the first gated 25 MiB all-reduce (and at the
# first gated 256 MiB all-gather on 4 GPUs, after 12 cases of suite interf); this call uses the
# harness that ran gated 25 MiB all-reduces before. Every collective is warmed up outside the
# harness, NCCL connects at init (NCCL_RUNTIME_CONNECT=0), each process writes partial results
# after every case and leaves after --stall-s without progress. Caps 100 + 70 + 60 s.
# Writes $OUT/interf4/{machine.txt,w4_big.*,w4_25.*,w2_ddp.*}. Reads clocks and power only;
# never changes a GPU setting. NVLS off.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/interf4"
mkdir -p "$dir"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
# Connect every channel and protocol at init (the default before NCCL 2.22), not lazily at the
# first collective that needs it: no connection set-up can fall inside a timed release.
export NCCL_RUNTIME_CONNECT=0
{
  date -u
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,power.limit,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/run.sh" "$here/gemm_beside_nccl.py" "$0"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version(), 'gpus', torch.cuda.device_count())"
} > "$dir/machine.txt" 2>&1
cat "$dir/machine.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -gt 4 ] && ngpu=4

run_one() {  # name world suite comms budget cap stall
  local name=$1 w=$2 suite=$3 comms=$4 budget=$5 cap=$6 stall=$7
  local part; part=$(mktemp -d /tmp/interf4_partials.XXXXXX)
  local devs; devs=$(seq -s, 0 $((w - 1)))
  local log="$dir/$name.log"
  { date -u; echo "world $w suite $suite comms $comms budget $budget cap $cap stall $stall CUDA_VISIBLE_DEVICES=$devs"; } > "$log"
  echo "== $name: world $w suite $suite $(date -u)"
  CUDA_VISIBLE_DEVICES=$devs timeout -k 5 $cap python3 -m torch.distributed.run --standalone \
    --nproc_per_node=$w "$here/gemm_beside_nccl.py" --suite "$suite" --comms "$comms" --out "$dir" \
    --name "$name.json" --partial-dir "$part" --budget-s "$budget" --stall-s "$stall" >> "$log" 2>&1
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
  grep -v "NCCL INFO" "$log" | tail -70
}

if [ "$ngpu" -ge 4 ]; then
  run_one w4_big 4 ddp+step 'ar256MiB|ar344' 70 100 25
  run_one w4_25 4 ddp+step 'ar25MiB' 45 70 20
else
  echo "only $ngpu GPUs: no 4-GPU run"
fi
[ "$ngpu" -ge 2 ] && run_one w2_ddp 2 ddp '.*' 40 60 20
echo "all done $(date -u)"
