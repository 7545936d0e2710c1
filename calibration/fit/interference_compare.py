#!/usr/bin/env python3
"""gcsim against the interference measurements of calibration/microbench/gemm_beside_nccl.py:
the same release harness replayed as a `graph` workload (kernels back to back on the compute
stream, collectives back to back on the comm stream, both released at t = 0 on every rank), the
same statistics taken from summary.json's op spans (median per-kernel time of kernels wholly
inside the collectives' window, median per-collective time), both sides' slowdowns against the
kernel and the collective alone, as a Markdown table.

    python3 calibration/fit/interference_compare.py MEASUREMENT.json [MEASUREMENT.json ...]
            [--gcsim build/gcsim] [-s key=value ...] [--json OUT.json] [--jobs 2]
    python3 calibration/fit/interference_compare.py MEASUREMENT.json --fit
    python3 calibration/fit/interference_compare.py A.json B.json ... --fit \
            --fit-on 'h200-x2/.*steady$' --fit-on 'h100-x4/.*/w4/.*ar25MiB' \
            --staging-grid 0,0.25,0.5,0.75,1

Several files: every case is named by its file's path below calibration/measurements (no .json)
and its key; --fit-on (regular expressions, searched in that name) picks the fit cases, every
other case is held out, and the table ends with the mean errors of the fit cases, the held-out
ones and each file. --staging-grid fits the two sensitivities (as below) at each value of
network.interference.staging_in_hbm (each in [0, 1]) and keeps the value whose fit leaves the
least mean |log error| (kernels plus collectives) on the fit cases.  The kernel and collective
alone do not depend on network.interference and are simulated once per case.

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
backward, and GEMMs, beside all-reduce and reduce-scatter, "steady") and gemm_beside_nccl.py
--suite ddp's (the same interference.v1 schema: bf16 add / mul / silu as elementwise ops, the
bf16 -> fp32 cast as a memcpy of its 6 B per element, F.rms_norm as an rms_norm op; all-reduces
of 25 MiB fp32 or bf16 as all_reduce of those bytes), and memkern_bench.py's "beside" points
(kernel side only; cases_memkern). The cluster is
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
    if desc["kind"] == "elementwise":  # suite ddp: add / mul / silu, bf16
        return (f"{{name: {name}, rank: {rank}, op: elementwise, kind: {desc['fn']}, "
                f"elements: {desc['elements']}, dtype: bf16}}")
    if desc["kind"] == "cast":  # bf16 -> fp32 copy_: 2 B read and 4 B written per element
        return f"{{name: {name}, rank: {rank}, op: memcpy, bytes: {3 * desc['elements']}B}}"
    if desc["kind"] in ("rms_norm", "layer_norm"):
        return (f"{{name: {name}, rank: {rank}, op: {desc['kind']}, tokens: {desc['tokens']}, "
                f"hidden: {desc['hidden']}, dtype: bf16}}")
    # suite interf's "elementwise_add"
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


_ALONE = {}  # (gpu, world, case) -> (kernel alone us, collective alone us): no interference there


def alone(gcsim, gpu, world, kdesc, cdesc, n_c, overrides):
    """The kernel and the collective alone; neither depends on network.interference (no
    collective beside the kernel, no kernel beside the collective), so cached per case and the
    overrides other than network.interference.*."""
    base = tuple(o for o in overrides if not o.startswith("network.interference."))
    key = (gcsim, gpu, world, json.dumps(kdesc, sort_keys=True), json.dumps(cdesc, sort_keys=True),
           n_c, base)
    if key not in _ALONE:
        alone_k = run(gcsim, graph_yaml(gpu, world, kdesc, 3, cdesc, 0), overrides)
        alone_c = run(gcsim, graph_yaml(gpu, world, kdesc, 0, cdesc, n_c), overrides)
        _ALONE[key] = (statistics.median(e - s for s, e in spans(alone_k, 0)[0]),
                       statistics.median(e - s for s, e in spans(alone_c, 0)[1]))
    return _ALONE[key]


def predict(gcsim, gpu, world, kdesc, n_k, cdesc, n_c, overrides):
    """Medians over ranks pooled: kernel alone, collective alone, kernel inside, collective inside."""
    ka, ca = alone(gcsim, gpu, world, kdesc, cdesc, n_c, overrides)
    both = run(gcsim, graph_yaml(gpu, world, kdesc, n_k, cdesc, n_c), overrides)
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
        if kd["kind"] == "step_pass":
            continue  # a framework pass with no graph op (calibration/fit/step_passes_beside.py)
        cd = dict(r0["comm_alone"][o["comm"]]["desc"])
        meas = {}
        for field in ("kernel", "comm"):
            vals = [r["interf"][key]["ratio_" + field] for r in d["ranks"].values()
                    if key in r.get("interf", {}) and r["interf"][key].get("ratio_" + field)]
            meas["ratio_" + field] = sum(vals) / len(vals) if vals else None
        out.append((key, kd, o["n_kernels"], cd, o["n_comms"], meas))
    return out


MEMKERN_MIN_MIB = 16  # memkern points below this size are launch-bound (4 MiB: ~8 us); left out


def cases_memkern(d):
    """memkern_bench.py's "beside" points (gcsim.calibration.memkern_bench.v1, one document per
    rank: a batch of `reps` kernels started ~300 us into back-to-back all-reduces of ar_mib MiB,
    in place or cycling ar_buffers buffers): kernel side only (the all-reduces were not timed one
    by one), the ranks' mean of median beside / median alone. layer_norm_bwd has no one-kernel op
    in gcsim and is left out, as are sizes below MEMKERN_MIN_MIB."""
    ranks = [r for r in d.values() if isinstance(r, dict) and "beside" in r]
    r0 = ranks[0]
    hidden = r0.get("hidden", 4096)
    by_key = {}
    for r in ranks:
        for p in r["beside"]:
            if p["kernel"] == "layer_norm_bwd" or p["mib"] < MEMKERN_MIN_MIB:
                continue
            if not p["alone_us"] or not p["beside_us"]:
                continue
            key = f"{p['kernel']}_{p['mib']}MiB__ar{p['ar_mib']}MiBx{p.get('ar_buffers', 1)}"
            ratio = statistics.median(p["beside_us"]) / statistics.median(p["alone_us"])
            by_key.setdefault(key, (p, []))[1].append(ratio)
    out = []
    for key, (p, ratios) in by_key.items():
        n = p["mib"] * MIB // 2 // hidden * hidden
        k = p["kernel"]
        if k in ("add", "mul", "silu", "copy"):
            kd = {"kind": "elementwise", "fn": k, "elements": n}
        elif k == "rms_norm_fwd":
            kd = {"kind": "rms_norm", "tokens": n // hidden, "hidden": hidden}
        elif k == "layer_norm_fwd":
            kd = {"kind": "layer_norm", "tokens": n // hidden, "hidden": hidden}
        else:
            continue
        cd = {"op": "all_reduce", "bytes": p["ar_mib"] * MIB}
        out.append((key, kd, p["reps"], cd, p["ar_count"],
                    {"ratio_kernel": sum(ratios) / len(ratios), "ratio_comm": None}))
    return out


def log_error(rows, field):
    import math
    errs = [abs(math.log(r["gcsim_" + field] / r["measured_" + field])) for r in rows
            if r["gcsim_" + field] and r["measured_" + field]]
    return sum(errs) / len(errs) if errs else float("inf")


def load_cases(path):
    """Every case of one measurement file as a dict: tag (the path below calibration/measurements,
    no .json), key, name (tag/key), gpu, world, the kernel and collective descriptions, their
    counts and the measured ratios (mean of the ranks)."""
    with open(path) as f:
        d = json.load(f)
    if "ranks" not in d and any(isinstance(v, dict) and "beside" in v for v in d.values()):
        r0 = next(v for v in d.values() if isinstance(v, dict) and "beside" in v)
        gpu = preset({"devices": [{"name": r0.get("device", "")}]})
        world = int(r0["world_size"])
        raw = cases_memkern(d)
    else:
        meta = d.get("meta", {})
        gpu = preset(meta)
        world = int(meta.get("world_size", len(d["ranks"])))
        schema = d.get("schema", "")
        raw = (cases_interf(d) if schema.endswith(("interference.v1", "attention_beside_nccl.v1"))
               else cases_2gpu(d))
    tag = os.path.abspath(path)
    if "/measurements/" in tag:
        tag = tag.split("/measurements/", 1)[1]
    tag = tag[:-5] if tag.endswith(".json") else tag
    return [{"tag": tag, "key": key, "name": f"{tag}/{key}", "gpu": gpu, "world": world,
             "kd": kd, "n_k": n_k, "cd": cd, "n_c": n_c, "meas": meas}
            for key, kd, n_k, cd, n_c, meas in raw]


def evaluate(gcsim, cases, overrides, jobs=1):
    def one(c):
        p = predict(gcsim, c["gpu"], c["world"], c["kd"], c["n_k"], c["cd"], c["n_c"], overrides)
        meas = c["meas"]
        return {"case": c["key"], "tag": c["tag"], "name": c["name"],
                "measured_kernel": meas["ratio_kernel"],
                "gcsim_kernel": p["kernel_inside_us"] / p["kernel_alone_us"]
                if p["kernel_inside_us"] else None,
                "measured_comm": meas["ratio_comm"],
                "gcsim_comm": p["comm_inside_us"] / p["comm_alone_us"]
                if p["comm_inside_us"] else None, **p}
    if jobs <= 1:
        return [one(c) for c in cases]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(one, cases))


def select(cases, patterns, exclude):
    """Cases whose name (tag/key) matches one of the regular expressions `patterns` (searched)
    and none of `exclude` (substrings)."""
    import re
    return [c for c in cases if any(re.search(p, c["name"]) for p in patterns)
            and not any(x in c["name"] for x in exclude)]


GRID = [round(0.05 * i, 2) for i in range(21)]  # each sensitivity's physical range [0, 1]


def fit_pair(gcsim, fit_cases, overrides, jobs, quiet=False, grid=None):
    """kernel_sensitivity on the kernels' slowdowns (collective_sensitivity at 0), then
    collective_sensitivity on the collectives' with it: grids of 0.05 over [0, 1], the least
    mean |log(predicted / measured)| (the method of the 2x H200 fit)."""
    best, score = {}, {}
    for name, field, fixed in (("kernel_sensitivity", "kernel", {"collective_sensitivity": 0.0}),
                               ("collective_sensitivity", "comm", None)):
        fixed = fixed or {"kernel_sensitivity": best["kernel_sensitivity"]}
        scores = []
        for v in grid or GRID:
            ov = overrides + [f"network.interference.{k}={x}" for k, x in fixed.items()] + [
                f"network.interference.{name}={v}"]
            scores.append((log_error(evaluate(gcsim, fit_cases, ov, jobs), field), v))
        score[field], best[name] = min(scores)
        if not quiet:
            print(f"  fitted {name} = {best[name]} (mean |log error| {score[field]:.4f} on "
                  f"{len(fit_cases)} cases)", file=sys.stderr)
    return best, score


def fit(gcsim, cases, overrides, patterns, exclude, staging_grid, jobs, grid=None):
    """The two sensitivities (fit_pair) for each staging_in_hbm of `staging_grid` (in [0, 1]);
    the staging value whose fit leaves the least kernel + collective mean |log error| on the fit
    cases wins."""
    fit_cases = select(cases, patterns, exclude)
    if not fit_cases:
        sys.exit("--fit: no case matches " + " ".join(patterns))
    print(f"fit on {len(fit_cases)} cases: " + ", ".join(c["name"] for c in fit_cases),
          file=sys.stderr)
    results = []
    for st in staging_grid:
        if not 0.0 <= st <= 1.0:
            sys.exit(f"--staging-grid: {st} outside [0, 1]")
        ov = overrides + [f"network.interference.staging_in_hbm={st}"]
        print(f"staging_in_hbm = {st}:", file=sys.stderr)
        best, score = fit_pair(gcsim, fit_cases, ov, jobs, grid=grid)
        results.append((score["kernel"] + score["comm"], st, best, score))
    total, st, best, score = min(results, key=lambda r: r[0])
    print("fit summary (staging_in_hbm: kernel_sensitivity, collective_sensitivity, mean |log "
          "error| kernels, collectives):", file=sys.stderr)
    for t, s_, b, sc in results:
        print(f"  {s_}: {b['kernel_sensitivity']}, {b['collective_sensitivity']}, "
              f"{sc['kernel']:.4f}, {sc['comm']:.4f}", file=sys.stderr)
    best = dict(best)
    if len(staging_grid) > 1 or staging_grid[0] != 1.0:
        best["staging_in_hbm"] = st
    return best, fit_cases


def fit_attention(gcsim, cases, overrides, exclude, jobs):
    """attention_sensitivity on the SDPA kernels' slowdowns beside the 1 GiB collectives (grid
    of 0.05 over [0, 1], least mean |log error|), less those --exclude names; the 256 MiB cases
    are held out."""
    fit_cases = [c for c in cases if c["key"].startswith("sdpa") and "1024MiB" in c["key"]
                 and not any(x in c["name"] for x in exclude)]
    scores = []
    for v in GRID:
        ov = overrides + [f"network.interference.attention_sensitivity={v}"]
        scores.append((log_error(evaluate(gcsim, fit_cases, ov, jobs), "kernel"), v))
    best = min(scores)
    print(f"fitted attention_sensitivity = {best[1]} (mean |log error| {best[0]:.4f} on "
          f"{len(fit_cases)} SDPA cases beside 1 GiB collectives)", file=sys.stderr)
    return best[1]


def summary_lines(rows, label):
    out = []
    for field in ("kernel", "comm"):
        errs = [abs(r["gcsim_" + field] / r["measured_" + field] - 1) for r in rows
                if r["gcsim_" + field] and r["measured_" + field]]
        out.append(f"{label} {field}: {len(errs)} cases, mean |log error| "
                   f"{log_error(rows, field):.4f}; mean |error| "
                   f"{100 * sum(errs) / max(1, len(errs)):.1f}%, max "
                   f"{100 * max(errs, default=0):.1f}%")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("measurement", nargs="+")
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("-s", action="append", default=[], dest="overrides")
    ap.add_argument("--json", default=None, help="also write the rows here")
    ap.add_argument("--fit", action="store_true", help="fit the two sensitivities (see above)")
    ap.add_argument("--fit-on", action="append", default=[],
                    help="--fit: regular expression over tag/case of the cases to fit on (default: "
                         "the cases whose name ends in 'steady'); every other case is held out")
    ap.add_argument("--staging-grid", default="1.0",
                    help="--fit: comma-separated staging_in_hbm values (each in [0, 1]) to fit "
                         "the sensitivities at; the best fit's value is kept")
    ap.add_argument("--grid-step", type=float, default=0.05,
                    help="--fit: the sensitivities' grid step over [0, 1]")
    ap.add_argument("--fit-attention", action="store_true",
                    help="fit attention_sensitivity on the SDPA cases beside 1 GiB collectives")
    ap.add_argument("--exclude", action="append", default=[],
                    help="--fit: leave cases whose name contains this out of the fit")
    ap.add_argument("--only", action="append", default=[],
                    help="evaluate only cases whose tag/case matches this regular expression")
    ap.add_argument("--jobs", type=int, default=1, help="gcsim runs at once")
    a = ap.parse_args()
    cases = []
    for m in a.measurement:
        cases += load_cases(m)
    if a.only:
        cases = select(cases, a.only, [])
    fit_names = set()
    if a.fit:
        grid = [float(x) for x in a.staging_grid.split(",")]
        steps = int(round(1.0 / a.grid_step))
        best, fit_cases = fit(a.gcsim, cases, a.overrides, a.fit_on or [r"steady$"], a.exclude,
                              grid, a.jobs, [round(i / steps, 4) for i in range(steps + 1)])
        fit_names = {c["name"] for c in fit_cases}
        a.overrides += [f"network.interference.{k}={v}" for k, v in best.items()]
        print("adopted for the table: " + " ".join(a.overrides), file=sys.stderr)
    if a.fit_attention:
        v = fit_attention(a.gcsim, cases, a.overrides, a.exclude, a.jobs)
        a.overrides += [f"network.interference.attention_sensitivity={v}"]
    rows = evaluate(a.gcsim, cases, a.overrides, a.jobs)
    multi = len(a.measurement) > 1

    def f(x):
        return "-" if x is None else f"{x:.3f}"

    def err(pv, mv):
        return "-" if pv is None or mv is None else f"{(pv / mv - 1) * 100:+.1f}%"
    head = "case" if multi else f"case ({cases[0]['gpu']} x{cases[0]['world']})" if cases else "case"
    print(f"| {head} | kernel measured | kernel gcsim | error | "
          "collective measured | collective gcsim | error |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        name = r["name"] if multi else r["case"]
        if r["name"] in fit_names:
            name += " (fit)"
        print(f"| {name} | {f(r['measured_kernel'])} | {f(r['gcsim_kernel'])} | "
              f"{err(r['gcsim_kernel'], r['measured_kernel'])} | {f(r['measured_comm'])} | "
              f"{f(r['gcsim_comm'])} | {err(r['gcsim_comm'], r['measured_comm'])} |")
    for line in summary_lines(rows, "all"):
        print(line)
    if fit_names:
        for line in summary_lines([r for r in rows if r["name"] in fit_names], "fit"):
            print(line)
        for line in summary_lines([r for r in rows if r["name"] not in fit_names], "held out"):
            print(line)
    if multi:
        for tag in dict.fromkeys(r["tag"] for r in rows):
            for line in summary_lines([r for r in rows if r["tag"] == tag], tag):
                print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"overrides": a.overrides, "fit_cases": sorted(fit_names), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
