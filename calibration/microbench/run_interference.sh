#!/bin/bash
# One device call for issue 16's interference study on 4 GPUs (GPUs 0-3): compute kernels beside
# NCCL all-reduce / reduce-scatter / all-gather, both sides' slowdowns
# (gemm_beside_nccl.py --suite interf). Wall cap 150 s: no case starts 105 s after the
# process started, the launch is killed at 140 s; each rank's partial results are merged into
# the JSON if it is killed. Runs on 2 GPUs when only 2 are there.
#   OUT=DIR bash run_interference.sh   -> $OUT/interf/{interf.json, interf.log}
# With the argument "attention" it runs attention_beside_nccl.py instead (dispatch-order timelines
# of a collective launched mid-GEMM-chain, SDPA beside NCCL; 90 s budget, killed at 128 s):
#   OUT=DIR bash run_interference.sh attention -> $OUT/interf/{attention_beside_nccl.json, .log}
# Reads clocks and power only; never changes a GPU setting.
here=$(cd "$(dirname "$0")" && pwd)
dir="${OUT:?set OUT}/interf"
mkdir -p "$dir"
if [ "${1:-interf}" = attention ]; then
  name=attention_beside_nccl cap=128 budget=90  # + ~6 s for the version line below
  cmd=("$here/attention_beside_nccl.py" --out "$dir" --name $name.json)
elif [ "$1" = attention_only ]; then
  name=attention_only cap=110 budget=80
  cmd=("$here/attention_beside_nccl.py" --attention-only --out "$dir" --name $name.json)
else
  name=interf cap=140 budget=105
  cmd=("$here/gemm_beside_nccl.py" --suite interf --out "$dir" --name $name.json)
fi
log="$dir/$name.log"
part=$(mktemp -d /tmp/interf_partials.XXXXXX)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  sha256sum "$here/gemm_beside_nccl.py" "$here/attention_beside_nccl.py"
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version(), 'gpus', torch.cuda.device_count())"
} > "$log" 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -gt 4 ] && ngpu=4
[ "$ngpu" -lt 2 ] && ngpu=2
devs=$(seq -s, 0 $((ngpu - 1)))
echo "world size $ngpu (CUDA_VISIBLE_DEVICES=$devs)" >> "$log"
CUDA_VISIBLE_DEVICES=$devs timeout -k 5 $cap python3 -m torch.distributed.run --standalone --nproc_per_node=$ngpu \
  "${cmd[@]}" --partial-dir "$part" --budget-s $budget >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
if [ ! -s "$dir/$name.json" ]; then
  # Killed or failed before rank 0 merged: keep what the ranks wrote.
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
tail -40 "$log"
