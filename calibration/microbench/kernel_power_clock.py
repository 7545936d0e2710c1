#!/usr/bin/env python3
"""gcsim kernel_power_clock (issue 16): the SM clock and board power one kind of kernel settles at
when it runs back to back on one GPU, kernel by kernel, for the power model's terms: GEMMs, HBM
copies and adds, an add whose operands stay in L2, SiLU, cuDNN's attention forward (prefill) and
its decode; PyTorch's default kernels (SDPA picks cuDNN on Hopper). Each loop runs LOOP_S seconds
in two halves (step_power_clock.py's `sustained`): every figure is the second half's (`time_us`
CUDA events, `sm_clock_mhz` NVML's mean, `power_w` NVML's energy counter, `power_avg_w` its
averaged reading). Shapes are the serving model's (Llama-2-70B at TP2, 8192 tokens; decode batch
256 at KV 2048) and each loop's graph-op twin in gcsim is in `gcsim_op`.

    python3 kernel_power_clock.py -o OUT.json [--budget-s 150]
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
import torch.nn.functional as F  # noqa: E402
from step_power_clock import Nvml, sustained  # noqa: E402

VERSION = "kernel_power_clock 1.0"
LOOP_S = 3.0
IDLE_S = 2.0
BF16 = torch.bfloat16


def loops():
    """(name, gcsim graph op, setup -> call)."""
    def mm(m, n, k):
        def setup():
            a = torch.randn(m, k, device="cuda", dtype=BF16)
            b = torch.randn(k, n, device="cuda", dtype=BF16)
            return lambda: torch.mm(a, b)
        return setup

    def binary(elements, kind):
        def setup():
            x = torch.randn(elements, device="cuda", dtype=BF16)
            y = torch.randn(elements, device="cuda", dtype=BF16)
            z = torch.empty_like(x)
            if kind == "copy":
                return lambda: z.copy_(x)
            return lambda: torch.add(x, y, out=z)
        return setup

    def silu(elements):
        def setup():
            x = torch.randn(elements, device="cuda", dtype=BF16)
            return lambda: F.silu(x)
        return setup

    def sdpa(batch, heads, kv_heads, q_len, kv_len, causal):
        def setup():
            q = torch.randn(batch, heads, q_len, 128, device="cuda", dtype=BF16)
            k = torch.randn(batch, kv_heads, kv_len, 128, device="cuda", dtype=BF16)
            v = torch.randn(batch, kv_heads, kv_len, 128, device="cuda", dtype=BF16)
            return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        return setup

    big = 256 * 2**20  # elements: 512 MiB a bf16 tensor
    small = 2 * 2**20  # 4 MiB a tensor: x, y and z stay in the 50 MiB L2
    return [
        ("gemm_8192", "{op: gemm, m: 8192, n: 8192, k: 8192}", mm(8192, 8192, 8192)),
        ("gemm_gate_up_tp2_8192", "{op: gemm, m: 8192, n: 28672, k: 8192}", mm(8192, 28672, 8192)),
        ("copy_hbm", "{op: elementwise, kind: copy, elements: %d}" % big, binary(big, "copy")),
        ("add_hbm", "{op: elementwise, kind: add, elements: %d}" % big, binary(big, "add")),
        ("add_l2", "{op: elementwise, kind: add, elements: %d, inputs_in_l2: true}" % small, binary(small, "add")),
        ("silu_hbm", "{op: elementwise, kind: silu, elements: %d}" % (8192 * 14336), silu(8192 * 14336)),
        ("attn_prefill_8192", "{op: attention, kernel: cudnn, batch: 1, heads: 32, kv_heads: 4, q_len: 8192, "
         "kv_len: 8192, head_dim: 128, causal: true}", sdpa(1, 32, 4, 8192, 8192, True)),
        ("attn_decode_b256", "{op: attention, kernel: cudnn, batch: 256, heads: 32, kv_heads: 4, q_len: 1, "
         "kv_len: 2048, head_dim: 128}", sdpa(256, 32, 4, 1, 2048, False)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.kernel_power_clock.v1", "method": __doc__, "errors": [], "skipped": [],
           "idle": {}, "loops": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/kernel_power_clock.py"
    doc["meta"]["script_version"] = VERSION
    for name in ("kernel_power_clock.py", "step_power_clock.py"):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "rb") as fh:
            doc["meta"]["sha256"][name] = hashlib.sha256(fh.read()).hexdigest()
    doc["nvidia_smi_before"] = skb.clocks()
    nvml = Nvml()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    try:
        t0 = time.time()
        time.sleep(IDLE_S)
        doc["idle"] = nvml.window(t0 + 0.5, time.time())
        for name, op, setup in loops():
            rec = {"loop": name, "gcsim_op": op}
            if time.time() - skb.T0 > a.budget_s:
                doc["skipped"].append(rec)
                continue
            try:
                call = setup()
                sustained(rec, call, LOOP_S, nvml)
                del call
                skb.log("%-22s %10.1f us, %6.0f MHz, %5.0f W (avg %5.0f)" % (
                    name, rec["time_us"], rec.get("sm_clock_mhz", 0), rec.get("power_w") or 0,
                    rec.get("power_avg_w") or 0))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:800]
                rec["traceback"] = traceback.format_exc()[-2000:]
            doc["loops"].append(rec)
            torch.cuda.empty_cache()
            save()
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "main", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    finally:
        nvml.stop()
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    skb.log("done in %.1f s: %d loops, %d errors" % (time.time() - skb.T0, len(doc["loops"]), len(doc["errors"])))


if __name__ == "__main__":
    main()
