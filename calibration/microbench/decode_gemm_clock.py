#!/usr/bin/env python3
"""gcsim decode_gemm_clock (issue 16): the serving step's decode GEMMs alone, as cuBLAS runs them
for PyTorch's F.linear, with the SM clock and board power sampled while each runs, on one GPU.

Shapes: Llama-2-70B's layer (hidden 8192, 8 KV heads of 128, FFN 28672, vocab 32000) at TP 4 and 2:
QKV, output projection, gate+up, down and the LM head, weights [N, K] bf16 as F.linear takes them,
tokens M = 1, 32, 64, 128, 192, 256. Each case: weight sets rotated over >= 256 MiB (each call
streams its weights from HBM, as a step's layer does); `time_us` = CUDA events over a
back-to-back loop of >= 0.5 s after warm-up (the mean per call); the loop's nvidia-smi samples
(clocks.sm, power.draw; `nvidia-smi -lms 50` in the background for the whole run, matched by
time); then one torch.profiler pass of 5 calls: each call's kernels (names, durations).

    python3 decode_gemm_clock.py -o OUT.json [--budget-s 200]
"""
import time

import argparse
import csv
import datetime
import hashlib
import json
import os
import subprocess
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_kernels_bench as skb  # noqa: E402  (its T0 is set at its import, before torch's)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VERSION = "decode_gemm_clock 1.1"  # 1.1: attach_samples takes the records (decode_step_clock.py shares it)
HIDDEN, KV, FFN, VOCAB = 8192, 1024, 28672, 32000
TOKENS = [1, 32, 64, 128, 192, 256]
ROTATE_BYTES = 256 * 2**20
LOOP_S = 0.5


def shapes(tp):
    """(name, N, K) of the TP shard's decode GEMMs."""
    return [("qkv", (HIDDEN + 2 * KV) // tp, HIDDEN), ("o", HIDDEN, HIDDEN // tp),
            ("gate_up", 2 * FFN // tp, HIDDEN), ("down", HIDDEN, FFN // tp), ("head", VOCAB // tp, HIDDEN)]


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).timestamp()


def run_case(rec, n, k, m):
    w_bytes = n * k * 2
    sets = max(1, min(16, -(-ROTATE_BYTES // w_bytes)))
    ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    state = {"i": 0}

    def call():
        w = ws[state["i"] % sets]
        state["i"] += 1
        return F.linear(x, w)
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    # calibrate the loop length
    t0 = time.time()
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    per = (time.time() - t0) / 20
    iters = max(50, int(LOOP_S / max(per, 1e-6)))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rec["loop_start_utc"] = now_utc()
    start.record()
    for _ in range(iters):
        call()
    end.record()
    torch.cuda.synchronize()
    rec["loop_end_utc"] = now_utc()
    rec["iters"] = iters
    rec["weight_sets"] = sets
    rec["time_us"] = start.elapsed_time(end) * 1e3 / iters

    def marked_calls():
        for _ in range(5):
            torch.cuda._sleep(skb.SPIN_CYCLES)
            call()
        torch.cuda._sleep(skb.SPIN_CYCLES)
    groups = skb.split_on_spins(skb.gpu_activities(marked_calls))
    rec["calls"] = [[{"name": e["name"], "dur_us": e["dur_us"]} for e in g if e["cat"] == "kernel"] for g in groups]
    del ws, x


def start_sampler(path):
    """nvidia-smi sampling the SM clock and board power every 50 ms into `path` (CSV)."""
    return subprocess.Popen(["nvidia-smi", "-i", os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0],
                             "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader", "-lms", "50"],
                            stdout=open(path, "w"), stderr=subprocess.DEVNULL)


def attach_samples(doc, smi_path, records):
    """Each record's mean clock and power over its loop (loop_start_utc + 0.1 s .. loop_end_utc)."""
    rows = []
    try:
        with open(smi_path) as f:
            for r in csv.reader(f):
                if len(r) < 3 or not r[0].strip()[:4].isdigit():
                    continue
                try:
                    t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(
                        tzinfo=datetime.timezone.utc).timestamp()
                    rows.append((t, float(r[1].split()[0]), float(r[2].split()[0])))
                except ValueError:
                    continue
    except OSError as ex:
        doc["errors"].append({"section": "nvidia-smi samples", "error": repr(ex)})
        return
    doc["smi_samples"] = len(rows)
    for rec in records:
        if "loop_start_utc" not in rec:
            continue
        inside = [r for r in rows if rec["loop_start_utc"] + 0.1 <= r[0] <= rec["loop_end_utc"]]
        if inside:
            rec["sm_clock_mhz"] = sum(r[1] for r in inside) / len(inside)
            rec["power_w"] = sum(r[2] for r in inside) / len(inside)
            rec["samples"] = len(inside)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.decode_gemm_clock.v1", "method": __doc__, "errors": [], "skipped": [], "gemms": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/decode_gemm_clock.py"
    doc["meta"]["script_version"] = VERSION
    with open(os.path.abspath(__file__), "rb") as fh:
        doc["meta"]["sha256"]["decode_gemm_clock.py"] = hashlib.sha256(fh.read()).hexdigest()
    doc["nvidia_smi_before"] = skb.clocks()
    smi_path = a.out + ".smi.csv"
    smi = start_sampler(smi_path)

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    try:
        skb.gpu_activities(lambda: torch.cuda._sleep(1000))
        for tp in (4, 2):
            for name, n, k in shapes(tp):
                for m in TOKENS:
                    rec = {"tp": tp, "gemm": name, "m": m, "n": n, "k": k, "dtype": "bf16", "op": "F.linear"}
                    if time.time() - skb.T0 > a.budget_s:
                        doc["skipped"].append(rec)
                        continue
                    try:
                        run_case(rec, n, k, m)
                        ks = rec["calls"][-1] if rec.get("calls") else []
                        skb.log("tp%d %-7s m%4d: %8.2f us/call (%d kernels: %s)" % (
                            tp, name, m, rec["time_us"], len(ks), ", ".join("%s %.1f" % (e["name"][:40], e["dur_us"]) for e in ks)))
                    except Exception as ex:  # noqa: BLE001
                        rec["error"] = repr(ex)[:500]
                    doc["gemms"].append(rec)
                    torch.cuda.empty_cache()
            save()
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "gemms", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    finally:
        smi.terminate()
        smi.wait()
    attach_samples(doc, smi_path, doc["gemms"])
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    for rec in doc["gemms"]:
        if "sm_clock_mhz" in rec:
            skb.log("tp%d %-7s m%4d: %8.2f us, %6.0f MHz, %5.0f W (%d samples)" % (
                rec["tp"], rec["gemm"], rec["m"], rec["time_us"], rec["sm_clock_mhz"], rec["power_w"], rec["samples"]))
    skb.log("done in %.1f s: %d gemms, %d errors" % (time.time() - skb.T0, len(doc["gemms"]), len(doc["errors"])))


if __name__ == "__main__":
    main()
