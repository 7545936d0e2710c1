#!/usr/bin/env python3
"""Compares a serving_step_bench.py measurement with gcsim as configured (nothing fitted or
overridden but the GPU), and with the predictions a serving_predict.py file recorded before the run.

    python3 calibration/fit/serving_compare.py --gpu h200-sxm \
        --measurement calibration/measurements/h200-x4/serving_step_2026-11-28/serving_step.json \
        --predictions calibration/validation/PREDICTIONS_H200_serving_2026-11-28.txt

Per point and build: the measured step (the replica's slowest rank's median), the recorded
prediction's error, gcsim's error now, and per kernel class rank 0's profiled time against gcsim's
(serving_fit.py's classes: elementwise + norm includes `other`). Summary lines per build: the range
and mean |error|. Eager decode is host-bound (README, "Serving"): its lines are kept apart.
"""
import argparse
import json
import os
import statistics

from serving_configs import name as config_file
from serving_fit import CLASSES, CONFIG_DIRS, measured_classes, pct, run_gcsim

HERE = os.path.dirname(os.path.abspath(__file__))


def read_predictions(path, folder, gpu):
    """The recorded steps of `folder`'s configs on `gpu` (a file may hold blocks for several GPUs,
    each headed "# gcsim's predictions on GPU, ...")."""
    out = {}
    if not path:
        return out
    on = None
    with open(path) as f:
        for line in f:
            p = line.split()
            if line.startswith("# gcsim's predictions on "):
                on = p[4].rstrip(",")
            if line.startswith("#") or len(p) < 4 or p[0] != folder or on != gpu:
                continue
            out[(p[1], p[2])] = float(p[3])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("--gpu", required=True, help="the measured GPU's preset (cluster.gpu)")
    ap.add_argument("--measurement", required=True)
    ap.add_argument("--predictions", help="a serving_predict.py file")
    a = ap.parse_args()
    with open(a.measurement) as f:
        doc = json.load(f)
    folder = CONFIG_DIRS[doc["model"]["name"]]
    pred = read_predictions(a.predictions, folder, a.gpu)
    print("| point | build | measured (us) | predicted | gcsim now | " +
          " | ".join("%s meas / now" % c for c in CLASSES) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(CLASSES))
    errs = {}
    for r in sorted(doc["results"], key=lambda r: (-r["tp"], r["kind"], r["batch"], r["kv_len"])):
        cfg_name = config_file(r["tp"], r["kind"], r["batch"], r["kv_len"])
        name = cfg_name[:-len(".yaml")]  # the predictions file's point name
        cfg = os.path.join(HERE, "..", "validation", folder, cfg_name)
        for build in ("eager", "graph"):
            if build not in r["builds"]:
                continue
            m = r["builds"][build]
            o = ["cluster.gpu=%s" % a.gpu] + (["workload.serving.cuda_graphs=true"] if build == "graph" else [])
            now = run_gcsim(a.gcsim, cfg, r["kind"], o)
            e_now = pct(now["step_us"], m["step_us"])
            e_pred = pct(pred[(name, build)], m["step_us"]) if (name, build) in pred else float("nan")
            group = "%s %s" % (r["kind"], build)
            errs.setdefault(group, {"pred": [], "now": []})
            errs[group]["now"].append(e_now)
            if e_pred == e_pred:
                errs[group]["pred"].append(e_pred)
            mc = measured_classes(m)
            cells = " | ".join("%.0f / %+.0f%%" % (mc[c], pct(now["classes"][c], mc[c])) for c in CLASSES)
            print("| %s | %s | %.1f | %+.1f%% | %+.1f%% | %s |" % (name, build, m["step_us"], e_pred, e_now, cells))
    print()
    for group, e in errs.items():
        for when in ("pred", "now"):
            if e[when]:
                print("%-15s %-4s %+6.1f .. %+6.1f%%, mean |err| %.1f%% over %d points" % (
                    group, when, min(e[when]), max(e[when]), statistics.mean(abs(x) for x in e[when]),
                    len(e[when])))


if __name__ == "__main__":
    main()
