#!/bin/bash
# Second memkern call (gcsim helper "memkern"), 2 GPUs, < 150 s: kernels beside all-reduces whose
# buffers stay in L2 (one buffer all-reduced in place, as the first call did) against the same
# all-reduces cycling through buffers that together overflow the 50 MB L2 (DDP's buckets are
# distinct buffers): does a small all-reduce's HBM traffic, and so its cost to the kernels beside
# it, depend on its buffers being L2-resident?
#   OUT=DIR bash calibration/microbench/run_memkern_l2.sh -> $OUT/memkern/memkern.{json,log}
here=$(cd "$(dirname "$0")" && pwd)
MEMKERN_ARGS="--no-sweep --ar 25x1,25x8,64x1,64x4,256x1,256x2 --kernels add,copy,layer_norm_fwd,layer_norm_bwd --beside-sizes 64,16,256,4" \
  exec bash "$here/run_memkern.sh"
