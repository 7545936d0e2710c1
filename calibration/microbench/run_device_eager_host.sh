#!/bin/bash
# Calibrate the host, then measure the MoE EP points it must predict, on one machine in one lease
# (gcsim issue 22): eager_host_bench.py (generic calls, no MoE layer: what `gcsim calibrate
# --host-fit` turns into a cluster.host profile), then moe_host_timeline.py (the EP layer's plain
# passes, held out from the host fit: 3 shapes x 4K-32K tokens x skew 0 / 1.5 (MOE_SKEWS), three plain blocks
# and one events block of 20 rounds per point), then eager_host_bench.py again if time is left
# (drift over the lease; AFTER_BLOCKS blocks, default 5). 4 GPUs, ranks free (as torchrun starts them). Run it with no other area
# beside it on the machine: it times the host CPU, which another area's processes would share.
# Writes $OUT/moehost/eager_host_bench.json and $OUT/moehost/moe_host_timeline.json; the log
# (machine, hashes, progress) goes to stdout. Wall cap: 240 s (the steps are killed by 235 s).
here=$(cd "$(dirname "$0")" && pwd)
out="$OUT/moehost"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
export CUDA_VISIBLE_DEVICES=0,1,2,3
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
date -u
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
nvidia-smi topo -m
lscpu | grep -E "Model name|^CPU\(s\)|MHz|NUMA|Thread|Core|Socket" || true
cat /proc/loadavg
sha256sum "$here/eager_host_bench.py" "$here/moe_host_timeline.py" "$here/moe_ep_bench.py" "$here/torch_timing.py"

echo "== host bench (calibration) at $(elapsed)s"
timeout 60 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/eager_host_bench.py" -o "$out/eager_host_bench.json" --tag before --blocks 10 --rounds 20
echo "host bench rc=$? at $(elapsed)s"

left=$(( 200 - $(elapsed) ))
budget=$(( left - 50 ))
[ $budget -lt 20 ] && budget=20
echo "== moe points at $(elapsed)s (timeout ${left}s, no new point after ${budget}s)"
timeout $left python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/moe_host_timeline.py" -o "$out/moe_host_timeline.json" --budget-s $budget \
  --shapes 2048:1408:8:2,2048:1024:32:4,4096:2048:16:2 --tokens 4096,8192,16384,32768 --skews ${MOE_SKEWS:-0,1.5} \
  --blocks plain:U,plain:U,plain:U,events:U
echo "moe points rc=$? at $(elapsed)s"

left=$(( 232 - $(elapsed) ))
if [ $left -ge 30 ]; then
  echo "== host bench again (drift) at $(elapsed)s (timeout ${left}s)"
  timeout $left python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
    "$here/eager_host_bench.py" -o "$out/eager_host_bench.json" --append --tag after --blocks ${AFTER_BLOCKS:-5} --rounds 20
  echo "host bench again rc=$? at $(elapsed)s"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
cat /proc/loadavg
date -u
