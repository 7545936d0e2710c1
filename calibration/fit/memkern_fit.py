#!/usr/bin/env python3
"""Memory-bound kernels on fewer SMs and beside NCCL (calibration/microbench/memkern_bench.py) against
gcsim's spreading-kernel bandwidth curve (models/gpu/memory_spread.h):

    bandwidth S SMs draw D(S) = B q(S) / q(N),  q(S) = ((S h / N)^-p + 1)^(-1/p),
    h = c x clock x N / B   (c: bytes one SM's streaming loads reach per SM cycle)

so a kernel of X bytes takes 3 us (launch + per-wave overhead) + X / D(S) on S SMs. Fits c and p on the
streaming kernels (add, mul, copy >= 16 MiB) at the FIT sizes and held-SM counts, reports the error on
the held-out ones, prints every kernel's ratio t(S)/t(all) beside the model's, and each kernel's time
beside an all-reduce against alone.

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
STREAMING = ("add", "mul", "copy")
C_RANGE = (16.0, 128.0)  # bytes per SM cycle: an SM's L1 takes at most 128 B a cycle
P_RANGE = (1.0, 8.0)
CLOCK_HZ = 1.98e9  # the H100's and H200's boost clock
B_ACHIEVED = 3015e9  # h100-sxm: 3350 GB/s x efficiency.hbm 0.9
OVERHEAD_S = 3e-6  # launch latency 2 us + per-wave overhead 1 us


def drawn(c, p, free, sm_count):
    h = c * CLOCK_HZ * sm_count / B_ACHIEVED
    q = lambda s: ((s * h / sm_count) ** -p + 1.0) ** (-1.0 / p)  # noqa: E731
    return B_ACHIEVED * q(free) / q(sm_count)


def ratio_model(c, p, pt):
    n = pt["mib"] * 2**20
    moved = 2 * n if pt["kernel"] == "copy" else 3 * n
    alone = OVERHEAD_S + moved / B_ACHIEVED
    return (OVERHEAD_S + moved / drawn(c, p, pt["free"], pt["sm_count"])) / alone


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


def fit(points):
    best = None
    for ci in range(int(C_RANGE[0] * 2), int(C_RANGE[1] * 2) + 1):
        for pi in range(int(P_RANGE[0] * 10), int(P_RANGE[1] * 10) + 1, 2):
            c, p = ci / 2.0, pi / 10.0
            err = sum(math.log(ratio_model(c, p, pt) / pt["ratio"]) ** 2 for pt in points)
            if best is None or err < best[0]:
                best = (err, c, p)
    return best[1], best[2]


def report(points, c, p, label):
    errs = [abs(ratio_model(c, p, pt) / pt["ratio"] - 1.0) for pt in points]
    if not errs:
        print("%s: no points" % label)
        return
    print("%s: %d points, mean |error| %.1f%%, median %.1f%%, max %.1f%%" % (
        label, len(errs), 100 * statistics.mean(errs), 100 * statistics.median(errs), 100 * max(errs)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--min-mib", type=float, default=16, help="sizes below are launch-bound: listed, not fitted")
    a = ap.parse_args()
    doc = json.load(open(a.measurement))
    pts = sweep_points(doc)
    stream = [pt for pt in pts if pt["kernel"] in STREAMING and pt["mib"] >= a.min_mib and pt["held"] > 0]
    fitset = [pt for pt in stream if pt["mib"] in FIT_MIB and pt["held"] in FIT_HELD]
    held_out = [pt for pt in stream if not (pt["mib"] in FIT_MIB and pt["held"] in FIT_HELD)]
    c, p = fit(fitset)
    print("fitted: %.1f B per SM cycle (%.0f GB/s per SM at 1.98 GHz), knee p %.1f; gcsim uses 41.5, 3.0" % (
        c, c * CLOCK_HZ / 1e9, p))
    for cc, pp, label in ((c, p, "fitted"), (41.5, 3.0, "gcsim's constants")):
        report(fitset, cc, pp, label + ", fit set")
        report(held_out, cc, pp, label + ", held out")
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
    print("%-22s " % "model, 256 MiB add" + " ".join(
        "%6.2f" % ratio_model(41.5, 3.0, {"kernel": "add", "mib": 256, "free": f, "sm_count": sm}) for f in frees))
    print("\nbeside all-reduce (median us, rank 0 and 1): kernel MiB ar_MiB alone beside ratio inside")
    for rank, d in sorted(doc.items()):
        if not isinstance(d, dict):
            continue
        for p in d.get("beside", []):
            if not p["alone_us"] or not p["beside_us"]:
                continue
            al, be = statistics.median(p["alone_us"]), statistics.median(p["beside_us"])
            print("%s %-16s %4d %4dx%d %9.1f %9.1f %5.2f %s" % (
                rank, p["kernel"], p["mib"], p["ar_mib"], p.get("ar_buffers", 1), al, be, be / al,
                "".join("y" if x else "n" for x in p["inside"])))
        for p in d.get("allreduce_alone", []):
            print("%s all-reduce %d MiB x %d buffers alone %.1f us" % (rank, p["mib"], p.get("buffers", 1), p["us"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
