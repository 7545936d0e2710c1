#!/usr/bin/env python3
"""gcsim helper attn3 (issue 16): the serving model's small attention grids WITHOUT the causal mask
(batch 1, head dim 128, 16/2, 32/4, 64/8 heads, 512-8192 tokens, default SDPA backend, contiguous
layout): forward and backward (torch.autograd.grad of the output), spacing by CUDA events and the
profiler's kernels (names, durations) per call, as devrun/attn2/attn_sweep.py records the causal ones.
Held-out data for the cuDNN small-grid schedule (full attention: every CTA the same work). One GPU.

    python3 calibration/microbench/serving_attention_noncausal.py -o OUT.json [--budget-s 60]
"""
import time

import argparse
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # serving_kernels_bench.py beside it (devrun/attn3/ took it from devrun/attn2/)
import serving_kernels_bench as skb  # noqa: E402  (T0 at its import, before torch's)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_timing as tt  # noqa: E402


def section(doc, save, budget_s, pas):
    key = "noncausal_" + pas
    doc[key] = []
    for tp in skb.ATT_TP:
        if time.time() - skb.T0 > budget_s:
            doc["skipped"].append({"section": key, "tp": tp})
            continue
        calls = []
        for s in skb.ATT_TOKENS:
            rec = {"tp": tp, "q_heads": 64 // tp, "kv_heads": 8 // tp, "head_dim": 128, "tokens": s,
                   "layout": "contiguous", "backend": "default", "causal": False, "pass": pas}
            try:
                q, k, v = skb.attention_inputs(tp, s, "contiguous")
                if pas == "bwd":
                    q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=True)
                    g = torch.randn_like(out)

                    def call(out=out, q=q, k=k, v=v, g=g):
                        return torch.autograd.grad(out, (q, k, v), g, retain_graph=True)
                else:
                    def call(q=q, k=k, v=v):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=True)
                call()
                torch.cuda.synchronize()
                rec["timing"] = tt.measure(lambda r, c=call: c())
                calls.append((rec, call))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:500]
            doc[key].append(rec)
        try:
            error = skb.profile_calls(calls)
            if error:
                doc["errors"].append({"section": key, "tp": tp, "error": error})
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": key + " profile", "tp": tp, "error": repr(ex)[:500]})
        for rec in doc[key]:
            if rec["tp"] == tp:
                skb.log("%s TP%d s%5d %s us spacing, attention kernels %s us: %s" % (
                    key, tp, rec["tokens"], "%.1f" % rec["timing"]["time_us"] if "timing" in rec else rec.get("error"),
                    "%.1f" % rec["attention_kernel_us"] if "attention_kernel_us" in rec else "-",
                    [(k["name"][:60], round(k["dur_us"], 1)) for k in rec.get("kernels", [])]))
        save()
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=60.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.serving_kernels.v1", "sweep": __doc__, "model": skb.MODEL, "errors": [], "skipped": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["wrapper"] = "devrun/attn3/noncausal_sweep.py"
    doc["nvidia_smi_before"] = skb.clocks()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    save()
    skb.log("non-causal sweep on %s, torch %s, cuDNN %s" % (doc["meta"]["device_name"], torch.__version__,
                                                           doc["meta"]["cudnn"]))
    try:
        skb.gpu_activities(lambda: torch.cuda._sleep(1000))
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "profiler warm-up", "error": repr(ex)[:500]})
    for pas, frac in (("bwd", 0.6), ("fwd", 0.9)):
        try:
            section(doc, save, a.budget_s * frac, pas)
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": pas, "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
        save()
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    skb.log("done in %.1f s, %d errors, %d skipped" % (time.time() - skb.T0, len(doc["errors"]), len(doc["skipped"])))


if __name__ == "__main__":
    main()
