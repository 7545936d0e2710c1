#!/bin/bash
# One device-tool call on a one-GPU machine (or GPU 0 of a larger one): machine facts, the CUDA
# microbenchmark built there with nvcc, the attention and transformer-layer scripts.
#   calibration/microbench/run_device_single.sh OUTDIR [TAG]
# Writes OUTDIR/{machine_TAG.txt, microbench_TAG.json, attention_TAG.json, layer_TAG.json, log_TAG.txt}.
out=${1:?OUTDIR}
tag=${2:-gpu}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
log="$out/log_$tag.txt"
{
  date -u; uname -a; nvidia-smi; nvidia-smi topo -m
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,temperature.gpu --format=csv
  nvcc --version; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'
  sha256sum "$here"/cuda/*.cu "$here"/cuda/*.h "$here"/cuda/*.cpp "$here"/*.py
} > "$out/machine_$tag.txt" 2>&1
echo "== build" >> "$log"
t0=$(date +%s)
mkdir -p build-device
"$here/cuda/build.sh" build-device/gcsim_microbench 90 >> "$log" 2>&1 || echo "BUILD FAILED" >> "$log"
echo "build took $(( $(date +%s) - t0 )) s" >> "$log"
echo "== microbench" >> "$log"
timeout ${MB_TIMEOUT:-280} build-device/gcsim_microbench -o "$out/microbench_$tag.json" >> "$log" 2>&1; echo "microbench rc=$?" >> "$log"
echo "== attention" >> "$log"
timeout ${PY_TIMEOUT:-120} python3 "$here/attention_bench.py" -o "$out/attention_$tag.json" >> "$log" 2>&1; echo "attention rc=$?" >> "$log"
echo "== layer" >> "$log"
timeout ${PY_TIMEOUT:-120} python3 "$here/layer_bench.py" -o "$out/layer_$tag.json" >> "$log" 2>&1; echo "layer rc=$?" >> "$log"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> "$log" 2>&1
grep -E "rc=|FAILED|took|check |Error|error" "$log" | head -40
