#!/usr/bin/env python3
"""gcsim decode_step_clock (issue 16): the serving model's decode step as a CUDA graph replayed back
to back for seconds, with the SM clock and board power sampled, on one GPU: the clock a sustained
decode step runs at, batch by batch.

The step: serving_kernels_bench.py's LocalShard (Llama-2-70B's layer shape, 8 layers, one TP rank's
shard without its collectives; eager PyTorch kernels, cuDNN SDPA), KV 2048 tokens a sequence, at TP
4 and 2, batch 1, 32, 64, 128, 256, captured in one CUDA graph. Each point: `time_us` = CUDA events
over >= 2 s of replays (the mean per step), the loop's nvidia-smi samples (`nvidia-smi -lms 50` for
the whole run; each point's mean over its loop less the first 0.1 s: `sm_clock_mhz`, `power_w`).

    python3 decode_step_clock.py -o OUT.json [--budget-s 200]
"""
import time

import argparse
import hashlib
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_kernels_bench as skb  # noqa: E402  (its T0 is set at its import, before torch's)
import torch  # noqa: E402
from decode_gemm_clock import attach_samples, now_utc, start_sampler  # noqa: E402
from serving_step_bench import MODEL  # noqa: E402

VERSION = "decode_step_clock 1.0"
POINTS = [(4, 1), (4, 32), (4, 64), (4, 128), (4, 256), (2, 1), (2, 32), (2, 64), (2, 128), (2, 256)]
KV = 2048
LOOP_S = 2.0


def sustained(rec, g):
    """Replays `g` back to back for LOOP_S seconds: rec's time_us (mean per replay) and loop times."""
    t0 = time.time()
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    per = (time.time() - t0) / 5
    iters = max(20, int(LOOP_S / max(per, 1e-6)))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rec["loop_start_utc"] = now_utc()
    start.record()
    for _ in range(iters):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    rec["loop_end_utc"] = now_utc()
    rec["iters"] = iters
    rec["time_us"] = start.elapsed_time(end) * 1e3 / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.decode_step_clock.v1", "method": __doc__, "model": MODEL, "errors": [],
           "skipped": [], "steps": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/decode_step_clock.py"
    doc["meta"]["script_version"] = VERSION
    for name in ("decode_step_clock.py", "decode_gemm_clock.py"):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "rb") as fh:
            doc["meta"]["sha256"][name] = hashlib.sha256(fh.read()).hexdigest()
    doc["nvidia_smi_before"] = skb.clocks()
    smi_path = a.out + ".smi.csv"
    smi = start_sampler(smi_path)

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    try:
        shards = {tp: skb.LocalShard(MODEL, tp, 0, None, 256 * KV) for tp in (4, 2)}
        torch.cuda.synchronize()
        for tp, batch in POINTS:
            rec = {"tp": tp, "batch": batch, "kv_len": KV, "build": "graph"}
            if time.time() - skb.T0 > a.budget_s:
                doc["skipped"].append(rec)
                continue
            try:
                g = skb.capture(skb.step_fn(shards[tp], batch, KV, True))
                sustained(rec, g)
                del g
                skb.log("TP%d b%4d: %9.1f us a step over %d replays" % (tp, batch, rec["time_us"], rec["iters"]))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:800]
                rec["traceback"] = traceback.format_exc()[-2000:]
            doc["steps"].append(rec)
            torch.cuda.synchronize()
            save()
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "steps", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    finally:
        smi.terminate()
        smi.wait()
    attach_samples(doc, smi_path, doc["steps"])
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    for rec in doc["steps"]:
        if "sm_clock_mhz" in rec:
            skb.log("TP%d b%4d: %9.1f us, %6.0f MHz, %5.0f W (%d samples)" % (
                rec["tp"], rec["batch"], rec["time_us"], rec["sm_clock_mhz"], rec["power_w"], rec["samples"]))
    skb.log("done in %.1f s: %d steps, %d errors" % (time.time() - skb.T0, len(doc["steps"]), len(doc["errors"])))


if __name__ == "__main__":
    main()
