#!/bin/bash
# Llama-2-70B, all 80 layers, TP2 (two replicas on {0,1} and {2,3}): 69 GB of weights a GPU plus a
# 256 Ki-token KV cache a layer (43 GB): needs the H200's memory.
cd "$(dirname "$0")/../.."
bash calibration/microbench/run_serving_step.sh --model l70_full --tp 2 --points full --max-cache-tokens 262144 --budget-s 150
