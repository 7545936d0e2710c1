#!/usr/bin/env python3
"""PyTorch flash scaled_dot_product_attention: forward and backward on prefill shapes, forward on
GQA decode shapes (q_len 1), timed as torch_timing.measure does (CUDA events, warm-up, back-logged
stream, per-repetition medians and back-to-back spacing), on torch.randn inputs rotated over
enough sets to defeat the L2.

    python3 calibration/microbench/attention_bench.py -o OUT.json [--quick]

Records (kind "attention") carry the shape in gcsim's terms (batch, heads, kv_heads, q_len, kv_len,
head_dim, causal, pass fwd|bwd), the backend that ran, time_us (back-to-back spacing), median_us,
flops = 4*b*h*d*pairs (x2.5 for bwd; pairs = unmasked (query, key) pairs) and for decode the
bytes of K and V read. Backward is timed alone: the forward runs once per input set outside the
timing, torch.autograd.grad(..., retain_graph=True) inside it.
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "attention_bench 1.1"
ROT_BYTES = 150 * 2**20  # >= 3x the 50 MB L2


def pairs(q, kv, causal):
    if not causal:
        return q * kv
    if q <= kv:
        return q * (kv - q) + q * (q + 1) / 2
    return kv * (kv + 1) / 2


def sets_for(bytes_per_set):
    return int(min(8, max(2 if bytes_per_set < 2**30 else 1, math.ceil(ROT_BYTES / bytes_per_set))))


def prefill(b, h, hkv, s, d, causal, results, errors):
    bf = torch.bfloat16
    gqa = hkv != h
    per_set = (2 * b * h * s * d + 2 * b * hkv * s * d) * 2 * 2  # q,o,k,v and their grads
    ns = sets_for(per_set)
    sets = []
    for _ in range(ns):
        q = torch.randn(b, h, s, d, device="cuda", dtype=bf, requires_grad=True)
        k = torch.randn(b, hkv, s, d, device="cuda", dtype=bf, requires_grad=True)
        v = torch.randn(b, hkv, s, d, device="cuda", dtype=bf, requires_grad=True)
        sets.append((q, k, v))
    base = {"kind": "attention", "dtype": "bf16", "batch": b, "heads": h, "kv_heads": hkv, "q_len": s,
            "kv_len": s, "head_dim": d, "causal": causal, "backend": "FLASH_ATTENTION", "rot_sets": ns}
    fl = 4.0 * b * h * d * pairs(s, s, causal)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            with torch.no_grad():
                st = tt.measure(lambda r: F.scaled_dot_product_attention(
                    *sets[r % ns], is_causal=causal, enable_gqa=gqa))
            results.append({**base, "pass": "fwd", **st, "flops": fl,
                            "tflops": fl / (st["time_us"] * 1e-6) / 1e12})
            outs = [F.scaled_dot_product_attention(*qkv, is_causal=causal, enable_gqa=gqa) for qkv in sets]
            gos = [torch.randn_like(o) for o in outs]
            st = tt.measure(lambda r: torch.autograd.grad(outs[r % ns], sets[r % ns], gos[r % ns],
                                                          retain_graph=True))
            results.append({**base, "pass": "bwd", **st, "flops": 2.5 * fl,
                            "tflops": 2.5 * fl / (st["time_us"] * 1e-6) / 1e12})
    except Exception as ex:  # noqa: BLE001
        errors.append({"case": base, "error": repr(ex)[:400]})
    print(json.dumps(results[-1]) if results else "", flush=True)


def decode(b, h, hkv, kv, d, results, errors):
    bf = torch.bfloat16
    kv_bytes = 2 * b * hkv * kv * d * 2
    ns = sets_for(kv_bytes)
    sets = [(torch.randn(b, h, 1, d, device="cuda", dtype=bf), torch.randn(b, hkv, kv, d, device="cuda", dtype=bf),
             torch.randn(b, hkv, kv, d, device="cuda", dtype=bf)) for _ in range(ns)]
    fl = 4.0 * b * h * d * kv
    for backend in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION"):
        base = {"kind": "attention", "dtype": "bf16", "batch": b, "heads": h, "kv_heads": hkv, "q_len": 1,
                "kv_len": kv, "head_dim": d, "causal": False, "pass": "fwd", "backend": backend,
                "gqa_mode": "enable_gqa", "rot_sets": ns, "bytes": kv_bytes}
        try:
            with sdpa_kernel(getattr(SDPBackend, backend)), torch.no_grad():
                st = tt.measure(lambda r: F.scaled_dot_product_attention(*sets[r % ns], enable_gqa=True))
        except Exception as ex:  # noqa: BLE001
            errors.append({"case": base, "error": repr(ex)[:400]})
            continue
        results.append({**base, **st, "flops": fl, "tflops": fl / (st["time_us"] * 1e-6) / 1e12,
                        "gbps": kv_bytes / (st["time_us"] * 1e-6) / 1e9})
        print(json.dumps(results[-1]), flush=True)
        return


def check_flash(errors):
    """Flash output against an fp32 math reference on fresh inputs (relative Frobenius error)."""
    q, k, v = (torch.randn(2, 8, 256, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    rel = ((o.float() - ref).norm() / ref.norm()).item()
    return {"check": "flash causal vs fp32 math", "rel_error": rel, "bound": 1e-2, "ok": rel < 1e-2}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    meta = tt.provenance("calibration/microbench/attention_bench.py", VERSION)
    results, errors = [], []
    checks = [check_flash(errors)]
    print(checks, flush=True)
    if a.quick:
        prefill(2, 16, 16, 1024, 128, True, results, errors)
        decode(8, 32, 8, 1024, 128, results, errors)
    else:
        for s in (512, 1024, 2048, 4096, 8192):
            for causal in (True, False):
                prefill(16384 // s, 32, 32, s, 128, causal, results, errors)
        for s in (1024, 4096):
            prefill(16384 // s, 32, 32, s, 64, True, results, errors)
        prefill(8, 32, 8, 2048, 128, True, results, errors)
        for b in (8, 32, 128):
            for kv in (1024, 4096, 16384):
                decode(b, 32, 8, kv, 128, results, errors)
    meta["nvidia_smi_end"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active")
    doc = {"schema": "gcsim.microbench.v1", "meta": meta, "checks": checks, "results": results, "errors": errors}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    for r in results:
        print("%-4s b%-3d h%d/%d q%-5d kv%-5d d%d %-6s %9.1f us  %7.1f TF/s" % (
            r["pass"], r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"], r["head_dim"],
            "causal" if r["causal"] else "full", r["time_us"], r.get("tflops", float("nan"))))
    print("errors:", errors)


if __name__ == "__main__":
    main()
