#!/bin/bash
# A second run of moe_host_timeline.py (gcsim issue 22): the 4K-token points only (the host-bound
# ones), five plain blocks and one events block of 20 rounds per point, ranks free: how a
# host-bound pass spreads over blocks and runs, held out from the first run that gcsim's h100
# host was read from. Writes $OUT/moe/moe_host_timeline_4k.json and $OUT/moe/moe_host_timeline_4k.log.
# Wall cap: 200 s (no new point after 110 s of the script; the launch is killed at 185 s).
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/moe"
log="$OUT/moe/moe_host_timeline_4k.log"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
  nvidia-smi topo -m
  lscpu | grep -E "Model name|^CPU\(s\)|MHz|NUMA|Thread|Core|Socket" || true
  cat /proc/loadavg
  sha256sum "$here/moe_host_timeline.py" "$here/moe_ep_bench.py" "$here/torch_timing.py"
} > "$log" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout 185 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
  "$here/moe_host_timeline.py" -o "$OUT/moe/moe_host_timeline_4k.json" --budget-s 110 --tokens 4096 --blocks plain:U,plain:U,plain:U,plain:U,plain:U,events:U >> "$log" 2>&1
echo "rc=$? $(date -u)" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
cat /proc/loadavg >> "$log"
tail -40 "$log"
