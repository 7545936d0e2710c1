#!/usr/bin/env python3
"""gcsim helper attn2 (issue 16): serving_kernels_bench.py's attention sweep only (causal GQA prefill,
batch 1, head dim 128, 16/2, 32/4, 64/8 heads, 512-8192 tokens, default / CUDNN / FLASH backends,
serving and contiguous layouts: kernel names and profiler durations), then the same small grids'
backward with the default backend (contiguous layout): torch.autograd.grad of the SDPA output,
profiler durations of the attention-class kernels and their names. One GPU.

    python3 serving_attention_sweep.py -o OUT.json [--budget-s 150]
"""
import time

import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_kernels_bench as skb  # noqa: E402  (its T0 is set at its import, before torch's)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_timing as tt  # noqa: E402


def section_backward(doc, save, budget_s):
    doc["attention_backward"] = []
    for tp in skb.ATT_TP:
        if time.time() - skb.T0 > budget_s:
            doc["skipped"].append({"section": "attention_backward", "tp": tp})
            continue
        calls = []
        for s in skb.ATT_TOKENS:
            rec = {"tp": tp, "q_heads": 64 // tp, "kv_heads": 8 // tp, "head_dim": 128, "tokens": s,
                   "layout": "contiguous", "backend": "default", "causal": True, "pass": "bwd"}
            try:
                q, k, v = (t.detach().requires_grad_(True) for t in skb.attention_inputs(tp, s, "contiguous"))
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                g = torch.randn_like(out)

                def call(out=out, q=q, k=k, v=v, g=g):
                    return torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
                call()
                torch.cuda.synchronize()
                rec["timing"] = tt.measure(lambda r, c=call: c())
                calls.append((rec, call))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:500]
            doc["attention_backward"].append(rec)
        try:
            error = skb.profile_calls(calls)
            if error:
                doc["errors"].append({"section": "attention_backward", "tp": tp, "error": error})
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": "attention_backward profile", "tp": tp, "error": repr(ex)[:500]})
        for rec in doc["attention_backward"]:
            if rec["tp"] == tp:
                skb.log("bwd TP%d s%5d %s us spacing, attention kernels %s us: %s" % (
                    tp, rec["tokens"], "%.1f" % rec["timing"]["time_us"] if "timing" in rec else rec.get("error"),
                    "%.1f" % rec["attention_kernel_us"] if "attention_kernel_us" in rec else "-",
                    [k["name"][:70] for k in rec.get("kernels", [])]))
        save()
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.serving_kernels.v1", "method": skb.__doc__, "sweep": __doc__, "model": skb.MODEL,
           "errors": [], "skipped": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["wrapper"] = "calibration/microbench/serving_attention_sweep.py (run as devrun/attn2/attn_sweep.py)"
    doc["nvidia_smi_before"] = skb.clocks()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    save()
    skb.log("attention sweep on %s, torch %s, cuDNN %s" % (doc["meta"]["device_name"], torch.__version__,
                                                          doc["meta"]["cudnn"]))
    try:
        skb.gpu_activities(lambda: torch.cuda._sleep(1000))
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "profiler warm-up", "error": repr(ex)[:500]})
    # section_attention stops starting TP sizes past 0.72 x its budget
    for name, fn in (("attention", lambda: skb.section_attention(doc, save, a.budget_s)),
                     ("attention_backward", lambda: section_backward(doc, save, a.budget_s * 0.8))):
        try:
            fn()
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": name, "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
        save()
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    skb.log("done in %.1f s, %d errors, %d skipped" % (time.time() - skb.T0, len(doc["errors"]), len(doc["skipped"])))


if __name__ == "__main__":
    main()
