#!/bin/bash
cd "$(dirname "$0")/../.."
bash calibration/microbench/run_serving_step.sh --model l3_8b --budget-s 80
