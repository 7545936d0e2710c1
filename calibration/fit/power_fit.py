#!/usr/bin/env python3
"""Fits gcsim's power model (models/gpu/power_model.h) to power_clock_bench.py measurements.

    python3 power_fit.py FIT.json [HELD_OUT.json ...] [--max-mhz 1980] [--peak-bw 3.35e12] -o OUT.md

The same equations as the C++ model (power_model.cpp, clock_governor.cpp):

    P(a, r)  = idle + (W_t a_t + W_v a_v) r V(r)^2 + W_hbm a_hbm        r = f / f_max
    V(r)     = v_min below the knee, rising linearly to 1 at r = 1
    clock    = the r at which the activity averaged over tau draws the cap (1 if it never does)
    speed(r) = 1 / (share / r + 1 - share)                               arithmetic throughput

Steps, each from its own phase of the measurement (what is fitted where):
  1. idle_w: median power of the idle phase.
  2. clock_bound_share: GEMM throughput over its rested rate against SM clock over max,
     100 ms windows of the gemm and burst phases (least squares on 1/speed - 1 = share (1/r - 1)).
  3. hbm_w: the memory phase's steady power above idle over its HBM activity (achieved / peak).
  4. tensor_w and min_voltage_ratio (knee fixed at 0.55 of f_max): the gemm phase's steady clock
     holds its activity exactly at the cap, and the power drawn at full clock in the first
     100 ms of the 1000 ms bursts (the driver's instant power field) fixes the scale.
  5. time_constant: the governor run over the measured on/off timeline of every burst phase,
     tau on a log grid, against the sampled SM clock (median absolute error).
Held out: the mixed loop's clock, the 100 ms and 20 ms burst clocks, and every phase of the
other files. GEMM activity (a_t 0.99, a_hbm 0.075: bf16 8192^3, ideal traffic) and the copy's
(a_hbm = achieved / peak) are what gcsim's cost model gives those kernels.
"""
import argparse
import bisect
import json
import math
import statistics
import sys

A_T_GEMM, A_M_GEMM = 0.99, 0.075
KNEE = 0.55
PEAK_BW = 3.35e12


def speed(p, r):
    return 1.0 / (p["share"] / r + 1.0 - p["share"])


def volt(p, r):
    return p["vmin"] if r <= p["knee"] else p["vmin"] + (1 - p["vmin"]) * min(1.0, (r - p["knee"]) / (1 - p["knee"]))


def power(p, at, am, r):
    return p["idle"] + p["tensor"] * at * speed(p, r) * volt(p, r) ** 2 + p["hbm"] * am


def cap_clock(p, at, am):
    if power(p, at, am, 1.0) <= p["cap"]:
        return 1.0
    lo, hi = p["rmin"], 1.0
    if power(p, at, am, lo) >= p["cap"]:
        return lo
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if power(p, at, am, mid) > p["cap"]:
            hi = mid
        else:
            lo = mid
    return lo


def load(path):
    d = json.load(open(path))
    cols = d["meta"]["nvml_columns"]
    samples = [dict(zip(cols, r)) for r in d.get("nvml_samples") or []]
    return d, samples, {p["phase"]: p for p in d["phases"]}


def in_phase(samples, name):
    return [x for x in samples if x["phase"] == name]


def energy_power(samples):
    """Mean board power (W) from NVML's total-energy counter over the samples."""
    e = [x for x in samples if x.get("energy_j") is not None]
    return (e[-1]["energy_j"] - e[0]["energy_j"]) / (e[-1]["t_s"] - e[0]["t_s"])


def activity_intervals(phase):
    """(start, end, a_tensor, a_hbm) per kernel, as gcsim's cost model charges them."""
    k = phase["kernels"]
    out = []
    for t, d, kk in zip(k["t_s"], k["dur_us"], k["kind"]):
        kind = k["kinds"][kk]
        if kind == "gemm":
            out.append((t, t + d * 1e-6, A_T_GEMM, A_M_GEMM))
        else:  # memory-bound: bytes over time over peak bandwidth
            w = phase["rates"][kind]["work_per_kernel"]
            out.append((t, t + d * 1e-6, 0.0, min(1.0, w / (d * 1e-6) / PEAK_BW)))
    return sorted(out)


def simulate_clock(p, intervals, sample_t, tau):
    """The governor (clock_governor.cpp) over the kernels' activity: the clock at each sample."""
    ev = []
    for a, b, at, am in intervals:
        ev.append((a, at, am))
        ev.append((b, -at, -am))
    ev.sort(key=lambda e: e[0])
    out, i = [], 0
    avg_t = avg_m = run_t = run_m = 0.0
    t_last = ev[0][0] if ev else 0.0
    for ts in sample_t:
        while i < len(ev) and ev[i][0] <= ts:
            t, dt_, dm_ = ev[i]
            k = math.exp(-(t - t_last) / tau)
            avg_t, avg_m = run_t + (avg_t - run_t) * k, run_m + (avg_m - run_m) * k
            t_last = t
            run_t, run_m = max(0.0, run_t + dt_), max(0.0, run_m + dm_)
            i += 1
        k = math.exp(-max(0.0, ts - t_last) / tau)
        out.append(cap_clock(p, run_t + (avg_t - run_t) * k, run_m + (avg_m - run_m) * k))
    return out


def busy_samples(samples, intervals, second_half=True):
    """Samples taken while a kernel ran (the clock the work saw)."""
    starts = [a for a, _, _, _ in intervals]
    s = samples[len(samples) // 2:] if second_half else samples
    out = []
    for x in s:
        i = bisect.bisect_right(starts, x["t_s"]) - 1
        if i >= 0 and intervals[i][0] <= x["t_s"] <= intervals[i][1] + 0.002:
            out.append(x)
    return out


def phase_clock(p, tau, phase, samples, max_mhz):
    """Measured and governed median SM clock while kernels run (second half of the phase)."""
    iv = activity_intervals(phase)
    s = busy_samples(in_phase(samples, phase["phase"]), iv)
    if not s:
        return None
    pred = simulate_clock(p, iv, [x["t_s"] for x in s], tau)
    return statistics.median(x["sm_mhz"] for x in s), statistics.median(pred) * max_mhz


FIT_BURSTS = ("burst_1000ms_50%", "burst_100ms_75%")


def fit(path, max_mhz, cap):
    d, samples, phases = load(path)
    r = {"file": path, "device": d["meta"]["device"]}
    idle = statistics.median(x["power_instant_w"] or x["power_w"] for x in in_phase(samples, "idle"))
    r["idle_w"] = idle
    # Clock share: GEMM rate over its rested rate against the sampled clock, 100 ms windows.
    rested = phases["gemm"]["rates"]["gemm"]["rested_rate"]
    pairs = []
    for name in [n for n in phases if n == "gemm" or n.startswith("burst")]:
        for t0, n, rate in phases[name]["rates"]["gemm"]["windows_100ms"]:
            clk = [x["sm_mhz"] for x in samples if t0 <= x["t_s"] < t0 + 0.1]
            if n >= 5 and clk and statistics.median(clk) < 0.97 * max_mhz:
                pairs.append((statistics.median(clk) / max_mhz, rate / rested))
    num = sum((1 / a - 1) * (1 / b - 1) for a, b in pairs)
    den = sum((1 / a - 1) ** 2 for a, _ in pairs)
    share = num / den
    r["clock_bound_share"], r["share_windows"] = share, len(pairs)
    # Memory loop: power above idle over its HBM activity.
    mem = in_phase(samples, "memory")
    a_m = phases["memory"]["rates"]["copy"]["steady_rate"] / PEAK_BW
    r["memory_power_w"], r["memory_hbm_activity"] = energy_power(mem[len(mem) // 2:]), a_m
    hbm = (r["memory_power_w"] - idle) / a_m
    r["hbm_w"] = hbm
    # 20 ms bursts run at full clock throughout: their on-time power fixes W_tensor.
    b20 = phases["burst_20ms_50%"]
    iv = activity_intervals(b20)
    duty = sum(b - a for a, b, _, _ in iv) / (iv[-1][1] - iv[0][0])
    p_avg = energy_power(in_phase(samples, "burst_20ms_50%"))
    p_on = (p_avg - (1 - duty) * idle) / duty
    r["burst20_duty"], r["burst20_power_w"], r["gemm_full_clock_power_w"] = duty, p_avg, p_on
    tensor = (p_on - idle - hbm * A_M_GEMM) / A_T_GEMM
    r["tensor_w"] = tensor
    # Back-to-back GEMMs: the cap at the measured clock fixes V there, hence v_min.
    g = in_phase(samples, "gemm")
    half = g[len(g) // 2:]
    r_g = statistics.median(x["sm_mhz"] for x in half) / max_mhz
    p_g = energy_power(half)
    r["gemm_clock_mhz"], r["gemm_power_w"] = r_g * max_mhz, p_g
    r["gemm_speed_measured"] = phases["gemm"]["rates"]["gemm"]["steady_over_rested"]
    base = {"idle": idle, "hbm": hbm, "tensor": tensor, "share": share, "knee": KNEE, "rmin": 0.5, "cap": cap, "vmin": 1.0}
    v_g = math.sqrt((p_g - idle - hbm * A_M_GEMM) / (A_T_GEMM * tensor * speed(base, r_g)))
    rise = min(1.0, max(0.0, (r_g - KNEE) / (1 - KNEE)))
    vmin = (v_g - rise) / (1 - rise)
    base["vmin"] = vmin
    r["min_voltage_ratio"], r["voltage_at_gemm_clock"] = vmin, v_g
    # Time constant: bursts long enough to throttle, on-time clock, log grid 5 ms .. 2 s.
    best = None
    for i in range(80):
        tau = 0.005 * (400 ** (i / 79))
        errs = []
        for name in FIT_BURSTS:
            m, pr = phase_clock(base, tau, phases[name], samples, max_mhz)
            errs.append(abs(pr / m - 1))
        e = sum(errs) / len(errs)
        if best is None or e < best[1]:
            best = (tau, e)
    r["time_constant_s"], r["time_constant_fit_error"] = best
    r["params"] = base
    return r


def check(path, params, tau, max_mhz):
    d, samples, phases = load(path)
    out = []
    for name, ph in phases.items():
        res = phase_clock(params, tau, ph, samples, max_mhz)
        if res:
            out.append((name, res[0], res[1]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--max-mhz", type=float, default=1980.0)
    ap.add_argument("--cap", type=float, default=700.0)
    ap.add_argument("--peak-bw", type=float, default=3.35e12,
                    help="HBM peak in B/s (H100 3.35e12, H200 4.8e12): HBM activity = achieved / peak")
    args = ap.parse_args()
    globals()["PEAK_BW"] = args.peak_bw
    r = fit(args.files[0], args.max_mhz, args.cap)
    print(json.dumps({k: v for k, v in r.items() if k != "params"}, indent=1))
    print("\n| file | phase | measured SM clock (MHz) | governor (MHz) | error | used for |")
    print("|---|---|---|---|---|---|")
    for i, f in enumerate(args.files):
        for name, meas, pred in check(f, r["params"], r["time_constant_s"], args.max_mhz):
            used = "fit" if i == 0 and (name in FIT_BURSTS or name in ("gemm", "memory")) else "held out"
            print("| %s | %s | %.0f | %.0f | %+.1f%% | %s |" % (f, name, meas, pred, 100 * (pred / meas - 1), used))
    return 0


if __name__ == "__main__":
    sys.exit(main())
