#!/usr/bin/env python3
"""gcsim's GEMM loops against decode_gemm_clock.py's (one H200, 2026-11-28): for each measured case, a
graph workload of the same GEMM back to back for ~0.6 s on the h200-sxm preset (its profile), run with
--trace; prints the measured loop (us per call, clock, power) beside gcsim's first and last call and
the SM clock its power model ends at. Run from anywhere; writes l.yaml and o/ in the current folder.

    python3 calibration/fit/decode_gemm_clock_compare.py [GCSIM]
"""
import json, subprocess, os, sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
GCSIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'build', 'gcsim')
d = json.load(open(os.path.join(ROOT, 'calibration/measurements/h200-x1/decode_gemm_clock_2026-11-28/decode_gemm_clock.json')))
out = []
for r in d['gemms']:
    if 'time_us' not in r: continue
    iters = max(200, int(0.6e6 / r['time_us']))
    ops = ["    - {name: g%d, rank: 0, op: gemm, m: %d, n: %d, k: %d, dtype: bf16}" % (i, r['m'], r['n'], r['k']) for i in range(iters)]
    open('l.yaml', 'w').write("cluster: {gpu: h200-sxm, nodes: 1, gpus_per_node: 1}\nworkload:\n  kind: graph\n  ops:\n" + "\n".join(ops) + "\n")
    subprocess.run([GCSIM, 'run', 'l.yaml', '-q', '-o', 'o', '--trace'], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = json.load(open('o/summary.json'))
    o = s['ops']
    last = o[-1]['end_s'] - o[-2]['end_s']
    first = o[1]['end_s'] - o[0]['end_s']
    t = json.load(open('o/trace.json'))
    ev = t['traceEvents'] if isinstance(t, dict) else t
    clocks = [e for e in ev if e.get('ph') == 'C' and 'clock' in e.get('name', '').lower()]
    clk = None
    if clocks:
        a = clocks[-1].get('args', {})
        clk = list(a.values())[0] if a else None
    out.append((r['tp'], r['gemm'], r['m'], r['time_us'], r.get('sm_clock_mhz'), r.get('power_w'), first * 1e6, last * 1e6, clk))
    print("tp%d %-7s m%4d: measured %7.2f us %5.0f MHz %4.0f W | gcsim rested %7.2f steady %7.2f us (%+5.1f%%) clock %s" % (
        r['tp'], r['gemm'], r['m'], r['time_us'], r.get('sm_clock_mhz', 0), r.get('power_w', 0), first * 1e6, last * 1e6,
        100 * (last * 1e6 / r['time_us'] - 1), clk), flush=True)
