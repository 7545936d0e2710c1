#!/usr/bin/env python3
"""Merges nccl_sweep.py result files and NCCL_DEBUG_SUBSYS=TUNING probe logs into one table.

    python3 calibration/microbench/merge_nccl.py -o nccl_sweep.json SWEEP.json... [--tuning-log LOG]...

Output (schema gcsim.nccl_sweep.v1, documented in calibration/measurements/README.md):
  meta     provenance of the first run plus every run's label, forced settings and NCCL version
  results  every row of every run: {op, ranks, bytes, time_us, algbw_GBps, busbw_GBps,
           algorithm, protocol, ...}; algorithm/protocol are "default" unless NCCL_ALGO/NCCL_PROTO
           forced them
  choices  what NCCL chose by default, from the TUNING logs: {op, ranks, bytes, algorithm,
           protocol, channels}
  device_copy  rows of nccl_sweep.py's device_copy op (a copy on each GPU, no communication),
           kept apart from the collectives
"""
import argparse
import json
import re

OPNAME = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
          "Broadcast": "broadcast", "Reduce": "reduce"}
LINE = re.compile(r"\[0\] NCCL INFO (AllReduce|AllGather|ReduceScatter|Broadcast|Reduce): (\d+) Bytes -> "
                  r"Algo (\w+) proto (\w+) channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
RANKS = re.compile(r"n(\d+) ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--tuning-log", action="append", default=[])
    a = ap.parse_args()
    runs, results, copies = [], [], []
    for path in a.runs:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as ex:
            print("skipping %s: %r" % (path, ex))
            continue
        runs.append({"file": path.split("/")[-1], **doc["meta"]})
        for r in doc["results"]:
            (copies if r["op"] == "device_copy" else results).append({**r, "run": path.split("/")[-1]})
    choices = []
    for path in a.tuning_log:
        ranks = None
        seen = set()
        with open(path, errors="replace") as f:
            for line in f:
                m = RANKS.match(line)  # run_device_nccl.sh prefixes each line with "n<ranks> "
                if m:
                    ranks = int(m.group(1))
                m = LINE.search(line)
                if not m:
                    continue
                op, nbytes, algo, proto, lo, hi = m.groups()
                key = (op, nbytes)
                if key in seen:
                    continue
                seen.add(key)
                choices.append({"op": OPNAME[op], "ranks": ranks, "bytes": int(nbytes), "algorithm": algo,
                                "protocol": proto, "channels": int(hi) - int(lo) + 1, "log": path.split("/")[-1]})
    meta = dict(runs[0]) if runs else {}
    meta["runs"] = runs
    with open(a.out, "w") as f:
        json.dump({"schema": "gcsim.nccl_sweep.v1", "meta": meta, "results": results, "choices": choices,
                   "device_copy": copies}, f, indent=1)
    print("merged %d runs, %d rows, %d default choices into %s" % (len(runs), len(results), len(choices), a.out))


if __name__ == "__main__":
    main()
