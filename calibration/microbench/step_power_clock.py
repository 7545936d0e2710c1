#!/usr/bin/env python3
"""gcsim step_power_clock (issue 16): the clock and board power of sustained serving work on one GPU,
read from NVML's energy counter (exact average power over a window, where nvidia-smi's power.draw
is a ~1 s running average that lags each loop) and its SM clock every 10 ms.

Sections, each loop run back to back for LOOP_S seconds in two halves (a synchronize between them);
every figure is the second half's: `time_us` (CUDA events, mean per call), `sm_clock_mhz` (NVML's
mean), `power_w` (energy counter delta over the half's wall time), `power_avg_w` (NVML's averaged
power reading, its mean):

- prefill: the serving model's eager prefill step (serving_kernels_bench.py's LocalShard:
  Llama-2-70B's layer shape, 8 layers, one TP rank's shard without its collectives, cuDNN SDPA)
  of one sequence of 2048-8192 tokens at TP 4 and 2;
- decode: its decode step (KV 2048 a sequence) in a CUDA graph, TP2 batch 128 and 256, TP4 256;
- gemm: decode GEMMs alone (F.linear, bf16, weights rotated over >= 256 MiB so each call streams
  them from HBM): TP4 gate+up and down, TP2 gate+up, 1-256 tokens.

    python3 step_power_clock.py -o OUT.json [--budget-s 240]
"""
import time

import argparse
import hashlib
import json
import os
import sys
import threading
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_kernels_bench as skb  # noqa: E402  (its T0 is set at its import, before torch's)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from serving_step_bench import MODEL  # noqa: E402

VERSION = "step_power_clock 1.0"
PREFILL = [(4, 2048), (4, 8192), (2, 2048), (2, 4096), (2, 8192)]
DECODE = [(2, 128), (2, 256), (4, 256)]
DECODE_KV = 2048
HIDDEN, FFN = 8192, 28672
GEMMS = [(4, "gate_up", 2 * FFN // 4, HIDDEN), (4, "down", HIDDEN, FFN // 4), (2, "gate_up", 2 * FFN // 2, HIDDEN)]
TOKENS = [1, 32, 64, 128, 256]
ROTATE_BYTES = 256 * 2**20
LOOP_S = {"prefill": 4.0, "decode": 3.0, "gemm": 3.0}
IDLE_S = 2.0


class Nvml:
    """NVML every 10 ms in a thread: (unix time, SM clock MHz, power reading W, energy J)."""

    def __init__(self):
        import pynvml
        pynvml.nvmlInit()
        self.nv = pynvml
        index = int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0])
        self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.rows = []
        self._stop = False
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def _loop(self):
        nv, h = self.nv, self.h
        while not self._stop:
            try:
                self.rows.append((time.time(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                  nv.nvmlDeviceGetPowerUsage(h) / 1e3,
                                  nv.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3))
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.01)

    def window(self, t0, t1):
        """Mean clock, energy-counter power and mean power reading between t0 and t1 (unix s)."""
        inside = [r for r in self.rows if t0 <= r[0] <= t1]
        if len(inside) < 3:
            return {}
        a, b = inside[0], inside[-1]
        return {"sm_clock_mhz": sum(r[1] for r in inside) / len(inside),
                "sm_clock_min_mhz": min(r[1] for r in inside), "sm_clock_max_mhz": max(r[1] for r in inside),
                "power_w": (b[3] - a[3]) / (b[0] - a[0]) if b[0] > a[0] else None,
                "power_avg_w": sum(r[2] for r in inside) / len(inside), "samples": len(inside)}

    def stop(self):
        self._stop = True
        self.th.join(timeout=1)


def sustained(rec, call, seconds, nvml):
    """`call` back to back for `seconds` in two halves; rec gets the second half's figures."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    t0 = time.time()
    n = 0
    while time.time() - t0 < 0.2 or n < 3:
        call()
        n += 1
    torch.cuda.synchronize()
    per = (time.time() - t0) / n
    half = max(10, int(seconds / 2 / max(per, 1e-6)))
    for _ in range(half):
        call()
    torch.cuda.synchronize()
    t_mid = time.time()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(half):
        call()
    end.record()
    torch.cuda.synchronize()
    t_end = time.time()
    rec["iters_per_half"] = half
    rec["time_us"] = start.elapsed_time(end) * 1e3 / half
    rec["half_s"] = t_end - t_mid
    rec.update(nvml.window(t_mid, t_end))


def gemm_call(n, k, m):
    sets = max(1, min(16, -(-ROTATE_BYTES // (n * k * 2))))
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    state = {"i": 0}

    def call():
        w = ws[state["i"] % sets]
        state["i"] += 1
        return F.linear(x, w)
    return call


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=240.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.step_power_clock.v1", "method": __doc__, "model": MODEL, "errors": [],
           "skipped": [], "idle": {}, "prefill": [], "decode": [], "gemm": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/step_power_clock.py"
    doc["meta"]["script_version"] = VERSION
    with open(os.path.abspath(__file__), "rb") as fh:
        doc["meta"]["sha256"]["step_power_clock.py"] = hashlib.sha256(fh.read()).hexdigest()
    doc["nvidia_smi_before"] = skb.clocks()
    nvml = Nvml()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    def over_budget(rec, section):
        if time.time() - skb.T0 > a.budget_s:
            doc["skipped"].append({"section": section, **rec})
            return True
        return False

    try:
        t0 = time.time()
        time.sleep(IDLE_S)
        doc["idle"] = nvml.window(t0 + 0.5, time.time())
        shards = {tp: skb.LocalShard(MODEL, tp, 0, None, 256 * DECODE_KV) for tp in (4, 2)}
        torch.cuda.synchronize()
        for tp, tokens in PREFILL:
            rec = {"tp": tp, "tokens": tokens, "build": "eager"}
            if over_budget(rec, "prefill"):
                continue
            try:
                sustained(rec, skb.step_fn(shards[tp], 1, tokens, False), LOOP_S["prefill"], nvml)
                skb.log("prefill TP%d %5d: %9.1f us, %6.0f MHz, %5.0f W" % (
                    tp, tokens, rec["time_us"], rec.get("sm_clock_mhz", 0), rec.get("power_w") or 0))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:800]
                rec["traceback"] = traceback.format_exc()[-2000:]
            doc["prefill"].append(rec)
            save()
        for tp, batch in DECODE:
            rec = {"tp": tp, "batch": batch, "kv_len": DECODE_KV, "build": "graph"}
            if over_budget(rec, "decode"):
                continue
            try:
                g = skb.capture(skb.step_fn(shards[tp], batch, DECODE_KV, True))
                sustained(rec, g.replay, LOOP_S["decode"], nvml)
                del g
                skb.log("decode TP%d b%4d: %9.1f us, %6.0f MHz, %5.0f W" % (
                    tp, batch, rec["time_us"], rec.get("sm_clock_mhz", 0), rec.get("power_w") or 0))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:800]
                rec["traceback"] = traceback.format_exc()[-2000:]
            doc["decode"].append(rec)
            save()
        del shards
        torch.cuda.empty_cache()
        for tp, name, n, k in GEMMS:
            for m in TOKENS:
                rec = {"tp": tp, "gemm": name, "m": m, "n": n, "k": k, "dtype": "bf16", "op": "F.linear"}
                if over_budget(rec, "gemm"):
                    continue
                try:
                    sustained(rec, gemm_call(n, k, m), LOOP_S["gemm"], nvml)
                    skb.log("gemm TP%d %-7s m%4d: %8.2f us, %6.0f MHz, %5.0f W" % (
                        tp, name, m, rec["time_us"], rec.get("sm_clock_mhz", 0), rec.get("power_w") or 0))
                except Exception as ex:  # noqa: BLE001
                    rec["error"] = repr(ex)[:500]
                doc["gemm"].append(rec)
                torch.cuda.empty_cache()
            save()
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "main", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    finally:
        nvml.stop()
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    skb.log("done in %.1f s: %d prefill, %d decode, %d gemm, %d errors" % (
        time.time() - skb.T0, len(doc["prefill"]), len(doc["decode"]), len(doc["gemm"]), len(doc["errors"])))


if __name__ == "__main__":
    main()
