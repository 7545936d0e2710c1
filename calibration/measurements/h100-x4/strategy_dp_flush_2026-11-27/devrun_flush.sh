#!/bin/bash
# DP after the flush beside DP4 (same machine), both models; one torchrun each.
cd "$(dirname "$0")/../.."
cp calibration/microbench/run_device_strategy.sh "$OUT/run.sh"
pts=DP4:eager,DP4flush:eager,DP4:compile,DP4flush:compile
OUT=$OUT/mha bash calibration/microbench/run_device_strategy.sh --points $pts --budget-s 110
OUT=$OUT/gqa bash calibration/microbench/run_device_strategy.sh --model gqa --points $pts --budget-s 110
