#!/bin/bash
cd "$(dirname "$0")/../.."
bash calibration/microbench/run_serving_step.sh --budget-s 105
