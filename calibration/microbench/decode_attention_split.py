#!/usr/bin/env python3
"""gcsim decode_attention_split (issue 16): PyTorch's default SDPA for one decode token (what a
serving step's decode attention launches on Hopper: cuDNN's split-KV kernel and, when it splits
the keys, a lean_reduction_kernel after it), over the grid a serving step spans, on one GPU.

Grid: head dim 128, KV heads x query heads (GQA group 8) 1x8, 2x16, 4x32, 8x64 (Llama-2-70B's
layer at TP 8, 4, 2, 1), batch 1 ... 128, keys 256 ... 16384 per sequence, KV contiguous
([batch, heads, keys, 128] bf16; SDPA has no paged layout), no mask (one query sees every key).
Each case: inputs rotated over >= 192 MiB of KV so repeated calls read HBM, as a step's layer does;
time_us = back-to-back spacing by CUDA events (torch_timing.measure); then, per head config, one
torch.profiler run of every case (3 calls each, spin-kernel markers between) -> each call's
kernels with names and durations: `main_us` (the split-KV kernel), `reduction_us` (the
lean_reduction_kernel, 0 when absent), `kernel_us` (all kernels), `gap_us` (spacing - kernels).

    python3 decode_attention_split.py -o OUT.json [--budget-s 200]
"""
import time

import argparse
import gc
import hashlib
import json
import os
import statistics
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_kernels_bench as skb  # noqa: E402  (its T0 is set at its import, before torch's)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_timing as tt  # noqa: E402

VERSION = "decode_attention_split 1.0"
HEADS = [(1, 8), (2, 16), (4, 32), (8, 64)]  # (kv heads, query heads)
BATCH = [1, 2, 4, 8, 16, 32, 64, 128]
KEYS = [256, 512, 1024, 2048, 4096, 8192, 16384]
D = 128
ROTATE_BYTES = 192 * 2**20
MAX_CASE_BYTES = 8 * 2**30  # one set of K and V


def inputs(batch, hkv, hq, keys):
    """Sets of (q, k, v) to rotate among, at least ROTATE_BYTES of K and V in all."""
    kv_bytes = 2 * batch * hkv * keys * D * 2
    sets = max(1, min(8, -(-ROTATE_BYTES // kv_bytes)))
    dev, bf = torch.device("cuda"), torch.bfloat16
    return [(torch.randn(batch, hq, 1, D, device=dev, dtype=bf),
             torch.randn(batch, hkv, keys, D, device=dev, dtype=bf),
             torch.randn(batch, hkv, keys, D, device=dev, dtype=bf)) for _ in range(sets)]


def rotating_call(sets):
    state = {"i": 0}

    def call():
        q, k, v = sets[state["i"] % len(sets)]
        state["i"] += 1
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    return call


def split_kernels(rec):
    ks = [k for k in rec.get("kernels", []) if k["cat"] == "kernel"]
    rec["main_us"] = sum(k["dur_us"] for k in ks if "lean_reduction" not in k["name"])
    rec["reduction_us"] = sum(k["dur_us"] for k in ks if "lean_reduction" in k["name"])
    rec["kernel_count"] = len(ks)
    if "timing" in rec and "kernel_us" in rec:
        rec["gap_us"] = rec["timing"]["time_us"] - rec["kernel_us"]


def section(doc, save, budget_s):
    doc["decode"] = []
    for hkv, hq in HEADS:
        recs, calls = [], []
        for b in BATCH:
            for s in KEYS:
                if time.time() - skb.T0 > budget_s:
                    doc["skipped"].append({"kv_heads": hkv, "batch": b, "keys": s})
                    continue
                rec = {"batch": b, "kv_heads": hkv, "q_heads": hq, "head_dim": D, "keys": s, "q_len": 1,
                       "backend": "default", "dtype": "bf16", "kv_layout": "contiguous",
                       "kv_bytes": 2 * b * hkv * s * D * 2}
                if rec["kv_bytes"] > MAX_CASE_BYTES:
                    doc["skipped"].append(dict(rec, why="kv over 8 GiB"))
                    continue
                try:
                    sets = inputs(b, hkv, hq, s)
                    call = rotating_call(sets)
                    call()
                    torch.cuda.synchronize()
                    rec["rotation_sets"] = len(sets)
                    rec["timing"] = tt.measure(lambda r, c=call: c())
                    calls.append((rec, call))
                except Exception as ex:  # noqa: BLE001
                    rec["error"] = repr(ex)[:500]
                recs.append(rec)
                doc["decode"].append(rec)
        try:
            error = skb.profile_calls(calls)
            if error:
                doc["errors"].append({"section": "decode profile", "kv_heads": hkv, "error": error})
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": "decode profile", "kv_heads": hkv, "error": repr(ex)[:500]})
        for rec in recs:
            split_kernels(rec)
            if "timing" in rec:
                skb.log("decode kv%d/q%d b%4d s%6d %8.2f us spacing, main %7.2f us, reduction %5.2f us, %d kernels" % (
                    hkv, hq, rec["batch"], rec["keys"], rec["timing"]["time_us"], rec.get("main_us", -1),
                    rec.get("reduction_us", -1), rec.get("kernel_count", -1)))
            else:
                skb.log("decode kv%d/q%d b%4d s%6d ERROR %s" % (hkv, hq, rec["batch"], rec["keys"], rec.get("error")))
        names = sorted({k["name"] for r in recs for k in r.get("kernels", [])})
        doc.setdefault("kernel_names", {})["kv%d_q%d" % (hkv, hq)] = names
        calls.clear()
        recs.clear()
        save()
        gc.collect()
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.decode_attention_split.v1", "method": __doc__, "errors": [], "skipped": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/decode_attention_split.py"
    doc["meta"]["script_version"] = VERSION
    with open(os.path.abspath(__file__), "rb") as fh:
        doc["meta"]["sha256"]["decode_attention_split.py"] = hashlib.sha256(fh.read()).hexdigest()
    doc["nvidia_smi_before"] = skb.clocks()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    save()
    skb.log("%s on %s, torch %s, cuDNN %s" % (VERSION, doc["meta"]["device_name"], torch.__version__,
                                             doc["meta"]["cudnn"]))
    try:
        skb.gpu_activities(lambda: torch.cuda._sleep(1000))  # CUPTI's first start is slow
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "profiler warm-up", "error": repr(ex)[:500]})
    try:
        section(doc, save, a.budget_s)
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "decode", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    n = [r for r in doc["decode"] if "timing" in r]
    skb.log("done in %.1f s: %d cases, %d errors, %d skipped; median spacing %.2f us" % (
        time.time() - skb.T0, len(n), len(doc["errors"]), len(doc["skipped"]),
        statistics.median(r["timing"]["time_us"] for r in n) if n else float("nan")))


if __name__ == "__main__":
    main()
