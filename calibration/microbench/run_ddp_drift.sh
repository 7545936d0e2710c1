#!/bin/bash
# Issue 16, DDP's NCCL waits (devrun/drift): strategy_step_bench.py's DP4 (eager, compile) and
# TP2xDP2 (compile) with every rank's kernel table and one step's timeline per rank, while
# nvidia-smi samples each GPU's SM clock and power every 100 ms; then DP4 again on the same GPUs
# listed the other way round (rank r on GPU 3-r): does the rank that waits least follow the GPU?
#   OUT=DIR bash devrun/drift/run.sh -> $OUT/{forward,reversed}/{strategy_ranks.json,.log,clocks.csv}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 OMP_NUM_THREADS=1
run() {  # name, CUDA_VISIBLE_DEVICES, points, budget, cap
  local dir="${OUT:?set OUT}/$1"; mkdir -p "$dir"; local log="$dir/strategy_ranks.log"
  {
    date -u
    nvidia-smi --query-gpu=index,name,serial,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv
    nvidia-smi topo -m
    sha256sum "$here/strategy_step_bench.py" "$here/bench_common.py" "$here/torch_timing.py" "$here/framework_step.py" "$here/run.sh"
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'nccl', torch.cuda.nccl.version(), 'cudnn', torch.backends.cudnn.version(), 'gpus', torch.cuda.device_count())"
    echo "CUDA_VISIBLE_DEVICES=$2 points=$3"
  } > "$log" 2>&1
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > "$dir/clocks.csv" 2>&1 &
  local smi=$!
  CUDA_VISIBLE_DEVICES=$2 timeout -k 10 $5 python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
    "$here/strategy_step_bench.py" -o "$dir/strategy_ranks.json" --budget-s $4 \
    --points $3 --all-rank-kernels --timeline >> "$log" 2>&1
  echo "rc=$? $(date -u)" >> "$log"
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> "$log" 2>&1
  grep -v "^ \{5\}" "$log" | tail -25
}
echo "start $(date -u +%T)"
run forward 0,1,2,3 DP4:eager,DP4:compile,TP2xDP2:compile 200 250
run reversed 3,2,1,0 DP4:eager,DP4:compile 150 200
echo "end $(date -u +%T)"
