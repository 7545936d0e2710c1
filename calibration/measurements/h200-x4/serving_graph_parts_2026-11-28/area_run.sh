#!/bin/bash
cd "$(dirname "$0")/../.."
bash calibration/microbench/run_serving_graph_parts.sh --budget-s 65
