#!/usr/bin/env python3
"""Fits gcsim's power model (models/gpu/power_model.h) to power_clock_bench.py measurements.

    python3 power_fit.py FIT.json [HELD_OUT.json ...] --gcsim build/gcsim --gpu h100-sxm
                         [--max-mhz 1980] [--vector HELDOUT_SET.json] [--elementwise HELDOUT_SET.json]
                         [--fast RATIO:TAU_MS]

The same equations as the C++ model (power_model.cpp, clock_governor.cpp):

    P(a, r)  = idle + (W_t a_t + W_v a_v) speed(r) V(r)^2                      r = f / f_max
               + W_hbm (sigma a_hbm + (1 - sigma) a_unshared)
    a_unshared = max(0, a_hbm - min(1, a_t + a_v)) of what runs at once (HBM traffic beside no
               arithmetic: the on-chip share 1 - sigma of the memory path is paid once)
    V(r)     = v_min below the knee, rising linearly to 1 at r = 1
    clock    = the r at which the activity averaged over tau draws the cap (1 if it never does),
               or, when lower, the r at which the activity averaged over tau_fast draws cap_fast
    speed(r) = 1 / (share / r + 1 - share)                               arithmetic throughput

The activities a_* of every measured kernel are the simulator's own: `gcsim calibrate
--power-activity` runs each kernel of power_clock_bench.py through gcsim's Gpu runtime at held
clocks 0.50..1.00 of f_max and prints the activity the runtime charges it (tensor, vector and
HBM time fractions over the kernel's span, and its duration and launch gap). The fit reads that
table (interpolating in the clock) wherever it needs an activity, so the parameters it finds
make the runtime draw the measured power at the measured clock.

Steps, each from its own phase of the measurement (what is fitted where):
  1. idle_w: median power of the idle phase.
  2. clock_bound_share: GEMM throughput over its rested rate against SM clock over max,
     100 ms windows of the gemm phase (least squares on 1/speed - 1 = share (1/r - 1)); not the
     burst phases, whose NVML clock lags the bursts.
     The activity table is then taken at this share (it sets how arithmetic stretches).
  3. hbm_w: the memory phase's steady power above idle over the runtime's HBM activity of the
     1 GiB copy at the phase's clock; with --elementwise FILE (a --set heldout file), its
     elementwise phase (sigmoid, add, mul: the memory-bound kernels of the mixed loop and of
     training) instead, and the copy is held out.
  4. cap_w: the power the driver holds back-to-back GEMMs at (NVML's energy counter over the
     gemm phase's second half), a little under the board's enforced limit; the governor holds
     the averaged power at it.
  5. tensor_w: the power drawn at full clock in the 20 ms bursts (on-time power from the energy
     counter and the duty cycle) over the runtime's GEMM tensor activity at full clock.
  6. min_voltage_ratio (knee fixed at 0.55 of f_max): the runtime's GEMM loop activity (its
     launch gaps included) at the gemm phase's measured clock draws exactly the cap.
  7. time_constant: the governor run over the measured on/off timeline of the 1000 ms/50%
     bursts, each kernel charged the runtime's activity at the clock it starts with, tau on a log
     grid, against the GEMMs' measured throughput over their rested rate in the phase's second
     half (CUDA events; NVML's clock updates only every ~100 ms and misreads bursts that short:
     in 100 ms/50% bursts it reads 1740-1755 MHz while the GEMMs run at 0.977 of their rested
     rate, which needs ~1920 MHz). The SM clock medians are printed beside, for reference.
  7b. the fast limiter (fast_cap_w over cap_w, fast_time_constant): the same replay of the
     100 ms/50%, 100 ms/75% and 20 ms/50% bursts, a grid over ratio 1.00..1.50 and tau_fast
     1..50 ms; then 7 once more with it (the fast limiter also trims the first tens of ms of
     each 1000 ms burst). --fast RATIO:TAU_MS takes both from
     another GPU's fit instead (held out on this one's bursts).
  8. vector_w (only with --vector FILE holding a gemm_fp32 phase: fp32 GEMMs on the CUDA cores):
     the phase's steady power above that file's idle at its measured clock over the runtime's
     vector activity; otherwise the assumed --vector-w is kept. Steps 3 and 8 each take the
     other's value from before it (the copy's or elementwise ops' vector activity and the fp32
     GEMM's HBM activity are ~0.01: under 5 W either way).
  9. hbm_device_share (sigma, only with --roofline FILE, a --set mix file): the back-to-back
     M x 8192 x 8192 GEMMs of ROOFLINE_FIT, each phase's steady power against the model at its
     measured clock (linear in sigma, least squares); steps 5, 6 and 9 repeat until sigma
     settles (W_tensor's 20 ms bursts carry a little HBM traffic). The other M, the decode
     pattern and the layer cycles are held out. Without it sigma stays 1 (the additive model).
Held out (clocks): the mixed loop, the copy with --elementwise, the 100 ms and 20 ms bursts
with --fast, and every phase of the other files (the --elementwise and --vector phases lend only their power). The
20 ms bursts lend their power to step 5; their clock (full) is fitted by nothing.
"""
import argparse
import bisect
import gzip
import json
import math
import os
import statistics
import subprocess
import sys

KNEE = 0.55
# Physical ranges, as models/gpu/power_model.h states them (PowerParams::check); cap as a share
# of the enforced board limit (the driver regulates a little under it).
RANGES = {"idle": (30.0, 250.0), "tensor": (200.0, 2000.0), "vector": (20.0, 800.0),
          "hbm": (20.0, 600.0), "vmin": (0.5, 1.0), "share": (0.2, 1.0), "tau": (0.005, 2.0),
          "fast_ratio": (1.0, 1.5), "tau_fast": (0.001, 0.05), "sigma": (0.15, 1.0),
          "cap_share_of_limit": (0.95, 1.0)}


class RuntimeActivity:
    """The runtime's activity per kernel kind, from `gcsim calibrate --power-activity`."""

    def __init__(self, table):
        self.t = table
        self.clocks = table["clocks"]

    @staticmethod
    def query(gcsim, gpu, share):
        out = subprocess.run([gcsim, "calibrate", "--power-activity", "--gpu", gpu,
                              "--clock-bound-share", repr(share)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("power_fit.py: %s calibrate --power-activity failed: %s" % (gcsim, out.stderr.strip()))
        return RuntimeActivity(json.loads(out.stdout))

    def _at(self, kind, field, r):
        ys = self.t["kernels"][kind][field]
        c = self.clocks
        r = min(c[-1], max(c[0], r))
        i = min(len(c) - 2, max(0, bisect.bisect_right(c, r) - 1))
        w = (r - c[i]) / (c[i + 1] - c[i])
        return ys[i] + (ys[i + 1] - ys[i]) * w

    def duration(self, kind, r):
        """The kernel's duration (s) at clock fraction r, launch latency excluded."""
        return self._at(kind, "duration_s", r)

    def at(self, kind, r):
        """(a_tensor, a_vector, a_hbm, a_unshared) over the kernel's span at clock fraction r."""
        a = tuple(self._at(kind, f, r) for f in ("tensor", "vector", "hbm"))
        return a + ((self._at(kind, "hbm_unshared", r),) if "hbm_unshared" in self.t["kernels"][kind]
                    else (unshared(a),))

    def loop(self, kinds, r):
        """Time-averaged activity of `kinds` run one after another at r, launch gaps included."""
        tot, acc = 0.0, [0.0, 0.0, 0.0, 0.0]
        for k in kinds:
            d = self._at(k, "duration_s", r)
            g = self._at(k, "launch_gap_s", r)
            for j, a in enumerate(self.at(k, r)):
                acc[j] += a * d
            tot += d + g
        return tuple(a / tot for a in acc)


def speed(p, r):
    return 1.0 / (p["share"] / r + 1.0 - p["share"])


def volt(p, r):
    return p["vmin"] if r <= p["knee"] else p["vmin"] + (1 - p["vmin"]) * min(1.0, (r - p["knee"]) / (1 - p["knee"]))


def unshared(a):
    """HBM traffic beside no arithmetic: max(0, a_hbm - min(1, a_t + a_v))."""
    return max(0.0, a[2] - min(1.0, a[0] + a[1]))


def memory_w(p, a):
    """The memory path's power: a = (a_t, a_v, a_hbm[, a_unshared]) (a single kernel's own
    a_unshared when the fourth is missing)."""
    u = a[3] if len(a) > 3 else unshared(a)
    sigma = p.get("sigma", 1.0)
    return p["hbm"] * (sigma * a[2] + (1 - sigma) * u)


def power(p, a, r):
    return p["idle"] + (p["tensor"] * a[0] + p["vector"] * a[1]) * speed(p, r) * volt(p, r) ** 2 + memory_w(p, a)


def cap_clock(p, a, cap=None):
    cap = p["cap"] if cap is None else cap
    if power(p, a, 1.0) <= cap:
        return 1.0
    lo, hi = p["rmin"], 1.0
    if power(p, a, lo) >= cap:
        return lo
    for _ in range(30):  # 1e-9 of f_max
        mid = 0.5 * (lo + hi)
        if power(p, a, mid) > cap:
            hi = mid
        else:
            lo = mid
    return lo


def load(path):
    # The large sample files are stored gzipped (PATH.gz); the commands in the measurements' READMEs
    # name PATH.
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        d = json.load(f)
    cols = d["meta"]["nvml_columns"]
    samples = [dict(zip(cols, r)) for r in d.get("nvml_samples") or []]
    return d, samples, {p["phase"]: p for p in d["phases"]}


def power_limit_w(meta):
    """The enforced board limit nvidia-smi printed before the run (power.limit [W])."""
    try:
        head, row = meta["smi_before"].splitlines()[:2]
        cols = [c.strip() for c in head.split(",")]
        return float(row.split(",")[cols.index("power.limit [W]")].split()[0])
    except (KeyError, ValueError, IndexError):
        return None


def in_phase(samples, name):
    return [x for x in samples if x["phase"] == name]


def energy_power(samples):
    """Mean board power (W) from NVML's total-energy counter over the samples."""
    e = [x for x in samples if x.get("energy_j") is not None]
    return (e[-1]["energy_j"] - e[0]["energy_j"]) / (e[-1]["t_s"] - e[0]["t_s"])


def kernel_spans(phase):
    """(start, end, kind) per kernel of a phase, host seconds, in start order."""
    k = phase["kernels"]
    return sorted((t, t + d * 1e-6, k["kinds"][kk]) for t, d, kk in zip(k["t_s"], k["dur_us"], k["kind"]))


def governed_clock(p, slow, fast):
    """The lower of the slow loop's clock (activity averaged over tau against the cap) and the
    fast one's (averaged over tau_fast against cap_fast; none when cap_fast is 0)."""
    r = cap_clock(p, tuple(slow))
    if p.get("cap_fast"):
        r = min(r, cap_clock(p, tuple(fast), p["cap_fast"]))
    return r


def simulate_clock(p, act, spans, sample_t=()):
    """The governor (clock_governor.cpp) over the measured kernel spans: each kernel charged the
    runtime's activity at the clock it starts with (as gpu.cpp's set_clock and charge do). Returns
    the clock at each sample time and the clock each span started with."""
    ev = []  # (time, order, +1 start / -1 end, span index): ends first at equal times
    for i, (a, b, _) in enumerate(spans):
        ev.append((a, 1, i))
        ev.append((b, 0, i))
    ev.sort()
    charged = {}
    slow, fast, run = [0.0] * 4, [0.0] * 4, [0.0] * 4
    taus = (p["tau"], p.get("tau_fast") or p["tau"])
    out, j, started = [], 0, [1.0] * len(spans)
    t_last = ev[0][0] if ev else 0.0

    def advance(t):  # the exact step response of both first-order filters to constant input
        ks, kf = (math.exp(-max(0.0, t - t_last) / tau) for tau in taus)
        for n in range(4):
            slow[n] = run[n] + (slow[n] - run[n]) * ks
            fast[n] = run[n] + (fast[n] - run[n]) * kf

    for ts in list(sample_t) + [math.inf]:  # the last pass runs the events after every sample
        while j < len(ev) and ev[j][0] <= ts:
            t, is_start, i = ev[j]
            advance(t)
            t_last = max(t_last, t)
            if is_start:
                started[i] = governed_clock(p, slow, fast)
                charged[i] = act.at(spans[i][2], started[i])
                run = [run[n] + charged[i][n] for n in range(3)]
            else:
                a = charged.pop(i)
                run = [max(0.0, run[n] - a[n]) for n in range(3)]
            run = run[:3] + [unshared(run)]  # of the sums (clock_governor.cpp)
            j += 1
        if ts == math.inf:
            break
        advance(ts)
        t_last = max(t_last, ts)
        out.append(governed_clock(p, slow, fast))
    return out, started


def busy_samples(samples, spans, second_half=True):
    """Samples taken while a kernel ran (the clock the work saw)."""
    starts = [a for a, _, _ in spans]
    s = samples[len(samples) // 2:] if second_half else samples
    out = []
    for x in s:
        i = bisect.bisect_right(starts, x["t_s"]) - 1
        if i >= 0 and spans[i][0] <= x["t_s"] <= spans[i][1] + 0.002:
            out.append(x)
    return out


def phase_clock(p, act, phase, samples, max_mhz):
    """Measured and governed median SM clock while kernels run (second half of the phase)."""
    spans = kernel_spans(phase)
    s = busy_samples(in_phase(samples, phase["phase"]), spans)
    if not s:
        return None
    pred, _ = simulate_clock(p, act, spans, [x["t_s"] for x in s])
    return statistics.median(x["sm_mhz"] for x in s), statistics.median(pred) * max_mhz


def phase_speed(p, act, phase, rested_us):
    """GEMM throughput over the rested rate in a phase's second half, measured (the file's
    rested GEMM time over the measured ones) and governed (the runtime's GEMM time at full clock
    over that at the clock each GEMM started with): what the clock model changes in a
    simulation, read from CUDA events rather than from NVML's clock, which updates every ~100 ms
    and so misreads bursts of that length. None without GEMMs."""
    spans = kernel_spans(phase)
    _, started = simulate_clock(p, act, spans)
    idx = [i for i, sp in enumerate(spans) if sp[2] == "gemm"]
    half = idx[len(idx) // 2:]
    if not half:
        return None
    measured = len(half) * rested_us * 1e-6 / sum(spans[i][1] - spans[i][0] for i in half)
    full = act.duration("gemm", 1.0)
    return measured, len(half) * full / sum(act.duration("gemm", started[i]) for i in half)


def idle_power(samples):
    """Median power (W) of a file's idle phase (instant field where the driver has it)."""
    return statistics.median(x["power_instant_w"] or x["power_w"] for x in in_phase(samples, "idle"))


def steady(samples, name, max_mhz):
    """(clock fraction, mean power W) over the second half of a back-to-back phase."""
    g = in_phase(samples, name)
    half = g[len(g) // 2:]
    return statistics.median(x["sm_mhz"] for x in half) / max_mhz, energy_power(half)


SLOW_BURSTS = ("burst_1000ms_50%",)
FAST_BURSTS = ("burst_100ms_50%", "burst_100ms_75%", "burst_20ms_50%")
FIT_PHASES = ("idle", "gemm", "memory", "burst_20ms_50%") + SLOW_BURSTS
TAU_GRID = [0.005 * (400 ** (i / 79)) for i in range(80)]                # 5 ms .. 2 s
FAST_TAU_GRID = [0.001 * (50 ** (i / 17)) for i in range(18)]           # 1 .. 50 ms
FAST_RATIO_GRID = [1.0 + 0.02 * i for i in range(26)]                    # 1.00 .. 1.50


def rested_us(phases):
    """The file's rested GEMM time (us): the median of the gemm phase's first 20 kernels."""
    return phases["gemm"]["rates"]["gemm"]["rested_us"]


def burst_error(p, act, phases, names):
    """Mean |governed / measured - 1| of the phases' GEMM throughput (phase_speed)."""
    errs = []
    for name in names:
        m, pr = phase_speed(p, act, phases[name], rested_us(phases))
        errs.append(abs(pr / m - 1))
    return sum(errs) / len(errs)


def fit_time_constants(base, act, phases, fast):
    """Step 7 (tau on the slow bursts) and, unless `fast` (ratio, tau_fast) is given, 7b (the
    fast limiter on the short bursts) and 7 again with it."""
    if fast:
        base["cap_fast"], base["tau_fast"] = base["cap"] * fast[0], fast[1]
    else:
        base["cap_fast"] = 0.0
    def fit_slow():
        errs = []
        for tau in TAU_GRID:
            base["tau"] = tau
            errs.append((burst_error(base, act, phases, SLOW_BURSTS), tau))
        e, base["tau"] = min(errs)
        return e

    e_slow = fit_slow()
    if fast:
        return e_slow, None
    errs = []
    for tf in FAST_TAU_GRID:
        for ratio in FAST_RATIO_GRID:
            base["cap_fast"], base["tau_fast"] = base["cap"] * ratio, tf
            errs.append((burst_error(base, act, phases, FAST_BURSTS), ratio, tf))
    e_fast, ratio, tf = min(errs)
    base["cap_fast"], base["tau_fast"] = base["cap"] * ratio, tf
    return fit_slow(), e_fast


ROOFLINE_FIT = ("gemm_m8", "gemm_m64", "gemm_m512", "gemm_m8192")  # step 9; the other M held out


def roofline_phases(path):
    """(samples, idle W, {phase name: phase}) of a --set mix file's gemm_m* phases."""
    _, samples, phases = load(path)
    return samples, idle_power(samples), {n: ph for n, ph in phases.items() if n.startswith("gemm_m")}


def busy_activity(act, name, r, busy):
    """The kernel's activity over its span at r, times the phase's measured busy fraction (the
    host's launches leave gaps below M 512): what the phase averages to."""
    return tuple(x * busy for x in act.at(name, r))


def fit_sigma(p, act, path, max_mhz):
    """Step 9: sigma by least squares on the ROOFLINE_FIT phases' steady power, each at its
    measured clock and busy fraction: P - idle - arithmetic - W_hbm a_unshared
    = sigma W_hbm (a_hbm - a_unshared)."""
    samples, idle, phases = roofline_phases(path)
    num = den = 0.0
    used = []
    for name in ROOFLINE_FIT:
        if name not in phases:
            continue
        r_m, p_m = steady(samples, name, max_mhz)
        a = busy_activity(act, name, r_m, phases[name]["busy_fraction_second_half"])
        arith = (p["tensor"] * a[0] + p["vector"] * a[1]) * speed(p, r_m) * volt(p, r_m) ** 2
        y = p_m - idle - arith - p["hbm"] * a[3]
        x = p["hbm"] * (a[2] - a[3])
        num, den = num + x * y, den + x * x
        used.append(name)
    if not used:
        sys.exit("power_fit.py: %s has none of the roofline phases %s" % (path, ", ".join(ROOFLINE_FIT)))
    return num / den, "%s: %s" % (path, ", ".join(used))


def roofline_check(p, act, path, max_mhz):
    """Per gemm_m* phase: (name, measured clock MHz, governed, measured power W, modelled at the
    measured clock, measured speed, governed): back to back, so the closed form's steady state."""
    samples, idle, phases = roofline_phases(path)
    q = dict(p, idle=idle)
    out = []
    for name, ph in phases.items():
        r_m, p_m = steady(samples, name, max_mhz)
        busy = ph["busy_fraction_second_half"]
        r = 1.0
        for _ in range(100):  # the clock at which the phase's averaged activity draws the cap
            r_new = cap_clock(q, busy_activity(act, name, r, busy))
            if abs(r_new - r) < 1e-9:
                break
            r = r_new
        s_meas = ph["rates"][name]["steady_over_rested"]
        s_pred = act.duration(name, 1.0) / act.duration(name, r)
        out.append((name, r_m * max_mhz, r * max_mhz, p_m, power(q, busy_activity(act, name, r_m, busy), r_m),
                    s_meas, s_pred))
    return out


def fit(path, max_mhz, gcsim, gpu, vector_path, vector_w, elementwise_path=None, fast=None, roofline_path=None,
        sigma=None):
    d, samples, phases = load(path)
    r = {"file": path, "device": d["meta"]["device"]}
    idle = idle_power(samples)
    r["idle_w"] = idle
    # Clock share: GEMM rate over its rested rate against the sampled clock, 100 ms windows of
    # the back-to-back GEMM phase only: NVML's clock updates about every 100 ms and misreads
    # bursts of that length (README), and burst windows pulled the H200's share to 0.477, whose
    # governed GEMM loop then ran 2.3% faster than the same file measured (0.863 vs 0.843).
    rested = phases["gemm"]["rates"]["gemm"]["rested_rate"]
    pairs = []
    for name in ("gemm",):
        for t0, n, rate in phases[name]["rates"]["gemm"]["windows_100ms"]:
            clk = [x["sm_mhz"] for x in samples if t0 <= x["t_s"] < t0 + 0.1]
            if n >= 5 and clk and statistics.median(clk) < 0.97 * max_mhz:
                pairs.append((statistics.median(clk) / max_mhz, rate / rested))
    num = sum((1 / a - 1) * (1 / b - 1) for a, b in pairs)
    den = sum((1 / a - 1) ** 2 for a, _ in pairs)
    share = num / den
    r["clock_bound_share"], r["share_windows"] = share, len(pairs)
    act = RuntimeActivity.query(gcsim, gpu, share)
    r["runtime_activity_from"] = "%s calibrate --power-activity --gpu %s --clock-bound-share %r" % (gcsim, gpu, share)
    # Memory loop: power above idle over the runtime's HBM activity at its clock.
    # (A phase of another file counts its power above that file's own idle phase.)
    mem_samples, mem_phase, mem_kinds, mem_idle = samples, "memory", ["copy"], idle
    if elementwise_path:
        _, mem_samples, eph = load(elementwise_path)
        if "elementwise" not in eph:
            sys.exit("power_fit.py: %s has no elementwise phase" % elementwise_path)
        mem_phase, mem_kinds, mem_idle = "elementwise", ["sigmoid", "add", "mul"], idle_power(mem_samples)
    r_m, p_m = steady(mem_samples, mem_phase, max_mhz)
    a_mem = act.loop(mem_kinds, r_m)
    r["memory_fit_on"] = "%s %s (idle %.1f W)" % (elementwise_path or path, mem_phase, mem_idle)
    r["memory_power_w"], r["memory_clock_mhz"], r["memory_runtime_activity"] = p_m, r_m * max_mhz, a_mem
    hbm = (p_m - mem_idle - vector_w * a_mem[1]) / a_mem[2]
    r["hbm_w"] = hbm
    # The power the driver holds back-to-back GEMMs at: the governor's cap.
    r_g, p_g = steady(samples, "gemm", max_mhz)
    cap = p_g
    r["gemm_clock_mhz"], r["cap_w"] = r_g * max_mhz, cap
    limit = power_limit_w(d["meta"])
    if limit is None:
        sys.exit("power_fit.py: %s: no power.limit in meta.smi_before" % path)
    r["power_limit_w"] = limit
    r["cap_share_of_limit"] = cap / limit
    r["gemm_speed_measured"] = phases["gemm"]["rates"]["gemm"]["steady_over_rested"]
    # 20 ms bursts run at full clock throughout: their on-time power fixes W_tensor.
    b20 = kernel_spans(phases["burst_20ms_50%"])
    duty = sum(b - a for a, b, _ in b20) / (b20[-1][1] - b20[0][0])
    p_avg = energy_power(in_phase(samples, "burst_20ms_50%"))
    p_on = (p_avg - (1 - duty) * idle) / duty
    a_full = act.at("gemm", 1.0)  # over the kernel's span (the duty cycle counts its gaps)
    r["burst20_duty"], r["burst20_power_w"], r["gemm_full_clock_power_w"] = duty, p_avg, p_on
    r["gemm_runtime_activity_full_clock"] = a_full
    base = {"idle": idle, "hbm": hbm, "tensor": 0.0, "vector": vector_w, "share": share, "knee": KNEE,
            "rmin": 0.5, "cap": cap, "vmin": 1.0, "sigma": 1.0}
    a_g = act.loop(["gemm"], r_g)
    r["gemm_runtime_activity"] = a_g

    def tensor_and_voltage():
        """Steps 5 and 6 at the current sigma."""
        base["tensor"] = (p_on - idle - memory_w(base, a_full)) / a_full[0]
        v_g = math.sqrt((cap - idle - memory_w(base, a_g)) / (a_g[0] * base["tensor"] * speed(base, r_g)))
        rise = min(1.0, max(0.0, (r_g - KNEE) / (1 - KNEE)))
        base["vmin"] = (v_g - rise) / (1 - rise)
        return v_g

    if sigma is not None:
        base["sigma"], r["sigma_fit_on"] = sigma, "given (--sigma)"
    v_g = tensor_and_voltage()
    if roofline_path and sigma is None:
        for _ in range(20):  # sigma, then W_tensor and V_min again, until sigma settles
            before = base["sigma"]
            base["sigma"], r["sigma_fit_on"] = fit_sigma(base, act, roofline_path, max_mhz)
            v_g = tensor_and_voltage()
            if abs(base["sigma"] - before) < 1e-6:
                break
    r["hbm_device_share"] = base["sigma"]
    r["tensor_w"] = base["tensor"]
    r["min_voltage_ratio"], r["voltage_at_gemm_clock"] = base["vmin"], v_g
    # Time constants: the slow loop on the long bursts, the fast one on the short bursts.
    e_slow, e_fast = fit_time_constants(base, act, phases, fast)
    r["time_constant_s"], r["time_constant_fit_error"] = base["tau"], e_slow
    r["fast_cap_w"], r["fast_time_constant_s"] = base["cap_fast"], base["tau_fast"]
    r["fast_ratio"] = base["cap_fast"] / cap
    r["fast_from"] = "--fast %g:%g" % (fast[0], fast[1] * 1e3) if fast else "fitted on %s" % ", ".join(FAST_BURSTS)
    r["fast_fit_error"] = e_fast
    # CUDA-core arithmetic: fp32 GEMMs' steady power at their clock over the runtime's activity.
    r["vector_w_from"] = "assumed (--vector-w)"
    if vector_path:
        vd, vs, vph = load(vector_path)
        if "gemm_fp32" in vph:
            r_v, p_v = steady(vs, "gemm_fp32", max_mhz)
            a_v = act.loop(["gemm_fp32"], r_v)
            base["vector"] = (p_v - idle_power(vs) - memory_w(base, a_v) -
                              base["tensor"] * a_v[0] * speed(base, r_v) * volt(base, r_v) ** 2) / (
                a_v[1] * speed(base, r_v) * volt(base, r_v) ** 2)
            r["vector_w_from"] = "%s gemm_fp32: %.0f W at %.0f MHz, runtime activity %s" % (
                vector_path, p_v, r_v * max_mhz, tuple(round(x, 4) for x in a_v))
    r["vector_w"] = base["vector"]
    r["params"] = base
    checked = dict(base, cap_share_of_limit=r["cap_share_of_limit"], fast_ratio=r["fast_ratio"])
    r["out_of_range"] = [k for k, (lo, hi) in RANGES.items() if not lo <= checked[k] <= hi]
    if not base["tau_fast"] < base["tau"]:
        r["out_of_range"].append("tau_fast (not below tau)")
    return r, act


def check(path, params, act, max_mhz):
    """Per phase: (name, measured clock, governed clock, measured GEMM speed or None, governed)."""
    d, samples, phases = load(path)
    out = []
    for name, ph in phases.items():
        res = phase_clock(params, act, ph, samples, max_mhz)
        if res:
            sp = phase_speed(params, act, ph, rested_us(phases)) if "gemm" in ph["rates"] else None
            out.append((name, res[0], res[1]) + (sp or (None, None)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--max-mhz", type=float, default=1980.0)
    ap.add_argument("--gcsim", default="build/gcsim", help="gcsim binary (its runtime's activities)")
    ap.add_argument("--gpu", required=True, help="gcsim preset of the measured GPU (h100-sxm, h200-sxm)")
    ap.add_argument("--vector", help="power_clock_bench.py --set heldout file with a gemm_fp32 phase")
    ap.add_argument("--vector-w", type=float, default=300.0, help="W_vector when --vector is not given")
    ap.add_argument("--elementwise", help="--set heldout file whose elementwise phase fits hbm_w (copy held out)")
    ap.add_argument("--fast", help="RATIO:TAU_MS: the fast limiter from another GPU's fit (not fitted here)")
    ap.add_argument("--roofline", help="--set mix file whose gemm_m* phases fit hbm_device_share (step 9)")
    ap.add_argument("--sigma", type=float, help="hbm_device_share from another GPU's fit (not fitted here)")
    args = ap.parse_args()
    fast = None
    if args.fast:
        try:
            ratio, tau_ms = (float(x) for x in args.fast.split(":"))
        except ValueError:
            sys.exit("power_fit.py: --fast takes RATIO:TAU_MS (e.g. 1.24:3.2), not %r" % args.fast)
        fast = (ratio, tau_ms * 1e-3)
    r, act = fit(args.files[0], args.max_mhz, args.gcsim, args.gpu, args.vector, args.vector_w, args.elementwise,
                 fast, args.roofline, args.sigma)
    print(json.dumps({k: v for k, v in r.items() if k != "params"}, indent=1))
    print("\n| file | phase | measured SM clock (MHz) | governor (MHz) | error | GEMM speed measured | "
          "governed | error | used for |")
    print("|---|---|---|---|---|---|---|---|---|")
    for i, f in enumerate(args.files):
        for name, meas, pred, s_meas, s_pred in check(f, r["params"], act, args.max_mhz):
            fitted = FIT_PHASES if not args.elementwise else tuple(n for n in FIT_PHASES if n != "memory")
            fitted += () if fast else FAST_BURSTS
            used = "fit" if i == 0 and name in fitted else "held out"
            if (f == args.elementwise and name == "elementwise") or (f == args.vector and name == "gemm_fp32"):
                used = "fit"
            speed = ("%.3f | %.3f | %+.1f%%" % (s_meas, s_pred, 100 * (s_pred / s_meas - 1)) if s_meas
                     else " | | ")
            print("| %s | %s | %.0f | %.0f | %+.1f%% | %s | %s |" % (f, name, meas, pred, 100 * (pred / meas - 1),
                                                                    speed, used))
    if args.roofline:
        print("\n| phase (%s) | measured SM clock | governor | measured power (W) | model at that clock | "
              "GEMM speed measured | governed | used for |" % args.roofline)
        print("|---|---|---|---|---|---|---|---|")
        for name, c_m, c_p, p_m, p_p, s_m, s_p in roofline_check(r["params"], act, args.roofline, args.max_mhz):
            print("| %s | %.0f | %.0f (%+.1f%%) | %.0f | %.0f (%+.1f%%) | %.3f | %.3f (%+.1f%%) | %s |" % (
                name, c_m, c_p, 100 * (c_p / c_m - 1), p_m, p_p, 100 * (p_p / p_m - 1), s_m, s_p,
                100 * (s_p / s_m - 1), "fit" if name in ROOFLINE_FIT and args.sigma is None else "held out"))
    if r["out_of_range"]:
        print("power_fit.py: outside the physical range: %s" % ", ".join(r["out_of_range"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
