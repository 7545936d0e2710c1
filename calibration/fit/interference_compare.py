#!/usr/bin/env python3
"""gcsim against the interference measurements of calibration/microbench/gemm_beside_nccl.py:
the same release harness replayed as a `graph` workload (kernels back to back on the compute
stream, collectives back to back on the comm stream, both released at t = 0 on every rank), the
same statistics taken from summary.json's op spans (median per-kernel time of kernels wholly
inside the collectives' window, median per-collective time), both sides' slowdowns against the
kernel and the collective alone, as a Markdown table.

    python3 calibration/fit/interference_compare.py MEASUREMENT.json [--gcsim build/gcsim]
            [-s key=value ...] [--json OUT.json]
    python3 calibration/fit/interference_compare.py MEASUREMENT.json --fit

--fit-attention fits network.interference.attention_sensitivity on the SDPA kernels' slowdowns
beside the 1 GiB collectives of attention_beside_nccl.py's measurement (the 256 MiB cases and
the GEMMs held out).
--fit fits network.interference.kernel_sensitivity on the kernels' slowdowns and then
collective_sensitivity on the collectives' (each on a grid of 0.05 over its range [0, 1], the
least mean |log(predicted / measured)|) over the "steady" cases, and prints the table of every
case with those values: the "single" cases are held out. --exclude NAME leaves cases out of
the fit (the fit of 2026-11-22 left out gemm8192_ar256MiB, where the all-reduces wait for
whole 8192^3 GEMMs; since the GPU model dispatches CTAs in launch order (a collective waits
for the last wave of the kernels launched before it) nothing is left out: --fit on the four
steady 2x H200 cases gives kernel_sensitivity 0.5, collective_sensitivity 0.2).

Reads the 2-GPU suite (schema gcsim.calibration.gemm_beside_nccl.v1: GEMMs beside all-reduces,
"single" and "steady" releases), the interference suite (gcsim.calibration.interference.v1:
GEMMs and a bf16 add beside all-reduce, reduce-scatter, all-gather, "steady") and
attention_beside_nccl.py's (gcsim.calibration.attention_beside_nccl.v1: cuDNN SDPA forward and
backward, and GEMMs, beside all-reduce and reduce-scatter, "steady"). The cluster is
the measured GPU's preset (h100-sxm or h200-sxm), one NVSwitch node, the flow network (NCCL's
algorithms on the collective engine), rested clocks unless -s cluster.clocks=model.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MIB = 1 << 20
TOL_US = 5.0  # the measurement's "wholly inside" slack


def preset(meta):
    name = (meta.get("devices") or [{}])[0].get("name", "").lower()
    return "h200-sxm" if "h200" in name else "h100-sxm"


def kernel_op(desc, name, rank):
    if desc["kind"] == "gemm":
        return (f"{{name: {name}, rank: {rank}, op: gemm, m: {desc['m']}, n: {desc['n']}, "
                f"k: {desc['k']}, dtype: bf16}}")
    if desc["kind"] == "sdpa":  # PyTorch's default SDPA on Hopper: cuDNN's fused kernels
        return (f"{{name: {name}, rank: {rank}, op: attention, batch: {desc['batch']}, "
                f"heads: {desc['heads']}, q_len: {desc['seq']}, head_dim: {desc['head_dim']}, "
                f"causal: {str(desc['causal']).lower()}, pass: {desc['pass']}, kernel: cudnn, "
                f"dtype: bf16}}")
    return f"{{name: {name}, rank: {rank}, op: elementwise, kind: add, elements: {desc['elements']}, dtype: bf16}}"


def comm_op(desc, name):
    return f"{{name: {name}, op: {desc['op']}, ranks: all, bytes: {desc['bytes']}B}}"


def graph_yaml(gpu, world, kdesc, n_k, cdesc, n_c):
    lines = [f"cluster: {{gpu: {gpu}, nodes: 1, gpus_per_node: {world}, clocks: rested}}",
             "network: {model: flow}", "workload:", "  kind: graph", "  ops:"]
    # Collectives first (the harness enqueued them first), then the kernels of every rank.
    for i in range(n_c):
        lines.append("    - " + comm_op(cdesc, f"c{i}"))
    for r in range(world):
        for i in range(n_k):
            lines.append("    - " + kernel_op(kdesc, f"k{r}_{i}", r))
    return "\n".join(lines) + "\n"


def run(gcsim, yaml_text, overrides):
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "case.yaml")
        with open(cfg, "w") as f:
            f.write(yaml_text)
        cmd = [gcsim, "run", cfg, "-q", "-o", os.path.join(d, "out")]
        for o in overrides:
            cmd += ["-s", o]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "out", "summary.json")) as f:
            return json.load(f)


def spans(summary, rank):
    ks, cs = [], []
    for o in summary["ops"]:
        if o["rank"] != rank:
            continue
        s, e = o["start_s"] * 1e6, o["end_s"] * 1e6
        (cs if o["name"].startswith("c") else ks).append((s, e))
    return sorted(ks), sorted(cs)


def inside(items, window):
    w0, w1 = window
    return [e - s for s, e in items if s >= w0 - TOL_US and e <= w1 + TOL_US]


def predict(gcsim, gpu, world, kdesc, n_k, cdesc, n_c, overrides):
    """Medians over ranks pooled: kernel alone, collective alone, kernel inside, collective inside."""
    alone_k = run(gcsim, graph_yaml(gpu, world, kdesc, 3, cdesc, 0), overrides)
    alone_c = run(gcsim, graph_yaml(gpu, world, kdesc, 0, cdesc, n_c), overrides)
    both = run(gcsim, graph_yaml(gpu, world, kdesc, n_k, cdesc, n_c), overrides)
    ka = statistics.median(e - s for s, e in spans(alone_k, 0)[0])
    ca = statistics.median(e - s for s, e in spans(alone_c, 0)[1])
    ki, ci = [], []
    for r in range(world):
        k, c = spans(both, r)
        if not k or not c:
            continue
        ki += inside(k, (c[0][0], c[-1][1]))
        ci += inside(c, (k[0][0], k[-1][1]))
    return {"kernel_alone_us": ka, "comm_alone_us": ca,
            "kernel_inside_us": statistics.median(ki) if ki else None,
            "comm_inside_us": statistics.median(ci) if ci else None}


def med(s):
    return None if not s else s["median"]


def cases_2gpu(d):
    """(key, kernel desc, n_k, comm desc, n_c, measured) of the gemm_beside_nccl.v1 suite; the
    measured figures are the two ranks' medians, averaged."""
    out = []
    r0 = d["ranks"]["0"]
    for key, o in r0["overlap"].items():
        if any(v in key for v in ("hiprio", "maxctas")):
            continue  # other NCCL settings than the model's 24 channels
        n = o["gemm_mnk"]
        kd = {"kind": "gemm", "m": n, "n": n, "k": n}
        cd = {"op": "all_reduce", "bytes": o["ar_bytes"]}
        meas = {}
        for field, inside_key, alone_key in (
                ("kernel", "gemm_inside_ar_us", None), ("comm", "ar_all_us", "ar_alone_same_harness_us")):
            vals = []
            for r in d["ranks"].values():
                ro = r["overlap"][key]
                if field == "kernel":
                    vals.append(med(ro[inside_key]) / ro["gemm_alone_us"])
                else:
                    vals.append(med(ro[inside_key]) / med(ro[alone_key]))
            meas["ratio_" + field] = sum(vals) / len(vals)
        out.append((key, kd, o["n_gemm"], cd, o["n_ar"], meas))
    return out


def cases_interf(d):
    out = []
    r0 = d["ranks"]["0"]
    for key, o in r0.get("interf", {}).items():
        kd = dict(r0["kernel_alone"][o["kernel"]]["desc"])
        cd = dict(r0["comm_alone"][o["comm"]]["desc"])
        meas = {}
        for field in ("kernel", "comm"):
            vals = [r["interf"][key]["ratio_" + field] for r in d["ranks"].values()
                    if key in r.get("interf", {}) and r["interf"][key].get("ratio_" + field)]
            meas["ratio_" + field] = sum(vals) / len(vals) if vals else None
        out.append((key, kd, o["n_kernels"], cd, o["n_comms"], meas))
    return out


def log_error(rows, field):
    import math
    errs = [abs(math.log(r["gcsim_" + field] / r["measured_" + field])) for r in rows
            if r["gcsim_" + field] and r["measured_" + field]]
    return sum(errs) / len(errs) if errs else float("inf")


def evaluate(gcsim, gpu, world, cases, overrides):
    rows = []
    for key, kd, n_k, cd, n_c, meas in cases:
        p = predict(gcsim, gpu, world, kd, n_k, cd, n_c, overrides)
        rows.append({"case": key, "measured_kernel": meas["ratio_kernel"],
                     "gcsim_kernel": p["kernel_inside_us"] / p["kernel_alone_us"]
                     if p["kernel_inside_us"] else None,
                     "measured_comm": meas["ratio_comm"],
                     "gcsim_comm": p["comm_inside_us"] / p["comm_alone_us"]
                     if p["comm_inside_us"] else None, **p})
    return rows


def fit(gcsim, gpu, world, cases, overrides, exclude):
    """Grid search, one sensitivity at a time (kernel first, with the collective's at 0)."""
    fit_cases = [c for c in cases if c[0].endswith("steady") and not any(x in c[0] for x in exclude)]
    grid = [round(0.05 * i, 2) for i in range(21)]
    best = {}
    for name, field, fixed in (("kernel_sensitivity", "kernel", {"collective_sensitivity": 0.0}),
                               ("collective_sensitivity", "comm", None)):
        fixed = fixed or {"kernel_sensitivity": best["kernel_sensitivity"]}
        scores = []
        for v in grid:
            ov = overrides + [f"network.interference.{k}={x}" for k, x in fixed.items()] + [
                f"network.interference.{name}={v}"]
            scores.append((log_error(evaluate(gcsim, gpu, world, fit_cases, ov), field), v))
        best[name] = min(scores)[1]
        print(f"fitted {name} = {best[name]} (mean |log error| {min(scores)[0]:.4f} on "
              f"{len(fit_cases)} steady cases)", file=sys.stderr)
    return best


def fit_attention(gcsim, gpu, world, cases, overrides, exclude):
    """attention_sensitivity on the SDPA kernels' slowdowns beside the 1 GiB collectives (grid
    of 0.05 over [0, 1], least mean |log error|), less those --exclude names; the 256 MiB cases
    are held out."""
    fit_cases = [c for c in cases if c[0].startswith("sdpa") and "1024MiB" in c[0]
                 and not any(x in c[0] for x in exclude)]
    scores = []
    for v in [round(0.05 * i, 2) for i in range(21)]:
        ov = overrides + [f"network.interference.attention_sensitivity={v}"]
        scores.append((log_error(evaluate(gcsim, gpu, world, fit_cases, ov), "kernel"), v))
    best = min(scores)
    print(f"fitted attention_sensitivity = {best[1]} (mean |log error| {best[0]:.4f} on "
          f"{len(fit_cases)} SDPA cases beside 1 GiB collectives)", file=sys.stderr)
    return best[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("measurement")
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("-s", action="append", default=[], dest="overrides")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--fit", action="store_true", help="fit the two sensitivities (see above)")
    ap.add_argument("--fit-attention", action="store_true",
                    help="fit attention_sensitivity on the SDPA cases beside 1 GiB collectives")
    ap.add_argument("--exclude", action="append", default=[],
                    help="--fit: leave cases whose name contains this out of the fit")
    a = ap.parse_args()
    with open(a.measurement) as f:
        d = json.load(f)
    gpu = preset(d.get("meta", {}))
    world = int(d.get("meta", {}).get("world_size", len(d["ranks"])))
    schema = d.get("schema", "")
    cases = (cases_interf(d) if schema.endswith(("interference.v1", "attention_beside_nccl.v1"))
             else cases_2gpu(d))
    if a.fit:
        best = fit(a.gcsim, gpu, world, cases, a.overrides, a.exclude)
        a.overrides += [f"network.interference.{k}={v}" for k, v in best.items()]
    if a.fit_attention:
        v = fit_attention(a.gcsim, gpu, world, cases, a.overrides, a.exclude)
        a.overrides += [f"network.interference.attention_sensitivity={v}"]
    rows = evaluate(a.gcsim, gpu, world, cases, a.overrides)

    def f(x):
        return "-" if x is None else f"{x:.3f}"

    def err(pv, mv):
        return "-" if pv is None or mv is None else f"{(pv / mv - 1) * 100:+.1f}%"
    print(f"| case ({gpu} x{world}) | kernel measured | kernel gcsim | error | "
          "collective measured | collective gcsim | error |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['case']} | {f(r['measured_kernel'])} | {f(r['gcsim_kernel'])} | "
              f"{err(r['gcsim_kernel'], r['measured_kernel'])} | {f(r['measured_comm'])} | "
              f"{f(r['gcsim_comm'])} | {err(r['gcsim_comm'], r['measured_comm'])} |")
    for field in ("kernel", "comm"):
        errs = [abs(r["gcsim_" + field] / r["measured_" + field] - 1) for r in rows
                if r["gcsim_" + field] and r["measured_" + field]]
        print(f"mean |log error| {field}: {log_error(rows, field):.4f}; mean |error| "
              f"{100 * sum(errs) / max(1, len(errs)):.1f}%")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
