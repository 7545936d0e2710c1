#!/usr/bin/env python3
"""What clock_truth_bench.py's files say (issue 16, clocks): per GPU and kernel, the SM clock it
runs at from rest and sustained, its speed there, and how its time follows the clock.

    python3 calibration/fit/clock_truth_fit.py calibration/measurements/h100-x4/clock_truth_2026-11-27/gpu*.json.gz

For every kernel kind of every phase:
  rest     the median effective SM clock (MHz, cycles over ns) and time of the kind's kernels that
           start in the phase's first 25 ms (the power loops act after ~30 ms), the phase's very
           first kernel left out (its time holds the ramp from idle)
  steady   the time-weighted clock and mean time over the phase's second half
  speed    rest time / steady time (what gcsim's governed_loop_kernel_speeds gives)
  share    a least-squares fit of time = a + b / f over every kernel of the phase: the share of
           the rest time that scales with 1/f, b / f_rest / (a + b / f_rest)
and NVML's clocks.sm over the second half beside the probe's. Standard library only.
"""
import gzip
import json
import statistics
import sys


def linfit(x, y):
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxx = sum((a - mx) ** 2 for a in x)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    b = sxy / sxx if sxx > 0 else 0.0
    return my - b * mx, b


def kernel_rows(phase):
    out = {}
    for name, start, dur, mhz in phase["kernels"]:
        if mhz:
            out.setdefault(name, []).append((start, dur, mhz))
    return out


def summarize(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    meta = d["meta"]
    res = {"gpu_serial": meta.get("gpu_serial"), "device": meta.get("device_name"), "phases": {}}
    for ph, p in d["phases"].items():
        if ph == "probe_only":
            res["probe_only_mhz"] = p["kernels"][0][3]
            continue
        rows = kernel_rows(p)
        span = max(r[0] for rr in rows.values() for r in rr)
        kinds = {}
        for name, rr in rows.items():
            rest = [r for r in rr if 0 < r[0] < 25e6]
            half = [r for r in rr if r[0] >= span / 2]
            rest_t = statistics.median(r[1] for r in rest) / 1e3
            rest_f = statistics.median(r[2] for r in rest)
            steady_t = statistics.fmean(r[1] for r in half) / 1e3
            steady_f = sum(r[1] * r[2] for r in half) / sum(r[1] for r in half)
            a, b = linfit([1e3 / r[2] for r in rr[1:]], [r[1] / 1e3 for r in rr[1:]])
            clock_part = b * 1e3 / rest_f
            kinds[name] = {"rest_mhz": rest_f, "rest_us": rest_t, "steady_mhz": steady_f, "steady_us": steady_t,
                           "speed": rest_t / steady_t, "share": clock_part / (a + clock_part)}
        # NVML against the probe over the second half, 100 ms windows
        nv, pr = [], []
        allk = sorted(r for rr in rows.values() for r in rr)
        for t, sm, _, _ in p["nvml"]:
            if t < span / 2:
                continue
            w = [r for r in allk if t - 100e6 <= r[0] < t]
            if len(w) >= 5:
                nv.append(sm)
                pr.append(sum(r[1] * r[2] for r in w) / sum(r[1] for r in w))
        steady_all = [r for r in allk if r[0] >= span / 2]
        res["phases"][ph] = {"kinds": kinds,
                             "steady_mhz": sum(r[1] * r[2] for r in steady_all) / sum(r[1] for r in steady_all),
                             "nvml_mhz": statistics.fmean(nv) if nv else None,
                             "probe_mhz_at_nvml": statistics.fmean(pr) if pr else None}
    return res


def main():
    runs = [summarize(p) for p in sys.argv[1:]]
    for path, r in zip(sys.argv[1:], runs):
        print("%s: %s serial %s, probe alone %.0f MHz" % (path, r["device"], r["gpu_serial"], r.get("probe_only_mhz", 0)))
        for ph, p in r["phases"].items():
            print("  %-12s steady %.0f MHz (NVML %s, probe %s)" % (
                ph, p["steady_mhz"], "%.0f" % p["nvml_mhz"] if p["nvml_mhz"] else "-",
                "%.0f" % p["probe_mhz_at_nvml"] if p["probe_mhz_at_nvml"] else "-"))
            for k, v in p["kinds"].items():
                print("    %-9s rest %6.1f us @ %4.0f MHz  steady %6.1f us @ %4.0f MHz  speed %.3f  share %.3f" % (
                    k, v["rest_us"], v["rest_mhz"], v["steady_us"], v["steady_mhz"], v["speed"], v["share"]))
    # Across GPUs: mean of each (phase, kind)
    print("mean over %d GPUs:" % len(runs))
    for ph in runs[0]["phases"]:
        for k in runs[0]["phases"][ph]["kinds"]:
            vals = [r["phases"][ph]["kinds"][k] for r in runs]
            m = {f: statistics.fmean(v[f] for v in vals) for f in vals[0]}
            print("  %-12s %-9s rest %4.0f MHz  steady %4.0f MHz  speed %.3f  share %.3f" % (
                ph, k, m["rest_mhz"], m["steady_mhz"], m["speed"], m["share"]))
    shares = [r["phases"][ph]["kinds"][k]["share"] for r in runs for ph in ("gemm", "model_gemms")
              if ph in r["phases"] for k in r["phases"][ph]["kinds"]]
    if shares:
        print("GEMM clock share: %d fits, %.3f ... %.3f, mean %.3f" % (len(shares), min(shares), max(shares),
                                                                     statistics.fmean(shares)))


if __name__ == "__main__":
    main()
