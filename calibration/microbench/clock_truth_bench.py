#!/usr/bin/env python3
"""The SM clock the kernels really get, against NVML's clocks.sm, and each kernel's time against it
(issue 16, clocks from a power model).

Why: gcsim's power model was fitted to NVML's SM clock (100 ms / 10 ms samples) and, to match the
GEMMs' throughput at the capped clock NVML reports (1350 MHz, 0.853 of the rested rate), stretches
only 0.371 of a GEMM's time with 1/clock. But between the four chips of one DDP step the forward's
GEMMs differ by as much as their loaded clocks (2.9% for 2.7%: ddp_drift_2026-11-27), which a
share of 0.37 cannot give. Either NVML's clock is not the clock the SMs run at under the cap, or
a GEMM's time does not follow the clock the way one share says. This measures both directly.

How: `cuda/clock_probe.cu` keeps one thread on one SM writing (globaltimer ns, clock64 cycles)
every --interval-us; a one-thread marker kernel after every workload kernel writes globaltimer on
the workload's stream. So every kernel's duration and the SM cycles per ns over exactly that
kernel come out on one time base (the effective SM clock = cycles / ns). NVML's SM clock and
instant power are sampled in a thread every 10 ms (host time, mapped to globaltimer through a
marker bracketed by host stamps). GPU settings are never changed.

Phases (each after --idle-s with nothing running, so each starts from rest):
  probe_only     the probe alone (the clock with nothing drawing power)
  gemm           bf16 8192^3 back to back (tensor-bound; the loop gcsim's power model was fitted on)
  model_gemms    the DP4 step's layer GEMMs at 8192 tokens, hidden 4096, ffn 11008, in a
                 forward layer's order (QKV 4096->12288, out 4096->4096, gate+up 4096->22016,
                 down 11008->4096), back to back
  attention      PyTorch's default SDPA (cuDNN), causal, batch 2, 32 heads, 4096 tokens, head 128
  elementwise    bf16 add over 512 MiB tensors (HBM-bound)
  mixed          one 8192^3 GEMM then sigmoid, add, mul over 512 MiB, repeated
  gapN           one 8192^3 GEMM then torch.cuda._sleep of N us of cycles at 1980 MHz (one thread
                 spinning, the GPU otherwise idle; longer at a lower clock), repeated: N 100, 250,
                 500, 1000, as power_clock_bench.py --set gaps (not in the default phases)
  waitN          eight 8192^3 GEMMs then a _sleep of N us (2000, 10000), as
                 power_clock_waits_bench.py's spin waits (not in the default phases)

Run one process per GPU at once (chip-to-chip spread under the same load):
    CUDA_VISIBLE_DEVICES=g python3 clock_truth_bench.py --lib libclock_probe.so --nvml-index g -o g.json
The JSON keeps, per phase, every kernel's (name, start ns from the phase's first mark, duration
ns, SM MHz over it) and NVML's samples on the same time base, plus summaries.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import threading
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

VERSION = "clock_truth_bench 1.2"
MIB = 1 << 20


class Nvml:
    """NVML SM clock and instant power every 10 ms in a thread, host time."""

    def __init__(self, index):
        self.rows = []
        self._stop = False
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.serial = pynvml.nvmlDeviceGetSerial(self.h)
        except Exception as e:  # noqa: BLE001
            print("no NVML:", e, flush=True)
            self.nv = None
            self.serial = None
            return
        self.instant = getattr(self.nv, "NVML_FI_DEV_POWER_INSTANT", 186)
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def _loop(self):
        nv, h = self.nv, self.h
        while not self._stop:
            try:
                sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
                v = nv.nvmlDeviceGetFieldValues(h, [self.instant])[0]
                inst = v.value.uiVal / 1000.0 if v.nvmlReturn == 0 else None
                reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
                self.rows.append((time.time(), sm, inst, int(reasons)))
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.01)

    def stop(self):
        self._stop = True


class Probe:
    def __init__(self, lib_path, interval_us, max_s):
        self.lib = ctypes.CDLL(lib_path)
        for f in (self.lib.probe_launch, self.lib.mark_launch, self.lib.stop_launch):
            f.restype = ctypes.c_int
        self.interval_ns = int(interval_us * 1000)
        self.max_samples = int(max_s * 1e9 / self.interval_ns) + 16
        self.buf = torch.zeros(2 + 2 * self.max_samples, dtype=torch.int64, device="cuda")
        self.stop = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.marks = torch.zeros(400_000, dtype=torch.int64, device="cuda")
        self.pstream = torch.cuda.Stream(priority=-1)
        self.nmarks = 0

    def start(self):
        self.stop.zero_()
        self.nmarks = 0
        torch.cuda.synchronize()
        rc = self.lib.probe_launch(ctypes.c_void_p(self.buf.data_ptr()), self.max_samples,
                                   ctypes.c_ulonglong(self.interval_ns), ctypes.c_void_p(self.stop.data_ptr()),
                                   ctypes.c_void_p(self.pstream.cuda_stream))
        assert rc == 0, rc

    def mark(self):
        if self.nmarks >= self.marks.numel():
            raise RuntimeError("too many marks")
        rc = self.lib.mark_launch(ctypes.c_void_p(self.marks.data_ptr()), self.nmarks,
                                  ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        assert rc == 0, rc
        self.nmarks += 1
        return self.nmarks - 1

    def finish(self):
        rc = self.lib.stop_launch(ctypes.c_void_p(self.stop.data_ptr()),
                                  ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        assert rc == 0, rc
        torch.cuda.synchronize()
        b = self.buf.cpu().tolist()
        n = int(b[0])
        ns = b[2:2 + 2 * n:2]
        cyc = b[3:3 + 2 * n:2]
        return ns, cyc, self.marks[:self.nmarks].cpu().tolist()


def cycles_at(ns, cyc, t):
    """Linear interpolation of the probe's cycle count at globaltimer t (None outside)."""
    import bisect
    i = bisect.bisect_left(ns, t)
    if i <= 0 or i >= len(ns):
        return None
    t0, t1 = ns[i - 1], ns[i]
    return cyc[i - 1] + (cyc[i] - cyc[i - 1]) * (t - t0) / max(1, t1 - t0)


def host_to_global(probe):
    """globaltimer - host ns offset: a marker bracketed by host stamps on an idle GPU."""
    best = None
    for _ in range(20):
        torch.cuda.synchronize()
        a = time.time_ns()
        i = probe.mark()
        torch.cuda.synchronize()
        b = time.time_ns()
        g = int(probe.marks[i].item())
        if best is None or b - a < best[0]:
            best = (b - a, g - (a + b) // 2)
    probe.nmarks = 0
    return best[1], best[0]


def workloads():
    dev, bf = torch.device("cuda"), torch.bfloat16
    out = {}
    a = torch.randn(8192, 8192, device=dev, dtype=bf)
    b = torch.randn(8192, 8192, device=dev, dtype=bf)
    out["gemm"] = [("gemm8192", 2 * 8192 ** 3, lambda: a @ b)]
    x = torch.randn(8192, 4096, device=dev, dtype=bf)
    w_qkv = torch.randn(4096, 12288, device=dev, dtype=bf)
    w_o = torch.randn(4096, 4096, device=dev, dtype=bf)
    w_up = torch.randn(4096, 22016, device=dev, dtype=bf)
    h = torch.randn(8192, 11008, device=dev, dtype=bf)
    w_dn = torch.randn(11008, 4096, device=dev, dtype=bf)
    out["model_gemms"] = [("qkv", 2 * 8192 * 4096 * 12288, lambda: x @ w_qkv),
                          ("out", 2 * 8192 * 4096 * 4096, lambda: x @ w_o),
                          ("up", 2 * 8192 * 4096 * 22016, lambda: x @ w_up),
                          ("down", 2 * 8192 * 11008 * 4096, lambda: h @ w_dn)]
    q, k, v = (torch.randn(2, 32, 4096, 128, device=dev, dtype=bf) for _ in range(3))
    out["attention"] = [("sdpa_fwd", 0, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))]
    e1 = torch.randn(256 * MIB, device=dev, dtype=bf)
    e2 = torch.randn(256 * MIB, device=dev, dtype=bf)
    out["elementwise"] = [("add", 3 * 512 * MIB, lambda: e1 + e2)]
    out["mixed"] = [("gemm8192", 2 * 8192 ** 3, lambda: a @ b),
                    ("sigmoid", 2 * 512 * MIB, lambda: torch.sigmoid(e1)),
                    ("add", 3 * 512 * MIB, lambda: e1 + e2),
                    ("mul", 3 * 512 * MIB, lambda: e1 * e2)]
    def spin(us):
        cycles = int(us * 1980)  # cycles at f_max: the gap lasts longer where the clock is lower
        return lambda: torch.cuda._sleep(cycles)
    for us in (100, 250, 500, 1000):
        out["gap%d" % us] = [("gemm8192", 2 * 8192 ** 3, lambda: a @ b), ("sleep", 0, spin(us))]
    for us in (2000, 10000):
        out["wait%d" % us] = [("gemm8192", 2 * 8192 ** 3, lambda: a @ b)] * 8 + [("sleep", 0, spin(us))]
    return out


def run_phase(probe, kernels, seconds):
    """Kernels back to back with a marker after each; the host stays at most ~64 marks ahead."""
    probe.start()
    first = probe.mark()
    events = []
    names = []
    t_end = time.time() + seconds
    while time.time() < t_end:
        for name, _, fn in kernels:
            fn()
            probe.mark()
            names.append(name)
        ev = torch.cuda.Event()
        ev.record()
        events.append(ev)
        if len(events) > 16:
            events.pop(0).synchronize()
    return first, names


def summarize(rows, key):
    v = [r[key] for r in rows]
    return {"n": len(v), "mean": statistics.fmean(v), "median": statistics.median(v)} if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--lib", required=True, help="libclock_probe.so")
    ap.add_argument("--nvml-index", type=int, default=0)
    ap.add_argument("--interval-us", type=float, default=50.0)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--idle-s", type=float, default=2.0)
    ap.add_argument("--phases", default="probe_only,gemm,model_gemms,attention,elementwise,mixed")
    args = ap.parse_args()
    t0 = time.time()
    nv = Nvml(args.nvml_index)
    probe = Probe(args.lib, args.interval_us, args.seconds + 3.0)
    work = workloads()
    # Warm-up: cuBLAS/cuDNN plans, the allocator, and every kernel's module. Under CUDA's lazy
    # module loading a kernel's first launch loads its module, which waits for the running probe
    # kernel to end: 1.1's gap100 phase (the first _sleep) stalled until the probe's buffer filled.
    for kernels in work.values():
        for _, _, fn in kernels:
            fn()
    torch.cuda.synchronize()
    offset_ns, bracket_ns = host_to_global(probe)
    result = {"meta": bench_common.provenance(__file__, VERSION, nvml_index=args.nvml_index,
                                              gpu_serial=nv.serial, interval_us=args.interval_us,
                                              host_to_global_offset_ns=offset_ns,
                                              host_to_global_bracket_ns=bracket_ns,
                                              nvidia_smi_before=bench_common.clocks()),
              "phases": {}}
    for phase in args.phases.split(","):
        time.sleep(args.idle_s)
        h0 = time.time()
        if phase == "probe_only":
            probe.start()
            probe.mark()
            time.sleep(1.0)
            probe.mark()
            names = ["idle"]
        else:
            _, names = run_phase(probe, work[phase], args.seconds)
        h1 = time.time()
        ns, cyc, marks = probe.finish()
        base = marks[0]
        flops = {n: f for n, f, _ in work.get(phase, [])}
        rows = []
        for i, name in enumerate(names):
            a, b = marks[i], marks[i + 1]
            ca, cb = cycles_at(ns, cyc, a), cycles_at(ns, cyc, b)
            mhz = (cb - ca) / (b - a) * 1e3 if ca is not None and cb is not None and b > a else None
            rows.append([name, a - base, b - a, mhz])
        # NVML rows on the same base: host ns + offset - base
        nvml = [[int((t * 1e9) + offset_ns - base), sm, inst, rs] for t, sm, inst, rs in nv.rows
                if h0 - 0.2 <= t <= h1 + 0.2]
        per = {}
        for name in dict.fromkeys(names):
            rr = [r for r in rows if r[0] == name and r[3] is not None]
            half = rr[len(rr) // 2:]
            if not rr:
                continue
            per[name] = {"count": len(rr), "work": flops.get(name),
                         "first_ns": rr[0][2], "first_mhz": rr[0][3],
                         "second_half_mean_ns": statistics.fmean(r[2] for r in half),
                         "second_half_mean_mhz": statistics.fmean(r[3] for r in half),
                         "min_ns": min(r[2] for r in rr)}
        span_mhz = None
        if len(ns) > 2:
            span_mhz = (cyc[-1] - cyc[0]) / (ns[-1] - ns[0]) * 1e3
        result["phases"][phase] = {"kernels": rows, "nvml": nvml, "summary": per,
                                   "probe_samples": len(ns), "probe_span_mhz": span_mhz}
        print("[%6.1fs] %-12s kernels %6d probe %6d samples, span %.0f MHz; %s" % (
            time.time() - t0, phase, len(rows), len(ns), span_mhz or 0,
            "; ".join("%s %.1f us @ %.0f MHz (first %.1f @ %.0f)" % (
                n, s["second_half_mean_ns"] / 1e3, s["second_half_mean_mhz"], s["first_ns"] / 1e3, s["first_mhz"])
                for n, s in per.items())), flush=True)
    nv.stop()
    result["meta"]["nvidia_smi_after"] = bench_common.clocks()
    result["elapsed_s"] = time.time() - t0
    with open(args.out, "w") as f:
        json.dump(result, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
