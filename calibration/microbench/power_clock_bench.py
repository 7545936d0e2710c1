#!/usr/bin/env python3
"""Board power and SM clock under GEMM, memory-bound, mixed and bursty loads (issue 16, power model).

gcsim's clock model (models/gpu/power_model.h) predicts each kernel's board power from its
tensor-core and HBM activity and lowers the SM clock until the power, averaged over a time
constant, stays under the board cap. This script measures what it is fitted to, on GPU 0:

  idle      3 s with nothing running (idle power at full clock)
  gemm      back-to-back bf16 8192^3 GEMMs (tensor-bound)
  memory    back-to-back 1 GiB copies (HBM-bound)
  mixed     one 8192^3 GEMM then three elementwise ops over 512 MiB tensors, repeated
  burst_*   GEMM bursts with host-timed idle gaps: period 1000 ms at 50% (the time constant:
            the clock falls inside each burst), 100 ms at 50% and 75%, 20 ms at 50% (duty-cycle
            dependence: gaps let the averaged power, and so the clock, recover)

--set heldout measures phases the fit never sees (what gcsim must then predict) instead:

  idle, gemm        as above (shorter: the GEMM's steady time sizes the bursts)
  gemm_wide         back-to-back bf16 16384x4096 @ 4096x16384 GEMMs (another shape)
  gemm_fp32         back-to-back fp32 8192^3 GEMMs with TF32 off: CUDA-core FFMA arithmetic,
                    what gcsim's vector activity (W_vector) stands for
  elementwise       sigmoid, add and mul over 512 MiB tensors, repeated (no GEMM): the mixed
                    loop's memory-bound kernels alone, against the copy's power per byte
  mixed_ew6         one 8192^3 GEMM then six elementwise ops (twice the mixed loop's share)
  mixed_ew1         one 8192^3 GEMM then one add (a third of it)
  burst_100ms_25%, burst_300ms_50%, burst_1000ms_50%   bursts of other periods and duties

--set bursts measures how fast the driver's power limiting acts (gcsim's fast limiter,
clock_governor.h) instead: idle, a short gemm phase (sizes the bursts), then GEMM bursts with
periods 20, 50, 100 and 200 ms at duties 25, 50 and 75%, and a decode-like pattern
(decode, 4 s: steps of 96 bf16 256x8192 @ 8192x8192 GEMMs, weight-streaming like a decode step's
linears, every 10 ms with the host idle in between). NVML is sampled as fast as the thread
manages (--nvml-period, 2 ms here).

--set mix measures what a training step's mix of kernels and a GEMM's roofline position do to the
clock (issue 16: the model lets memory-bound kernels recover the clock; decode-like GEMMs that
stream their weights draw less than tensor + HBM power added):

  idle, gemm        as above (short)
  cycle_gemm        one GPT layer's four bf16 GEMMs (h 4096, 8192 tokens: QKV, out, up, down)
                    back to back, attention left out
  cycle_mixed       the same GEMMs with the layer's memory-bound kernels between them, in a
                    forward layer's order (layer norm, QKV, out, residual add, layer norm, up,
                    GELU, down, residual add); every kernel has its own CUDA events, so each
                    kind's steady rate shows which kernels the clock slows
  cycle_mixed_t2048 the same at 2048 tokens (short memory-bound kernels of 16-64 MiB)
  step_s4096_b2     four GPT layers fwd+bwd (tp_step_bench.py's TpLayer, h 4096, flash SDPA,
  step_s2048_b1     batch 2 x 4096 and 1 x 2048 tokens): three single steps each after 1.5 s idle
                    (from rest), then steps back to back (sustained), one event pair per step
  gemm_m{M}         bf16 M x 8192 @ 8192 x 8192 back to back, the weights (two 128 MiB sets,
                    used in turn) streamed from HBM: M = 8 .. 8192 runs from weight-streaming
                    (decode-like) to compute-bound
  decode            the bursts set's decode pattern again (96 M = 256 GEMMs every 10 ms)

--set gaps measures what decides whether a short low-power stretch between GEMMs lets the capped
clock recover (issue 16: the layer cycle's GEMMs ran exactly as slowly with its layer norms, GELU
and adds between them as back to back, where the model let the clock recover): each phase repeats
one bf16 8192^3 GEMM then one filler kernel of about L ms, the filler being

  gap_sleep_L  torch.cuda._sleep: one thread spinning, the GPU otherwise idle (no HBM, no SM work)
  gap_add_L    a bf16 add (HBM-bound with little SM work per byte)
  gap_ln_L     a bf16 layer norm over rows of 4096 (row reductions: SM-issue-heavy)
  gap_gelu_L   a bf16 GELU over rows of 16384 (erf: SM-issue-heavy)

so the GEMMs' steady rate against the gemm phase's tells how much each filler lets the clock
recover, and the filler's own steady / rested rate how much it slows at the capped clock.

Samples: `nvidia-smi --query-gpu=timestamp,power.draw,[power.draw.instant,]power.limit,clocks.sm,
clocks.mem,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader,nounits -lms 50`
in a background process, and, when pynvml imports, NVML in a thread every 10 ms (SM clock, power
usage, instant power field, total energy counter, clock-event reasons). Every kernel is bracketed
by CUDA events whose times are mapped onto the host clock (a reference event recorded on an idle
stream), so each kernel's achieved TFLOP/s or GB/s lines up with the samples. Inputs are
torch.randn; operands (>= 128 MiB each) never fit the 50 MB L2. GPU settings are never changed.

    python3 power_clock_bench.py -o OUT.json [--scale 1.0] [--set fit|heldout|bursts|mix|gaps]

The GPU is torch's device 0; nvidia-smi and NVML (which ignore CUDA_VISIBLE_DEVICES) read the
device whose index CUDA_VISIBLE_DEVICES names first (0 when unset), and the JSON records both
UUIDs so a mismatch shows.

--scale multiplies every phase's length (0.5 for a quick check). The JSON is rewritten after
every phase, so a failure keeps what was measured before it.
"""
import argparse
import datetime
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import traceback

import torch

T0 = time.time()  # every time in the output is seconds since this instant (host clock)
SMI_FIELDS = ["timestamp", "power.draw", "power.draw.instant", "power.limit", "clocks.sm",
              "clocks.mem", "temperature.gpu", "clocks_throttle_reasons.active"]
N = 8192
MIB = 1 << 20
DECODE_M = 256  # tokens of the decode pattern's GEMMs (a batch of decode steps)
LAYER_H, LAYER_TOKENS = 4096, 8192  # --set mix: the h4096 s4096 b2 step's layer
ROOFLINE_M = (8, 32, 64, 128, 256, 512, 1024, 2048, 8192)  # --set mix: rows of the M x 8192 GEMMs
# --set gaps: (filler, target ms at the rested clock) per phase
GAPS = (("sleep", 0.1), ("sleep", 0.25), ("sleep", 0.5), ("sleep", 1.0), ("add", 0.1), ("add", 0.5),
        ("ln", 0.1), ("ln", 0.5), ("gelu", 0.1), ("gelu", 0.5))


def smi_index():
    """nvidia-smi's / NVML's index of torch's device 0: the first CUDA_VISIBLE_DEVICES entry when
    it is a number (nvidia-smi and NVML enumerate every GPU, whatever CUDA_VISIBLE_DEVICES says)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


GPU = smi_index()


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def smi_snapshot():
    q = "name,driver_version,power.limit,clocks.sm,clocks.mem,power.draw,temperature.gpu," \
        "clocks_throttle_reasons.active"
    try:
        r = subprocess.run(["nvidia-smi", "-i", str(GPU), "--query-gpu=" + q, "--format=csv"],
                           capture_output=True, text=True, timeout=20)
        return (r.stdout + r.stderr).strip()
    except Exception as e:  # noqa: BLE001
        return "nvidia-smi failed: %r" % (e,)


def smi_fields():
    """The SMI_FIELDS this nvidia-smi accepts (power.draw.instant is newer than some drivers)."""
    full = list(SMI_FIELDS)
    for fields in (full, [f for f in full if f != "power.draw.instant"]):
        try:
            r = subprocess.run(["nvidia-smi", "-i", str(GPU), "--query-gpu=" + ",".join(fields),
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
            if r.returncode == 0 and "Field" not in r.stdout:
                return fields
        except Exception:  # noqa: BLE001
            return []
    return []


class SmiSampler:
    """nvidia-smi -lms 50 in a background process; each line tagged with the host time it was
    read and the phase running then (nvidia-smi flushes each line; its own timestamp is kept too)."""

    def __init__(self, section):
        self.fields = smi_fields()
        self.rows = []
        self.section = section
        self.err = None
        self.proc = None
        if not self.fields:
            self.err = "nvidia-smi query failed"
            return
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "-i", str(GPU), "--query-gpu=" + ",".join(self.fields),
                 "--format=csv,noheader,nounits", "-lms", "50"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
            self.th = threading.Thread(target=self._read, daemon=True)
            self.th.start()
        except Exception as e:  # noqa: BLE001
            self.err = repr(e)

    def _read(self):
        for line in self.proc.stdout:
            self.rows.append([round(time.time() - T0, 4), self.section()] +
                             [v.strip() for v in line.strip().split(",")])

    def stop(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                self.proc.kill()


class NvmlSampler:
    """NVML every `period` s in a thread: SM and memory clock (MHz), power usage (W, the driver's
    averaged reading), instant power (W, field 186, when the driver has it), total energy (J
    since driver load) and clock-event reasons."""

    def __init__(self, section, period=0.01):
        self.rows = []
        self.section = section
        self.period = period
        self.ok = False
        self.err = None
        self.instant_field = None
        self.uuid = None
        self._stop = False
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(GPU)
            self.ok = True
            try:
                u = pynvml.nvmlDeviceGetUUID(self.h)
                self.uuid = u.decode() if isinstance(u, bytes) else str(u)
            except Exception:  # noqa: BLE001
                self.uuid = None
        except Exception as e:  # noqa: BLE001
            self.err = repr(e)
            return
        fid = getattr(self.nv, "NVML_FI_DEV_POWER_INSTANT", 186)
        try:
            v = self.nv.nvmlDeviceGetFieldValues(self.h, [fid])[0]
            if v.nvmlReturn == 0:
                self.instant_field = fid
        except Exception:  # noqa: BLE001
            pass
        self.reasons_fn = None
        for fname in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            if hasattr(self.nv, fname):
                self.reasons_fn = getattr(self.nv, fname)
                break
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def _one(self):
        nv, h = self.nv, self.h
        t = round(time.time() - T0, 4)
        sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
        mem = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
        pw = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
        inst = None
        if self.instant_field is not None:
            try:
                v = nv.nvmlDeviceGetFieldValues(h, [self.instant_field])[0]
                inst = v.value.uiVal / 1000.0 if v.nvmlReturn == 0 else None
            except Exception:  # noqa: BLE001
                inst = None
        try:
            energy = nv.nvmlDeviceGetTotalEnergyConsumption(h) / 1000.0
        except Exception:  # noqa: BLE001
            energy = None
        reasons = None
        if self.reasons_fn:
            try:
                reasons = hex(self.reasons_fn(h))
            except Exception:  # noqa: BLE001
                reasons = None
        return [t, self.section(), sm, mem, round(pw, 2), inst if inst is None else round(inst, 2),
                energy if energy is None else round(energy, 3), reasons]

    def _loop(self):
        while not self._stop:
            try:
                self.rows.append(self._one())
            except Exception:  # noqa: BLE001
                pass
            time.sleep(self.period)

    def stop(self):
        self._stop = True


class KernelLog:
    """CUDA events around every kernel of a phase, mapped to host seconds since T0."""

    def __init__(self):
        torch.cuda.synchronize()
        self.ref = torch.cuda.Event(enable_timing=True)
        self.ref.record()
        torch.cuda.synchronize()
        self.t_ref = time.time() - T0
        self.items = []  # (kind, start event, end event)

    def run(self, kind, fn):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        self.items.append((kind, s, e))
        return e

    def throttle_host(self, behind=64):
        """Keeps the host at most `behind` kernels ahead of the GPU (never lets the GPU idle)."""
        if len(self.items) > behind:
            self.items[-behind][2].synchronize()

    def table(self):
        torch.cuda.synchronize()
        kinds = sorted({k for k, _, _ in self.items})
        out = {"kinds": kinds, "kind": [], "t_s": [], "dur_us": []}
        for k, s, e in self.items:
            out["kind"].append(kinds.index(k))
            out["t_s"].append(round(self.t_ref + self.ref.elapsed_time(s) / 1000.0, 5))
            out["dur_us"].append(round(s.elapsed_time(e) * 1000.0, 1))
        return out


def busy_fraction(table):
    """Kernel time over wall time in the second half of a phase (1: back to back, no idle gaps)."""
    t, d = table["t_s"], table["dur_us"]
    if len(t) < 4:
        return None
    half = len(t) // 2
    span = t[-1] + d[-1] * 1e-6 - t[half]
    return round(sum(d[half:]) * 1e-6 / span, 4) if span > 0 else None


def rates(table, work):
    """Per kind: rested (median of the first 20 kernels) and steady (median of the last half)
    rates in work units per second (FLOP/s or B/s), and 100 ms windows of the rate."""
    res = {}
    for ki, kind in enumerate(table["kinds"]):
        idx = [i for i, k in enumerate(table["kind"]) if k == ki]
        d = [table["dur_us"][i] for i in idx]
        if not d:
            continue
        w = work[kind]
        first = statistics.median(d[:20])
        steady = statistics.median(d[len(d) // 2:])
        windows = []
        i = 0
        while i < len(idx):
            t0 = table["t_s"][idx[i]]
            j = i
            while j < len(idx) and table["t_s"][idx[j]] < t0 + 0.1:
                j += 1
            windows.append([round(t0, 4), j - i, round(w / (statistics.median(d[i:j]) * 1e-6), 1)])
            i = j
        res[kind] = {"work_per_kernel": w, "count": len(d), "rested_us": first, "steady_us": steady,
                     "rested_rate": w / (first * 1e-6), "steady_rate": w / (steady * 1e-6),
                     "steady_over_rested": first / steady, "windows_100ms": windows}
    return res


def nccl_version():
    try:
        v = torch.cuda.nccl.version()
        return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    except Exception:  # noqa: BLE001
        return None


def gemm_sets(dtype=torch.bfloat16):
    return [(torch.randn(N, N, device="cuda", dtype=dtype), torch.randn(N, N, device="cuda", dtype=dtype),
             torch.empty(N, N, device="cuda", dtype=dtype)) for _ in range(2)]


def phase_gemm(kl, seconds, ops, state):
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        for _ in range(16):
            a, b, c = ops[i % 2]
            kl.run("gemm", lambda: torch.matmul(a, b, out=c))
            i += 1
        kl.throttle_host()


def phase_memory(kl, seconds, bufs, state):
    src, dst = bufs
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        for _ in range(16):
            kl.run("copy", lambda: dst.copy_(src))
        kl.throttle_host()


def phase_mixed(kl, seconds, ops, ew, state):
    x, y, z = ew
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        for _ in range(8):
            a, b, c = ops[i % 2]
            kl.run("gemm", lambda: torch.matmul(a, b, out=c))
            kl.run("sigmoid", lambda: torch.sigmoid(x, out=z))
            kl.run("add", lambda: torch.add(x, y, out=z))
            kl.run("mul", lambda: torch.mul(z, 1.0009765625, out=y))
            i += 1
        kl.throttle_host(behind=128)


def phase_gemm_set(kl, seconds, ops, kind):
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        for _ in range(8):
            a, b, c = ops[i % len(ops)]
            kl.run(kind, lambda: torch.matmul(a, b, out=c))
            i += 1
        kl.throttle_host(behind=32)


def phase_mixed_n(kl, seconds, ops, ew, n_ew, gemm=True):
    """One GEMM (none if not gemm) then n_ew elementwise ops (sigmoid, add, mul in turn;
    n_ew = 1: add only)."""
    x, y, z = ew
    seq = [("add", lambda: torch.add(x, y, out=z))] if n_ew == 1 else \
        [[("sigmoid", lambda: torch.sigmoid(x, out=z)), ("add", lambda: torch.add(x, y, out=z)),
          ("mul", lambda: torch.mul(z, 1.0009765625, out=y))][j % 3] for j in range(n_ew)]
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        for _ in range(8):
            a, b, c = ops[i % 2]
            if gemm:
                kl.run("gemm", lambda: torch.matmul(a, b, out=c))
            for kind, fn in seq:
                kl.run(kind, fn)
            i += 1
        kl.throttle_host(behind=128)


def burst_count(state, period_s, duty):
    """GEMMs per burst: from the sustained GEMM time, so a burst lasts about duty x period_s at
    the throttled clock (recorded in state)."""
    k = max(1, int(round(duty * period_s / state["gemm_steady_s"])))
    state.setdefault("burst_k", {})["%g/%g" % (period_s, duty)] = k
    return k


def phase_burst(kl, seconds, ops, period_s, k, kind="gemm"):
    """Bursts of k GEMMs (ops: (a, b, out) sets, used in turn) every period_s (host-timed); the
    GPU idles between bursts."""
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        t_burst = time.perf_counter()
        for _ in range(k):
            a, b, c = ops[i % len(ops)]
            kl.run(kind, lambda: torch.matmul(a, b, out=c))
            i += 1
        torch.cuda.synchronize()
        rest = t_burst + period_s - time.perf_counter()
        if rest > 0:
            time.sleep(rest)


def run_heldout(phase, ops, ew, work, state, out):
    """The held-out phases (--set heldout); each guarded so one failure keeps the rest."""
    rec = phase("gemm", 6.0, lambda kl, s: phase_gemm(kl, s, ops, state))
    if rec and "gemm" in rec["rates"]:
        state["gemm_steady_s"] = rec["rates"]["gemm"]["steady_us"] * 1e-6
    try:
        m, k = 16384, 4096
        wide = [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
                 torch.randn(k, m, device="cuda", dtype=torch.bfloat16),
                 torch.empty(m, m, device="cuda", dtype=torch.bfloat16)) for _ in range(2)]
        for a, b, c in wide:
            torch.matmul(a, b, out=c)
        work["gemm_wide"] = 2.0 * m * m * k
        phase("gemm_wide", 8.0, lambda kl, s: phase_gemm_set(kl, s, wide, "gemm_wide"))
        del wide
    except Exception:  # noqa: BLE001
        out["errors"].append({"phase": "gemm_wide setup", "error": traceback.format_exc()})
    try:
        try:  # fp32 on the CUDA cores (PyTorch's default; said explicitly)
            torch.backends.cuda.matmul.fp32_precision = "ieee"
            state["fp32_precision"] = "ieee"
        except Exception:  # noqa: BLE001
            torch.backends.cuda.matmul.allow_tf32 = False
            state["fp32_precision"] = "allow_tf32=False"
        f32 = [(torch.randn(N, N, device="cuda", dtype=torch.float32),
                torch.randn(N, N, device="cuda", dtype=torch.float32),
                torch.empty(N, N, device="cuda", dtype=torch.float32)) for _ in range(2)]
        for a, b, c in f32:
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        work["gemm_fp32"] = 2.0 * N ** 3
        phase("gemm_fp32", 8.0, lambda kl, s: phase_gemm_set(kl, s, f32, "gemm_fp32"))
        del f32
    except Exception:  # noqa: BLE001
        out["errors"].append({"phase": "gemm_fp32 setup", "error": traceback.format_exc()})
    torch.cuda.empty_cache()
    phase("elementwise", 6.0, lambda kl, s: phase_mixed_n(kl, s, ops, ew, 3, gemm=False))
    phase("mixed_ew6", 8.0, lambda kl, s: phase_mixed_n(kl, s, ops, ew, 6))
    phase("mixed_ew1", 8.0, lambda kl, s: phase_mixed_n(kl, s, ops, ew, 1))


def run_bursts(phase, ops, work, state, out):
    """The fast limiter's phases (--set bursts): bursts of every period and duty, then decode."""
    rec = phase("gemm", 4.0, lambda kl, s: phase_gemm(kl, s, ops, state))
    if rec and "gemm" in rec["rates"]:
        state["gemm_steady_s"] = rec["rates"]["gemm"]["steady_us"] * 1e-6
    for period in (0.02, 0.05, 0.1, 0.2):
        for duty in (0.25, 0.5, 0.75):
            k = burst_count(state, period, duty)
            phase("burst_%dms_%d%%" % (round(period * 1000), round(duty * 100)), 5.0,
                  lambda kl, s, p=period, k=k: phase_burst(kl, s, ops, p, k), rest_s=1.5)
    try:  # decode-like: the activations times the GEMM phase's B matrices as weights
        x = torch.randn(DECODE_M, N, device="cuda", dtype=torch.bfloat16)
        dec = [(x, b, torch.empty(DECODE_M, N, device="cuda", dtype=torch.bfloat16)) for _, b, _ in ops]
        for a, b, c in dec:
            torch.matmul(a, b, out=c)
        work["gemm_decode"] = 2.0 * DECODE_M * N * N
        phase("decode", 4.0, lambda kl, s: phase_burst(kl, s, dec, 0.01, 96, "gemm_decode"), rest_s=1.5)
    except Exception:  # noqa: BLE001
        out["errors"].append({"phase": "decode setup", "error": traceback.format_exc()})


def layer_cycle(work, t=LAYER_TOKENS, suffix=""):
    """One GPT layer's kernels (h = LAYER_H, t tokens, bf16), attention left out: returns (GEMMs only,
    the forward layer's order with its memory-bound kernels) as (kind + suffix, fn) lists, and fills
    `work` (FLOPs of each GEMM, HBM bytes of each memory-bound kernel)."""
    import torch.nn.functional as F
    bf = torch.bfloat16
    h = LAYER_H
    r = lambda *shape: torch.randn(*shape, device="cuda", dtype=bf)  # noqa: E731
    e = lambda *shape: torch.empty(*shape, device="cuda", dtype=bf)  # noqa: E731
    x, attn = r(t, h), r(t, h)  # the layer's input; a stand-in for attention's output
    w_qkv, w_o, w_up, w_down = r(h, 3 * h) * h ** -0.5, r(h, h) * h ** -0.5, r(h, 4 * h) * h ** -0.5, \
        r(4 * h, h) * (4 * h) ** -0.5
    ln_w, ln_b = torch.ones(h, device="cuda", dtype=bf), torch.zeros(h, device="cuda", dtype=bf)
    qkv, o, y, up, down, x2 = e(t, 3 * h), e(t, h), e(t, h), e(t, 4 * h), e(t, h), e(t, h)
    held = {"xn": e(t, h), "yn": e(t, h), "g": e(t, 4 * h)}

    def ln(src, key):
        return lambda: held.__setitem__(key, F.layer_norm(src, (h,), ln_w, ln_b))

    gemm = {"gemm_qkv": lambda: torch.matmul(held["xn"], w_qkv, out=qkv),
            "gemm_o": lambda: torch.matmul(attn, w_o, out=o),
            "gemm_up": lambda: torch.matmul(held["yn"], w_up, out=up),
            "gemm_down": lambda: torch.matmul(held["g"], w_down, out=down)}
    for kind, (m, n, k) in {"gemm_qkv": (t, 3 * h, h), "gemm_o": (t, h, h), "gemm_up": (t, 4 * h, h),
                            "gemm_down": (t, h, 4 * h)}.items():
        work[kind + suffix] = 2.0 * m * n * k
    work["layer_norm" + suffix] = 2.0 * t * h * 2
    work["gelu" + suffix] = 2.0 * t * 4 * h * 2
    work["add" + suffix] = 3.0 * t * h * 2
    only = [(k + suffix, gemm[k]) for k in ("gemm_qkv", "gemm_o", "gemm_up", "gemm_down")]
    mixed = [("layer_norm", ln(x, "xn")), ("gemm_qkv", gemm["gemm_qkv"]), ("gemm_o", gemm["gemm_o"]),
             ("add", lambda: torch.add(x, o, out=y)), ("layer_norm", ln(y, "yn")),
             ("gemm_up", gemm["gemm_up"]), ("gelu", lambda: held.__setitem__("g", F.gelu(up))),
             ("gemm_down", gemm["gemm_down"]), ("add", lambda: torch.add(y, down, out=x2))]
    mixed = [(kind + suffix, fn) for kind, fn in mixed]
    for _, fn in mixed:  # warm-up: cuBLAS heuristics, allocator
        fn()
    torch.cuda.synchronize()
    return only, mixed


def phase_cycle(kl, seconds, seq):
    """`seq` ((kind, fn) pairs) over and over, each kernel inside its own events."""
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        for _ in range(4):
            for kind, fn in seq:
                kl.run(kind, fn)
        kl.throttle_host(behind=96)


def gpt_step(batch, seq):
    """tp_step_bench.py's four TpLayers (h 4096, 32 heads, ffn 16384, flash SDPA) without TP: a
    fwd+bwd step function, warmed up."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from tp_step_bench import TpLayer  # TP size 1: no collectives
    torch.manual_seed(1)
    stack = [TpLayer(LAYER_H, 32, 4 * LAYER_H, 1) for _ in range(4)]
    x = torch.randn(batch, seq, LAYER_H, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(batch, seq, LAYER_H, device="cuda", dtype=torch.bfloat16)
    params = [p for layer in stack for p in layer.params()]

    def step():
        for p in params:
            p.grad = None
        y = x
        for layer in stack:
            y = layer.forward(y)
        y.backward(g)
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    return step


def phase_steps(kl, seconds, step, rested=3, rest_s=1.5):
    """`rested` single steps, each after rest_s idle ("step_rested"), then steps back to back for
    `seconds` ("step"), the host at most two steps ahead."""
    import torch_timing as tt  # gpt_step put this folder on sys.path
    for _ in range(rested):
        torch.cuda.synchronize()
        time.sleep(rest_s)
        tt.backlog(20_000)  # a 20 ms sleep kernel: the host gets ahead before the step starts
        kl.run("step_rested", step)
    torch.cuda.synchronize()
    t_end = time.perf_counter() + seconds
    ends = []
    while time.perf_counter() < t_end:
        ends.append(kl.run("step", step))
        if len(ends) > 2:
            ends[-3].synchronize()


def run_mix(phase, ops, work, state, out):
    """--set mix: the layer cycles, two GPT steps, the M sweep and the decode pattern; each guarded."""
    rec = phase("gemm", 3.0, lambda kl, s: phase_gemm(kl, s, ops, state))
    if rec and "gemm" in rec["rates"]:
        state["gemm_steady_s"] = rec["rates"]["gemm"]["steady_us"] * 1e-6
    try:
        only, mixed = layer_cycle(work)
        phase("cycle_gemm", 5.0, lambda kl, s: phase_cycle(kl, s, only), rest_s=1.5)
        phase("cycle_mixed", 5.0, lambda kl, s: phase_cycle(kl, s, mixed), rest_s=1.5)
        del only, mixed
        # The same layer at 2048 tokens: its memory-bound kernels (16-64 MiB) short and partly
        # L2-resident, as in the GPT-3 TP8 layer of sustained_gemm.py.
        _, small = layer_cycle(work, 2048, "_t2048")
        phase("cycle_mixed_t2048", 5.0, lambda kl, s: phase_cycle(kl, s, small), rest_s=1.5)
        del small
    except Exception:  # noqa: BLE001
        out["errors"].append({"phase": "layer cycle setup", "error": traceback.format_exc()})
    torch.cuda.empty_cache()
    for batch, seq in ((2, 4096), (1, 2048)):
        name = "step_s%d_b%d" % (seq, batch)
        try:
            step = gpt_step(batch, seq)
            work["step"] = work["step_rested"] = 1.0  # steps per second
            phase(name, 6.0, lambda kl, s: phase_steps(kl, s, step), rest_s=0.5)
            del step
        except Exception:  # noqa: BLE001
            out["errors"].append({"phase": name + " setup", "error": traceback.format_exc()})
        torch.cuda.empty_cache()
    for m in ROOFLINE_M:
        name = "gemm_m%d" % m
        try:
            a = torch.randn(m, N, device="cuda", dtype=torch.bfloat16)
            sweep = [(a, b, torch.empty(m, N, device="cuda", dtype=torch.bfloat16)) for _, b, _ in ops]
            for x, b, c in sweep:
                torch.matmul(x, b, out=c)
            work[name] = 2.0 * m * N * N
            phase(name, 2.5 if m <= 256 else 3.0, lambda kl, s, sw=sweep, n=name: phase_gemm_set(kl, s, sw, n),
                  rest_s=1.0, keep_kernels=False)
            del a, sweep
        except Exception:  # noqa: BLE001
            out["errors"].append({"phase": name + " setup", "error": traceback.format_exc()})
    try:
        x = torch.randn(DECODE_M, N, device="cuda", dtype=torch.bfloat16)
        dec = [(x, b, torch.empty(DECODE_M, N, device="cuda", dtype=torch.bfloat16)) for _, b, _ in ops]
        for a, b, c in dec:
            torch.matmul(a, b, out=c)
        work["gemm_decode"] = 2.0 * DECODE_M * N * N
        phase("decode", 3.0, lambda kl, s: phase_burst(kl, s, dec, 0.01, 96, "gemm_decode"), rest_s=1.5,
              keep_kernels=False)
    except Exception:  # noqa: BLE001
        out["errors"].append({"phase": "decode setup", "error": traceback.format_exc()})


def gap_filler(kind, ms, work):
    """(kernel kind name, fn) of a filler lasting about `ms` at the rested clock; fills `work`."""
    import torch.nn.functional as F
    bf = torch.bfloat16
    name = "%s_%g" % (kind, ms)
    if kind == "sleep":
        cycles = int(ms * 1e-3 * 1.98e9)  # clock64 cycles at f_max (longer at a lower clock)
        work[name] = ms * 1e-3
        return name, lambda: torch.cuda._sleep(cycles)
    if kind == "add":
        n = int(ms * 1e-3 * 3.0e12 / 6)  # 3 x 2 bytes per element at ~3.0 TB/s
        a, b, c = (torch.randn(n, device="cuda", dtype=bf) for _ in range(3))
        work[name] = 6.0 * n
        return name, lambda: torch.add(a, b, out=c)
    if kind == "ln":
        h = LAYER_H
        rows = max(256, int(ms * 1e-3 * 2.0e12 / (4 * h)))  # 2 x 2 bytes per element at ~2 TB/s
        x = torch.randn(rows, h, device="cuda", dtype=bf)
        w, b = torch.ones(h, device="cuda", dtype=bf), torch.zeros(h, device="cuda", dtype=bf)
        held = {}
        work[name] = 4.0 * rows * h
        return name, lambda: held.__setitem__("y", F.layer_norm(x, (h,), w, b))
    if kind == "gelu":
        h = 4 * LAYER_H
        rows = max(64, int(ms * 1e-3 * 2.8e12 / (4 * h)))
        x = torch.randn(rows, h, device="cuda", dtype=bf)
        held = {}
        work[name] = 4.0 * rows * h
        return name, lambda: held.__setitem__("y", F.gelu(x))
    raise ValueError(kind)


def run_gaps(phase, ops, work, state, out):
    """--set gaps: one GEMM then one filler of each kind and length, over and over; each guarded."""
    rec = phase("gemm", 3.0, lambda kl, s: phase_gemm(kl, s, ops, state))
    if rec and "gemm" in rec["rates"]:
        state["gemm_steady_s"] = rec["rates"]["gemm"]["steady_us"] * 1e-6
    for kind, ms in GAPS:
        name = "gap_%s_%g" % (kind, ms)
        try:
            fkind, fill = gap_filler(kind, ms, work)
            fill()
            torch.cuda.synchronize()
            seq = [("gemm", lambda a=ops[0][0], b=ops[0][1], c=ops[0][2]: torch.matmul(a, b, out=c)),
                   (fkind, fill),
                   ("gemm", lambda a=ops[1][0], b=ops[1][1], c=ops[1][2]: torch.matmul(a, b, out=c)),
                   (fkind, fill)]
            phase(name, 3.0, lambda kl, s, q=seq: phase_cycle(kl, s, q), rest_s=1.5)
            del fill, seq
        except Exception:  # noqa: BLE001
            out["errors"].append({"phase": name + " setup", "error": traceback.format_exc()})
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", required=True)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every phase's length")
    ap.add_argument("--set", choices=("fit", "heldout", "bursts", "mix", "gaps"), default="fit",
                    help="fit: the phases power_fit.py fits on; heldout: other shapes, ratios and bursts; "
                         "bursts: 20-200 ms bursts at 25-75%% and a decode pattern (the fast limiter); "
                         "mix: a layer's GEMMs with and without its memory-bound kernels, two GPT steps "
                         "from rest and sustained, an M x 8192 x 8192 GEMM sweep; gaps: a GEMM then "
                         "one sleep, add, layer norm or GELU of 0.1-1 ms, over and over")
    ap.add_argument("--nvml-period", type=float, help="seconds between NVML samples (10 ms; 2 ms for bursts)")
    args = ap.parse_args()
    sc = args.scale
    nvml_period = args.nvml_period or (0.002 if args.set == "bursts" else 0.01)

    section = {"name": "init"}
    current = lambda: section["name"]  # noqa: E731
    smi = SmiSampler(current)
    nvml = NvmlSampler(current, nvml_period)
    with open(__file__, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    p = torch.cuda.get_device_properties(0)
    meta = {"schema": "gcsim.power_clock.v1", "device": torch.cuda.get_device_name(0),
            "sms": p.multi_processor_count, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "nccl": nccl_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "script_sha256": sha, "smi_before": smi_snapshot(), "smi_fields": smi.fields,
            "smi_error": smi.err, "nvml": nvml.ok, "nvml_error": nvml.err,
            "nvml_instant_power_field": nvml.instant_field,
            "nvml_columns": ["t_s", "phase", "sm_mhz", "mem_mhz", "power_w", "power_instant_w",
                             "energy_j", "reasons"],
            "smi_columns": ["t_s", "phase"] + smi.fields, "method": __doc__, "scale": sc,
            "set": args.set, "nvml_period_s": nvml_period, "smi_index": GPU,
            "nvml_uuid": nvml.uuid, "torch_uuid": str(getattr(p, "uuid", None)),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    out = {"meta": meta, "phases": [], "errors": []}
    state = {"gemm_steady_s": 1.9e-3}  # replaced by the gemm phase's measurement

    def save():
        out["nvml_samples"] = list(nvml.rows) if nvml.ok else []
        out["smi_samples"] = list(smi.rows)
        out["meta"]["state"] = state
        tmp = args.o + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(tmp, args.o)

    gemm_work = 2.0 * N ** 3
    work = {"gemm": gemm_work}

    def phase(name, seconds, body, rest_s=2.0, keep_kernels=True):
        section["name"] = name + " rest"
        torch.cuda.synchronize()
        time.sleep(rest_s)
        section["name"] = name
        kl = KernelLog()
        t_start = time.time() - T0
        try:
            body(kl, seconds * sc)
            tab = kl.table()
            rec = {"phase": name, "t_start_s": round(t_start, 4), "t_end_s": round(time.time() - T0, 4),
                   "kernels": tab if keep_kernels else {"kinds": tab["kinds"], "count": len(tab["kind"])},
                   "rates": rates(tab, work), "busy_fraction_second_half": busy_fraction(tab)}
            out["phases"].append(rec)
            summary = ", ".join("%s %.4g->%.4g /s (%d)" % (k, v["rested_rate"], v["steady_rate"], v["count"])
                                for k, v in rec["rates"].items())
            log("%-16s %s" % (name, summary))
            return rec
        except Exception:  # noqa: BLE001
            out["errors"].append({"phase": name, "error": traceback.format_exc()})
            log("%s failed:\n%s" % (name, traceback.format_exc()))
            return None
        finally:
            section["name"] = "between"
            save()

    log(meta["device"], "smi fields", smi.fields, "nvml", nvml.ok, "instant field", nvml.instant_field)
    try:
        ops = gemm_sets()
        for a, b, c in ops:  # warm-up: cuBLAS heuristics and workspace
            torch.matmul(a, b, out=c)
        src = torch.randn(512 * MIB // 2, device="cuda", dtype=torch.bfloat16).repeat(2)  # 1 GiB
        dst = torch.empty_like(src)
        dst.copy_(src)
        x = torch.randn(256 * MIB, device="cuda", dtype=torch.bfloat16)  # 256 Mi elements, 512 MiB
        y = torch.randn_like(x)
        z = torch.empty_like(x)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001
        out["errors"].append({"phase": "setup", "error": traceback.format_exc()})
        save()
        raise
    work["copy"] = 2.0 * src.numel() * 2           # bytes read + written
    work["sigmoid"] = 2.0 * x.numel() * 2
    work["add"] = 3.0 * x.numel() * 2
    work["mul"] = 2.0 * x.numel() * 2

    section["name"] = "idle"
    time.sleep((2.0 if args.set in ("bursts", "mix", "gaps") else 3.0) * sc)
    if args.set == "gaps":
        run_gaps(phase, ops, work, state, out)
        bursts = ()
    elif args.set == "mix":
        run_mix(phase, ops, work, state, out)
        bursts = ()
    elif args.set == "bursts":
        run_bursts(phase, ops, work, state, out)
        bursts = ()
    elif args.set == "fit":
        rec = phase("gemm", 15.0, lambda kl, s: phase_gemm(kl, s, ops, state))
        if rec and "gemm" in rec["rates"]:
            state["gemm_steady_s"] = rec["rates"]["gemm"]["steady_us"] * 1e-6
        phase("memory", 10.0, lambda kl, s: phase_memory(kl, s, (src, dst), state))
        phase("mixed", 10.0, lambda kl, s: phase_mixed(kl, s, ops, (x, y, z), state))
        bursts = ((1.0, 0.5, 10.0), (0.1, 0.5, 10.0), (0.1, 0.75, 10.0), (0.02, 0.5, 8.0))
    else:
        run_heldout(phase, ops, (x, y, z), work, state, out)
        bursts = ((0.1, 0.25, 8.0), (0.3, 0.5, 8.0), (1.0, 0.5, 8.0))
    for period, duty, secs in bursts:
        k = burst_count(state, period, duty)
        phase("burst_%dms_%d%%" % (round(period * 1000), round(duty * 100)), secs,
              lambda kl, s, p=period, k=k: phase_burst(kl, s, ops, p, k))
    section["name"] = "end"
    time.sleep(0.5)
    smi.stop()
    nvml.stop()
    meta["smi_after"] = smi_snapshot()
    meta["wall_s"] = round(time.time() - T0, 1)
    save()
    log("done: %d phases, %d errors, %d NVML and %d nvidia-smi samples" % (
        len(out["phases"]), len(out["errors"]), len(out["nvml_samples"]), len(out["smi_samples"])))
    return 0 if not out["errors"] else 3


if __name__ == "__main__":
    sys.exit(main())
