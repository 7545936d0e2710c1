#!/usr/bin/env python3
"""Memory-bound kernels on fewer SMs and beside NCCL (calibration/microbench/memkern_bench.py) against
gcsim's per-SM bandwidth model (models/gpu/hbm.h):

    bandwidth on S SMs = efficiency x min(h x B x S / sm_count, B)

so a kernel's time on S of the GPU's SMs over its time on all of them is max(1, sm_count / (h x S)),
h = sm_bandwidth_headroom (the GPU's configs/hardware/*.yaml). Fits h on the FIT points (sizes and
held-SM counts below), reports the error on the held-out ones, and prints each kernel's time beside
an all-reduce against alone.

    python3 calibration/fit/memkern_fit.py calibration/measurements/h100-x2/memkern_2026-11-27/memkern.json
"""
import argparse
import json
import math
import statistics
import sys

# Fit on these; every other size / held count is held out.
FIT_MIB = {16, 64, 256}
FIT_HELD = {0, 16, 32, 66, 99, 124}
H_RANGE = (1.0, 2.5)  # saturation between 40% and 100% of the SMs


def ratio_model(h, free, sm_count):
    return max(1.0, sm_count / (h * free))


def sweep_points(doc):
    """(kernel, mib, held, free, ratio t(S)/t(all)) over both ranks, medians."""
    out = []
    for rank, d in sorted(doc.items()):
        if not isinstance(d, dict) or "sweep" not in d:
            continue
        base = {}
        for p in d["sweep"]:
            if p.get("held_sms") == 0 and p.get("median_us"):
                base[(p["kernel"], p["mib"])] = p["median_us"]
        for p in d["sweep"]:
            b = base.get((p["kernel"], p["mib"]))
            if b and p.get("median_us"):
                out.append({"rank": rank, "kernel": p["kernel"], "mib": p["mib"], "held": p["held_sms"],
                            "free": p["free_sms"], "ratio": p["median_us"] / b, "us": p["median_us"],
                            "gbps": p.get("gbps"), "sm_count": d["sm_count"]})
    return out


def fit_h(points):
    best = None
    h = H_RANGE[0]
    while h <= H_RANGE[1] + 1e-9:
        err = sum(math.log(ratio_model(h, p["free"], p["sm_count"]) / p["ratio"]) ** 2 for p in points)
        if best is None or err < best[1]:
            best = (h, err)
        h += 0.01
    return best[0]


def report(points, h, label):
    errs = [ratio_model(h, p["free"], p["sm_count"]) / p["ratio"] - 1.0 for p in points]
    if not errs:
        print("%s: no points" % label)
        return
    print("%s: %d points, mean |error| %.1f%%, median %.1f%%, max %.1f%%" % (
        label, len(errs), 100 * statistics.mean(abs(e) for e in errs),
        100 * statistics.median(abs(e) for e in errs), 100 * max(abs(e) for e in errs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--min-mib", type=float, default=16, help="sizes below are launch-bound: listed, not fitted")
    a = ap.parse_args()
    doc = json.load(open(a.measurement))
    pts = sweep_points(doc)
    big = [p for p in pts if p["mib"] >= a.min_mib]
    fit = [p for p in big if p["mib"] in FIT_MIB and p["held"] in FIT_HELD]
    held_out = [p for p in big if not (p["mib"] in FIT_MIB and p["held"] in FIT_HELD)]
    h = fit_h(fit)
    print("fitted sm_bandwidth_headroom h = %.2f (range %.1f-%.1f): saturates at %.0f%% of the SMs" % (
        h, H_RANGE[0], H_RANGE[1], 100 / h))
    report(fit, h, "fit")
    report(held_out, h, "held out")
    report([p for p in pts if p["mib"] < a.min_mib], h, "small (< %g MiB, not fitted)" % a.min_mib)
    print("\nratio t(S SMs)/t(all), rank-median, per kernel and size (model with h):")
    keys = sorted({(p["kernel"], p["mib"]) for p in pts})
    frees = sorted({p["free"] for p in pts}, reverse=True)
    print("%-16s %5s " % ("kernel", "MiB") + " ".join("%6d" % f for f in frees))
    for k in keys:
        row = []
        for f in frees:
            v = [p["ratio"] for p in pts if (p["kernel"], p["mib"]) == k and p["free"] == f]
            row.append("%6.2f" % statistics.median(v) if v else "     -")
        print("%-16s %5g " % k + " ".join(row))
    sm = pts[0]["sm_count"] if pts else 132
    print("%-22s " % "model" + " ".join("%6.2f" % ratio_model(h, f, sm) for f in frees))
    print("\nbeside all-reduce (median us, rank 0 and 1): kernel MiB ar_MiB alone beside ratio inside")
    for rank, d in sorted(doc.items()):
        if not isinstance(d, dict):
            continue
        for p in d.get("beside", []):
            if not p["alone_us"] or not p["beside_us"]:
                continue
            al, be = statistics.median(p["alone_us"]), statistics.median(p["beside_us"])
            print("%s %-16s %4d %4d %9.1f %9.1f %5.2f %s" % (rank, p["kernel"], p["mib"], p["ar_mib"], al, be,
                                                         be / al, "".join("y" if x else "n" for x in p["inside"])))
        for p in d.get("allreduce_alone", []):
            print("%s all-reduce %d MiB alone %.1f us" % (rank, p["mib"], p["us"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
