#!/bin/sh
# Builds gcsim_microbench with nvcc alone (no CMake), for the device machine:
#   calibration/microbench/cuda/build.sh OUT_BINARY [ARCH]   (ARCH default 90)
set -e
dir=$(dirname "$0")
out=${1:?usage: build.sh OUT_BINARY [ARCH]}
arch=${2:-90}
nvcc -std=c++17 -O3 -gencode arch=compute_${arch},code=sm_${arch} -o "$out" \
  "$dir/main.cu" "$dir/gemm_bench.cu" "$dir/memory_bench.cu" "$dir/gpu_timer.cu" \
  "$dir/device_buffer.cu" "$dir/nvml_probe.cpp" -lcublasLt -ldl
