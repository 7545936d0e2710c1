#!/usr/bin/env python3
"""What kernel_grid.py measured, without gcsim: per GEMM the cuBLAS kernel torch.profiler saw (its
CTA tile and cluster from the name, whether a second kernel reduced split-K partials), the SM clock
it ran at, its spacing and TF/s; the eager softmax points' bandwidth and elements per second; the
compiled loss kernels. The basis of the fit note (calibration/fit/kernel_grid_2026-11-26.md).

    python3 calibration/fit/kernel_grid_report.py calibration/measurements/h100-sxm/kernel_grid_2026-11-26/kernel_grid.json
"""
import collections
import json
import re
import statistics
import sys

TILE = re.compile(r"(\d+)x(\d+)x(\d+)")


def kernel_summary(kernels):
    """(main kernel name, its mean us, the other kernels' names) of one GEMM's profile."""
    if not kernels:
        return "?", 0.0, []
    main = max(kernels, key=lambda k: k["per_rep_us"])
    others = [k["name"] for k in kernels if k is not main and k["per_rep_count"] >= 0.5]
    return main["name"], main["mean_us"], others


def tile_of(name):
    m = TILE.search(name)
    return "%sx%s" % (m.group(1), m.group(2)) if m else "?"


def main(path):
    doc = json.load(open(path))
    meta = doc["meta"]
    print("%s, torch %s, CUDA %s, cuBLASLt %s, driver: %s" % (meta.get("device_name"), meta.get("torch"),
          meta.get("cuda_runtime"), meta.get("cublaslt_version"), meta.get("nvidia_smi", "").splitlines()[-1:]))
    gemms = [r for r in doc["results"] if r.get("kind") == "gemm"]
    clocks = [r["clock"].get("sm_mhz_median") for r in gemms if r.get("clock", {}).get("n")]
    if clocks:
        print("GEMM points %d; SM clock median %.0f MHz, min %.0f, share below 1900 MHz %.2f" % (
            len(gemms), statistics.median(clocks), min(clocks), sum(c < 1900 for c in clocks) / len(clocks)))
    families = collections.Counter()
    with_second = []
    for r in gemms:
        name, _, others = kernel_summary(r.get("kernels"))
        families[re.sub(r"\d+", "#", name)[:60]] += 1
        if others:
            with_second.append((r, name, others))
    print("\nkernel name families (digits as #):")
    for f, n in families.most_common(15):
        print("  %4d  %s" % (n, f))
    print("\nGEMMs with a second kernel per repetition (split-K reduce, workspace memset, ...): %d" % len(with_second))
    for r, name, others in with_second[:25]:
        print("  %5d %5d %5d %-5s %8.1f us  %s + %s" % (r["m"], r["n"], r["k"], r["layout"], r["time_us"],
                                                    name[:50], "; ".join(o[:40] for o in others)))
    print("\n%5s %5s %5s %-5s %9s %9s %7s %6s %s" % ("m", "n", "k", "lay", "spacing", "kernel", "TF/s", "MHz", "kernel"))
    for r in sorted(gemms, key=lambda r: (r["group"], r["m"] * r["n"] * r["k"])):
        name, kus, _ = kernel_summary(r.get("kernels"))
        print("%5d %5d %5d %-5s %9.2f %9.2f %7.1f %6s %-9s %s" % (
            r["m"], r["n"], r["k"], r["layout"], r["time_us"], kus, r["tflops"],
            r.get("clock", {}).get("sm_mhz_median", "?"), r["group"][:9], name[:70]))
    print("\nsoftmax (eager): op rows cols dtype | fwd us, GB/s, G elements/s | bwd us, GB/s | kernels")
    for r in doc["results"]:
        if r.get("kind") != "softmax":
            continue
        n = r["rows"] * r["cols"]
        kf = (r.get("kernels_fwd") or [{}])[0].get("name", "?")
        kb = (r.get("kernels_bwd") or [{}])[0].get("name", "?")
        print("  %-11s %6d %6d %s | %8.1f %6.0f %6.0f | %8.1f %6.0f | %s | %s" % (
            r["op"], r["rows"], r["cols"], r["dtype"], r["fwd"]["time_us"], r["fwd_gbps"],
            n / r["fwd"]["time_us"] / 1e3, r["bwd"]["time_us"], r["bwd_gbps"], kf[:50], kb[:50]))
    print("\ncompiled loss: rows vocab | kernels (mean us)")
    for r in doc["results"]:
        if r.get("kind") != "loss":
            continue
        ks = ", ".join("%s %.1f" % (k["name"][:40], k["mean_us"]) for k in r["kernels"][:3])
        print("  %6d %6d | %s" % (r["shape"]["rows"], r["shape"]["vocab"], ks))
    print("\nerrors %d, skipped %d" % (len(doc.get("errors", [])), len(doc.get("skipped", []))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
