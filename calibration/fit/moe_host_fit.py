#!/usr/bin/env python3
"""Fits eager PyTorch's host costs of gcsim's `moe` op (workloads/moe/moe_layer.h, EagerHostCost)
on the 2-GPU measurement and reports every point, fitted and held out.

    python3 calibration/fit/moe_host_fit.py --gcsim build/gcsim \
        --fit calibration/measurements/h200-x2/moe_ep_2026-11-26/moe_ep.json \
        --check calibration/measurements/h200-x4/moe_ep_2026-11-26/moe_ep.json

Three host quantities, in µs: per kernel launch (`host_overhead`), per NCCL call
(`host_collective`) and the counts' `.tolist()` after the GPU is done (`host_sync`). Each point of
the fit file runs as a `moe` op with the bench's token copies (as tests/scenario/
test_moe_measured.cpp builds it), forward and backward; the objective is the sum of squared
relative errors of gcsim's layer time against the slower rank's un-instrumented pass
(`plain_us_per_rank`), over every point and both passes (the 4K-token points, where the host
decides the time, are what makes the costs identifiable). Coordinate descent, golden section per
quantity within RANGES, two rounds. The check files are then run with the fitted values, nothing
refitted, and every point and skewed/balanced ratio printed.
"""
import argparse
import json
import math
import os
import subprocess
import tempfile

KEYS = ("host_overhead", "host_collective", "host_sync")
RANGES = ((0.0, 100.0), (0.0, 400.0), (0.0, 200.0))  # µs searched (the test's physical ranges)


def yaml_for(r, pas, host):
    gpus = r["ranks"]
    preset = "h100-sxm" if "H100" in r["device"] else "h200-sxm"
    copies = ", ".join(str(gpus * c) for c in r["expert_tokens_per_source"])
    extra = "".join(", %s: %.3fus" % (k, v) for k, v in zip(KEYS, host)) if host else ", host: none"
    return ("cluster: {gpu: %s, nodes: 1, gpus_per_node: %d}\n"
            "network: {model: flow}\n"
            "workload:\n  kind: graph\n  ops:\n"
            "    - {name: moe, op: moe, tokens: %d, hidden: %d, expert_ffn: %d, experts: %d, top_k: %d, "
            "expert_tokens: [%s], pass: %s%s}\n" % (
                preset, gpus, r["tokens_per_rank"], r["hidden"], r["expert_ffn"], r["experts"], r["top_k"], copies,
                pas, extra))


def simulate(gcsim, r, pas, host):
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "moe.yaml")
        with open(cfg, "w") as f:
            f.write(yaml_for(r, pas, host))
        subprocess.run([gcsim, "run", cfg, "-o", os.path.join(d, "out"), "-q"], check=True,
                       capture_output=True)
        with open(os.path.join(d, "out", "summary.json")) as f:
            return json.load(f)["moe"][0]["layer_time_s"] * 1e6


def measured(r, pas):
    return max(p[pas] for p in r["plain_us_per_rank"])


def errors(gcsim, results, host):
    out = []
    for r in results:
        for pas in ("fwd", "bwd"):
            s = simulate(gcsim, r, pas, host)
            out.append((r, pas, measured(r, pas), s))
    return out


def objective(gcsim, results, host):
    return sum((s / m - 1.0) ** 2 for _, _, m, s in errors(gcsim, results, host))


def golden(f, lo, hi, iters=12):
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit(gcsim, results, start):
    host = list(start)
    for rnd in range(2):
        for i in range(len(KEYS)):
            def f(v, i=i):
                h = list(host)
                h[i] = v
                return objective(gcsim, results, h)
            host[i] = golden(f, *RANGES[i])
            print("round %d: %s = %.1f us (objective %.4f)" % (rnd, KEYS[i], host[i], objective(gcsim, results, host)),
                  flush=True)
    return host


def table(title, rows):
    print("\n" + title)
    print("| point | pass | measured (us) | gcsim (us) | err | skewed/balanced measured | gcsim | err |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    base = {}
    for r, pas, m, s in rows:
        if r["skew"] == 0.0:
            base[(r["hidden"], r["experts"], r["top_k"], r["tokens_per_rank"], pas)] = (m, s)
    for r, pas, m, s in rows:
        bm, bs = base[(r["hidden"], r["experts"], r["top_k"], r["tokens_per_rank"], pas)]
        rm, rs = m / bm, s / bs
        print("| %s | %s | %.0f | %.0f | %+.1f%% | %.3f | %.3f | %+.1f%% |" % (
            r["name"], pas, m, s, 100 * (s / m - 1), rm, rs, 100 * (rs / rm - 1)))


def load(path):
    """The file's points (failed ones left out), each tagged with its GPU's name."""
    doc = json.load(open(path))
    out = [r for r in doc["results"] if "error" not in r]
    for r in out:
        r["device"] = doc["meta"]["device_name"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("--fit", required=True)
    ap.add_argument("--check", action="append", default=[])
    ap.add_argument("--start", default="20,150,20", help="starting host costs (us)")
    ap.add_argument("--no-fit", action="store_true", help="only print the tables with --start")
    a = ap.parse_args()
    fit_results = load(a.fit)
    start = [float(v) for v in a.start.split(",")]
    host = start if a.no_fit else fit(a.gcsim, fit_results, start)
    print("\nfitted: " + ", ".join("%s %.1f us" % (k, v) for k, v in zip(KEYS, host)))
    table("fit (%s), host modelled" % a.fit, errors(a.gcsim, fit_results, host))
    table("fit (%s), host: none" % a.fit, errors(a.gcsim, fit_results, None))
    for c in a.check:
        res = load(c)
        table("held out (%s), host modelled" % c, errors(a.gcsim, res, host))
        table("held out (%s), host: none" % c, errors(a.gcsim, res, None))


if __name__ == "__main__":
    main()
