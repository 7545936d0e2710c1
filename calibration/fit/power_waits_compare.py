#!/usr/bin/env python3
"""gcsim against power_clock_waits_bench.py's measurement: GEMM bursts (eight bf16 8192^3) with
waits of 2-25 ms between them, the GEMMs' median time over the second half of each phase against
back to back, measured and simulated, as a Markdown table.

    python3 calibration/fit/power_waits_compare.py MEASUREMENT.json [--gcsim build/gcsim]
            [--gpu h100-sxm] [-s key=value ...]

Each phase is a gcsim graph on two GPUs under `cluster.clocks: model` from rest (the bench rests
1.5 s before each phase): rank 0's GEMMs in a chain, after each burst of eight
  idle, spin  a `delay` of the measured mean gap (gcsim has no kernel for a one-thread spin: it
              draws nothing, as an idle GPU)
  nccl        a 32 MiB p2p to rank 1 and a 32 MiB p2p back after a `delay` of W on rank 1 (the
              bench's exchange; the NCCL kernel's SMs are held while it waits, drawing nothing)
for as many bursts as the bench ran (its `bursts`), from the same start. Used by README.md,
"Clocks from a power model".
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 8192


def graph(gpu, mode, gap_us, wait_ms, bursts):
    ops, prev = [], None
    for b in range(bursts):
        for j in range(8):
            name = "g%d_%d" % (b, j)
            ops.append("    - {name: %s, rank: 0, op: gemm, m: %d, n: %d, k: %d%s}" % (
                name, N, N, N, ", after: [%s]" % prev if prev else ""))
            prev = name
        if mode == "gemm":
            continue
        if mode in ("idle", "spin"):
            ops.append("    - {name: w%d, rank: 0, op: delay, duration: %.1fus, after: [%s]}" % (b, gap_us, prev))
            prev = "w%d" % b
        else:
            ops.append("    - {name: a%d, op: p2p, src: 0, dst: 1, bytes: 32MiB, after: [%s%s]}" % (
                b, prev, ", s%d" % (b - 1) if b else ""))
            ops.append("    - {name: d%d, rank: 1, op: delay, duration: %gms, after: [a%d]}" % (b, wait_ms, b))
            ops.append("    - {name: s%d, op: p2p, src: 1, dst: 0, bytes: 32MiB, after: [d%d, a%d]}" % (b, b, b))
            prev = "s%d" % b
    return ("cluster: {gpu: %s, nodes: 1, gpus_per_node: 2, clocks: model, scale_up: {kind: nvswitch}, "
            "scale_out: {topology: none}}\nworkload:\n  kind: graph\n  ops:\n" % gpu) + "\n".join(ops) + "\n"


def simulate(gcsim, cfg, extra):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "c.yaml"), "w") as f:
            f.write(cfg)
        args = [gcsim, "run", os.path.join(d, "c.yaml"), "-o", os.path.join(d, "out"), "-q"]
        for s in extra:
            args += ["-s", s]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "out", "summary.json")) as f:
            s = json.load(f)
    g = sorted((o["start_s"], o["end_s"]) for o in s["ops"] if o["name"].startswith("g"))
    return statistics.median((e - b) * 1e6 for b, e in g[len(g) // 2:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--gcsim", default=os.path.join(ROOT, "build", "gcsim"))
    ap.add_argument("--gpu")
    ap.add_argument("-s", action="append", default=[])
    a = ap.parse_args()
    with open(a.measurement) as f:
        m = json.load(f)
    gpu = a.gpu or ("h200-sxm" if "H200" in m["meta"]["device"] else "h100-sxm")
    phases = {p["phase"]: p for p in m["phases"]}
    base_m = phases["gemm"]["summary"]["gemm_median_us"]
    base_s = simulate(a.gcsim, graph(gpu, "gemm", 0, 0, phases["gemm"]["summary"]["bursts"] // 8), a.s)
    print("Measured: %s, %s; gcsim preset %s\n" % (m["meta"]["device"], m["meta"]["date"], gpu))
    print("| phase | measured GEMM (us) | vs back to back | gcsim GEMM (us) | vs back to back | difference (points) |")
    print("|---|---:|---:|---:|---:|---:|")
    print("| back to back | %.1f | | %.1f | | |" % (base_m, base_s))
    for name, p in phases.items():
        if name == "gemm":
            continue
        s = p["summary"]
        sim = simulate(a.gcsim, graph(gpu, p["mode"], s["gap_mean_us"], p["wait_ms"], s["bursts"]), a.s)
        em, es = s["gemm_median_us"] / base_m - 1, sim / base_s - 1
        print("| %s | %.1f | %+.1f%% | %.1f | %+.1f%% | %+.1f |" % (name, s["gemm_median_us"], 100 * em, sim,
                                                                     100 * es, 100 * (es - em)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
