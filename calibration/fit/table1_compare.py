#!/usr/bin/env python3
"""Compare `gcsim sweep configs/studies/narayanan-table1.yaml` with the paper.

Narayanan et al. 2021 (SC'21, arXiv 2104.04473), Table 1, counts
F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) floating-point operations per
iteration (forward, recompute and backward) and reports F / (step x GPUs).
This script does the same with gcsim's step time and prints a Markdown
table of published vs simulated teraFLOP/s per GPU.

    python3 calibration/fit/table1_compare.py out/table1/results.csv
"""
import csv
import sys

SEQ, VOCAB = 2048, 51200
# name prefix -> (layers, hidden, GPUs, global batch, published TF/s per GPU)
ROWS = {
    "1.7B": (24, 2304, 32, 512, 137),
    "3.6B": (30, 3072, 64, 512, 138),
    "7.5B": (36, 4096, 128, 512, 142),
    "18.4B": (40, 6144, 256, 1024, 135),
    "39.1B": (48, 8192, 512, 1536, 138),
    "76.1B": (60, 10240, 1024, 1792, 140),
    "145.6B": (80, 12288, 1536, 2304, 148),
    "310.1B": (96, 16384, 1920, 2160, 155),
    "529.6B": (105, 20480, 2520, 2520, 163),
    "1008.0B": (128, 25600, 3072, 3072, 163),
}


def flops(layers, hidden, batch):
    return 96 * batch * SEQ * layers * hidden**2 * (
        1 + SEQ / (6 * hidden) + VOCAB / (16 * layers * hidden))


def main(path):
    errors = []
    print("| model | GPUs | published TF/s | gcsim step (s) | gcsim TF/s | error |")
    print("|---|---:|---:|---:|---:|---:|")
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = row["case"].split()[0]
            layers, hidden, gpus, batch, published = ROWS[key]
            if row["status"] != "ok":
                print(f"| {key} | {gpus} | {published} | {row['status']} | | |")
                continue
            step = float(row["step_time_s"])
            tf = flops(layers, hidden, batch) / (step * gpus) / 1e12
            err = tf / published - 1
            errors.append(abs(err))
            print(f"| {key} | {gpus} | {published} | {step:.3f} | {tf:.1f} | {100 * err:+.1f}% |")
    if errors:
        print(f"\nmean |error| {100 * sum(errors) / len(errors):.1f}%, "
              f"max {100 * max(errors):.1f}% over {len(errors)} rows")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/table1/results.csv")
