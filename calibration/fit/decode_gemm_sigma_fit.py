#!/usr/bin/env python3
"""hbm_device_share (sigma, models/gpu/power_model.h) fitted on the H200's decode GEMM loops
(calibration/measurements/h200-x1/decode_gemm_clock_2026-11-28: Llama-2-70B's TP4 and TP2 decode
GEMMs, 1-256 tokens, each a 0.5 s back-to-back loop with nvidia-smi's SM clock sampled).

A decode GEMM streams its weights from HBM while its tensor pipes run: sigma is the share of the
memory path's power (W_mem, fitted on copies) that such traffic pays beside arithmetic. The additive
model (sigma 1) charges both in full and caps these loops at 990-1090 MHz from 64 tokens where the
GPU runs 1270-1980.

Each loop is a graph workload of the same GEMM back to back for ~0.6 s on the preset (its profile),
with power.hbm_device_share (and, with --tensor-w, power.tensor_w) overridden; gcsim's clock is the
time-weighted mean of its SM clock counter over the loop's second half (the measured one is
nvidia-smi's mean over the loop less its first 0.1 s). Loops the host paced (the measured us per
call over 1.1x the profiled kernels': the QKV and output projections at small batch) are left out:
their GPU idles between kernels and gcsim's loop does not.

Fit: sigma by bisection in [0.15, 1] so the fitted loops' (TP 4) mean signed clock error is zero
(the error falls as sigma rises: more memory power, lower clock); the TP 2 loops are held out, and
so is every loop of a second H200 (step_power_clock_2026-11-28: TP4 gate+up and down, TP2 gate+up,
1-256 tokens, 3 s each).

    python3 calibration/fit/decode_gemm_sigma_fit.py [--gcsim BUILD/gcsim] [--tensor-w W]
        [--sigma S (evaluate only)] [--jobs 2]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
from multiprocessing import Pool

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
DATA = os.path.join(ROOT, 'calibration/measurements/h200-x1/decode_gemm_clock_2026-11-28/decode_gemm_clock.json')
# A second H200 (another chip), every loop held out: 3 s loops, NVML's clock over the second half.
DATA_B = os.path.join(ROOT, 'calibration/measurements/h200-x1/step_power_clock_2026-11-28/step_power_clock.json')
FIT_TP, HELD_OUT_TP = 4, 2
CHIP_B = 'B'
SIGMA_RANGE = (0.15, 1.0)  # power_model.h, kHbmDeviceShareRange
HOST_PACED = 1.1           # loop us per call over the profiled kernels' sum


def kernels_us(case):
    """Median over the profiled calls of the kernels' summed duration (us)."""
    calls = case.get('calls') or []
    sums = [sum(k.get('dur_us', 0.0) for k in c) for c in calls if isinstance(c, list)]
    return statistics.median(sums) if sums else None


def cases():
    out = [dict(c, chip=CHIP_B) for c in json.load(open(DATA_B))['gemm'] if 'time_us' in c]
    for c in json.load(open(DATA))['gemms']:
        if 'time_us' not in c:
            continue
        k = kernels_us(c)
        if k is not None and c['time_us'] > HOST_PACED * k:
            continue
        out.append(c)
    return out


def second_half_mhz(trace):
    ev = trace['traceEvents'] if isinstance(trace, dict) else trace
    clk = sorted((e['ts'], list(e['args'].values())[0]) for e in ev
                 if e.get('ph') == 'C' and e.get('name', '').startswith('SM clock'))
    end = max(e['ts'] + e.get('dur', 0) for e in ev if e.get('ph') == 'X')
    half = end / 2
    total = weighted = 0.0
    for i, (ts, mhz) in enumerate(clk):
        nxt = clk[i + 1][0] if i + 1 < len(clk) else end
        lo, hi = max(ts, half), min(nxt, end)
        if hi > lo:
            total += hi - lo
            weighted += mhz * (hi - lo)
    return weighted / total if total > 0 else clk[-1][1]


def run_case(job):
    gcsim, gpu, case = job
    with tempfile.TemporaryDirectory() as wd:
        iters = max(200, int(0.6e6 / case['time_us']))
        ops = ["    - {name: g%d, rank: 0, op: gemm, m: %d, n: %d, k: %d, dtype: bf16}"
               % (i, case['m'], case['n'], case['k']) for i in range(iters)]
        cfg = os.path.join(wd, 'loop.yaml')
        with open(cfg, 'w') as f:
            f.write("cluster: {gpu: %s, nodes: 1, gpus_per_node: 1, clocks: model}\n"
                    "workload:\n  kind: graph\n  ops:\n" % gpu + "\n".join(ops) + "\n")
        out = os.path.join(wd, 'o')
        subprocess.run([gcsim, 'run', cfg, '-q', '-o', out, '--trace'], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ops_done = json.load(open(os.path.join(out, 'summary.json')))['ops']
        last_us = (ops_done[-1]['end_s'] - ops_done[-2]['end_s']) * 1e6
        mhz = second_half_mhz(json.load(open(os.path.join(out, 'trace.json'))))
    return case, last_us, mhz


def evaluate(gcsim, sigma, tensor_w, jobs, tps):
    power = "hbm_device_share: %.6g" % sigma + (", tensor_w: %.6g" % tensor_w if tensor_w else "")
    gpu = "{preset: h200-sxm, power: {%s}}" % power
    todo = [(gcsim, gpu, c) for c in cases() if (c.get('chip'), c['tp']) in tps]
    with Pool(jobs) as pool:
        return pool.map(run_case, todo)


GROUPS = [((None, FIT_TP), 'TP 4, fitted'), ((None, HELD_OUT_TP), 'TP 2, held out'),
          ((CHIP_B, 4), 'second H200, TP 4, held out'), ((CHIP_B, 2), 'second H200, TP 2, held out')]


def clock_errors(rows, group):
    return [100.0 * (mhz / c['sm_clock_mhz'] - 1.0) for c, _, mhz in rows if (c.get('chip'), c['tp']) == group]


def report(rows):
    print("| GPU | TP | GEMM | tokens | measured us | clock MHz | gcsim sustained us | error | gcsim MHz | error |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for c, us, mhz in rows:
        print("| %s | %d | %s | %d | %.1f | %.0f | %.1f | %+.1f%% | %.0f | %+.1f%% |" % (
            'second' if c.get('chip') else 'first', c['tp'], c['gemm'], c['m'], c['time_us'], c['sm_clock_mhz'], us,
            100 * (us / c['time_us'] - 1), mhz, 100 * (mhz / c['sm_clock_mhz'] - 1)))
    for group, role in GROUPS:
        t = [100 * (us / c['time_us'] - 1) for c, us, _ in rows if (c.get('chip'), c['tp']) == group]
        k = clock_errors(rows, group)
        print("%s (%d loops): time mean |error| %.1f%% (max %.1f%%), clock mean |error| %.1f%% "
              "(max %.1f%%), clock bias %+.1f%%" % (role, len(t), statistics.mean(map(abs, t)),
              max(map(abs, t)), statistics.mean(map(abs, k)), max(map(abs, k)), statistics.mean(k)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--gcsim', default=os.path.join(ROOT, 'build', 'gcsim'))
    ap.add_argument('--tensor-w', type=float, help='power.tensor_w to run with (default: the preset\'s)')
    ap.add_argument('--sigma', type=float, help='evaluate this sigma only (no fit)')
    ap.add_argument('--jobs', type=int, default=2)
    a = ap.parse_args()
    sigma = a.sigma
    if sigma is None:
        lo, hi = SIGMA_RANGE
        for _ in range(7):  # to ~0.007 of sigma: below the clock's sampling noise
            mid = 0.5 * (lo + hi)
            bias = statistics.mean(clock_errors(evaluate(a.gcsim, mid, a.tensor_w, a.jobs, {(None, FIT_TP)}),
                                                (None, FIT_TP)))
            print("sigma %.4f: TP %d clock bias %+.2f%%" % (mid, FIT_TP, bias), file=sys.stderr, flush=True)
            lo, hi = (mid, hi) if bias > 0 else (lo, mid)
        sigma = round(0.5 * (lo + hi), 2)
    print("hbm_device_share %.2f%s" % (sigma, " (given)" if a.sigma is not None else
                                        " (fitted on TP %d, zero mean clock bias)" % FIT_TP))
    report(evaluate(a.gcsim, sigma, a.tensor_w, a.jobs, {g for g, _ in GROUPS}))


if __name__ == '__main__':
    main()
