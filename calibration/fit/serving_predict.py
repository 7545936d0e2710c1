#!/usr/bin/env python3
"""Writes gcsim's predictions for serving_step_bench.py's points before a run (the commit's time is
the record): every config of the named folders of calibration/validation/, eager and (decode) in a
CUDA graph, on the GPU given, one line each: step and the four kernel classes (us).

    python3 calibration/fit/serving_predict.py --gpu h200-sxm serving serving_l3_8b serving_l70_full \
        > calibration/validation/PREDICTIONS_H200_serving_2026-11-28.txt

serving_fit.py and graph_parts_compare.py compare a measurement with gcsim as it is now; this file
keeps what gcsim said before the measurement existed.
"""
import argparse
import datetime
import glob
import os
import subprocess

from serving_fit import CLASSES, run_gcsim

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("--gpu", required=True, help="a GPU preset (cluster.gpu)")
    ap.add_argument("folders", nargs="+", help="folders of calibration/validation/")
    a = ap.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print("# gcsim's predictions on %s, written before the run (the commit's time is the record)." % a.gpu)
    print("# python3 calibration/fit/serving_predict.py --gpu %s %s" % (a.gpu, " ".join(a.folders)))
    print("# gcsim %s (%s), %s. Step = summary.json breakdown.*_steps.mean_step_s; classes its kernel_classes_s."
          % (head, a.gcsim, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")))
    print("# folder  config  build  step_us  " + "  ".join(CLASSES))
    for folder in a.folders:
        for cfg in sorted(glob.glob(os.path.join(HERE, "..", "validation", folder, "*.yaml"))):
            name = os.path.basename(cfg)[:-5]
            kind = "decode" if "_decode_" in name else "prefill"
            for build in (("eager", "graph") if kind == "decode" else ("eager",)):
                o = ["cluster.gpu=%s" % a.gpu]
                if build == "graph":
                    o.append("workload.serving.cuda_graphs=true")
                r = run_gcsim(a.gcsim, cfg, kind, o)
                print("%-16s %-24s %-5s %10.1f  %s" % (folder, name, build, r["step_us"], "  ".join(
                    "%8.1f" % r["classes"][c] for c in CLASSES)))


if __name__ == "__main__":
    main()
