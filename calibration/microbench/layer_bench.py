#!/usr/bin/env python3
"""One GPT transformer layer, forward and backward, timed with PyTorch: the measurement the
`graph` workload of the same layer's kernels is checked against (issue 6, "one layer within 10%").

    python3 calibration/microbench/layer_bench.py -o OUT.json [--quick]

The layer (bf16 weights and activations, no linear biases, causal flash attention):
    y = LayerNorm(x); qkv = y W_qkv^T; o = SDPA(q, k, v, causal); x1 = x + o W_o^T
    z = LayerNorm(x1); out = x1 + GELU(z W_up^T) W_down^T           (W_up: 4h x h, exact GELU)
x is [batch, seq, hidden]. Timed: forward + backward (out.backward(g) with a fixed random g;
parameter and input grads set to None before each repetition, outside the timing, so no
accumulation kernels run). Each repetition is one event pair on a back-logged stream after a
50 ms rest (the GPU is measured rested, as the kernel microbenchmarks are); median of 15.
Also: the forward alone, the same fwd+bwd back to back without rests (sustained), and the list
of CUDA kernels of one fwd+bwd from torch.profiler (name, duration, order) so the graph workload
can name the same kernels.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "layer_bench 1.0"


class Layer:
    def __init__(self, hidden, heads, ffn):
        bf = torch.bfloat16
        init = lambda *s: (torch.randn(*s, device="cuda", dtype=bf) * s[-1] ** -0.5).requires_grad_()  # noqa: E731
        self.h, self.heads, self.ffn = hidden, heads, ffn
        self.ln1_w = (1 + 0.1 * torch.randn(hidden, device="cuda", dtype=bf)).requires_grad_()
        self.ln1_b = (0.1 * torch.randn(hidden, device="cuda", dtype=bf)).requires_grad_()
        self.ln2_w = (1 + 0.1 * torch.randn(hidden, device="cuda", dtype=bf)).requires_grad_()
        self.ln2_b = (0.1 * torch.randn(hidden, device="cuda", dtype=bf)).requires_grad_()
        self.w_qkv = init(3 * hidden, hidden)
        self.w_o = init(hidden, hidden)
        self.w_up = init(ffn, hidden)
        self.w_down = init(hidden, ffn)

    def params(self):
        return [self.ln1_w, self.ln1_b, self.ln2_w, self.ln2_b, self.w_qkv, self.w_o, self.w_up, self.w_down]

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        y = F.layer_norm(x, (h,), self.ln1_w, self.ln1_b)
        qkv = y @ self.w_qkv.t()
        q, k, v = qkv.view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4).unbind(0)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.transpose(1, 2).reshape(b, s, h)
        x1 = x + o @ self.w_o.t()
        z = F.layer_norm(x1, (h,), self.ln2_w, self.ln2_b)
        return x1 + F.gelu(z @ self.w_up.t()) @ self.w_down.t()


def run_config(name, batch, seq, hidden, heads, reps):
    torch.manual_seed(1)
    layer = Layer(hidden, heads, 4 * hidden)
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16).requires_grad_()
    g = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16)

    def clear():
        for p in layer.params() + [x]:
            p.grad = None

    def step():
        layer.forward(x).backward(g)

    for _ in range(3):
        clear()
        step()
    torch.cuda.synchronize()

    def timed(fn, rest_s, n):
        out = []
        for _ in range(n):
            clear()
            torch.cuda.synchronize()
            if rest_s:
                time.sleep(rest_s)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            tt.backlog(3000)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            out.append(s.elapsed_time(e) * 1000.0)
        return out

    fb = timed(step, 0.05, reps)
    with torch.no_grad():
        fw = timed(lambda: layer.forward(x), 0.05, reps)
    # sustained: back-to-back steps, one event pair each, no rests
    sustained = []
    clear()
    torch.cuda.synchronize()
    tt.backlog(3000)
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        sustained.append((s, e))
        clear()
    torch.cuda.synchronize()
    sustained = [a.elapsed_time(b) * 1000.0 for a, b in sustained]

    # kernel list of one fwd+bwd
    clear()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = []
    for ev in prof.events():
        if getattr(ev, "device_type", None) is not None and str(ev.device_type).endswith("CUDA"):
            kernels.append({"name": ev.name, "start_us": ev.time_range.start, "dur_us": ev.time_range.elapsed_us()})
    kernels.sort(key=lambda k: k["start_us"])
    t0 = kernels[0]["start_us"] if kernels else 0
    for k in kernels:
        k["start_us"] -= t0

    T, h, f = batch * seq, hidden, 4 * hidden
    flops_fwd = 2 * T * h * (3 * h + h + 2 * f) + 4 * batch * heads * (h // heads) * (seq * (seq + 1) / 2)
    rec = {"kind": "layer", "name": name, "batch": batch, "seq": seq, "hidden": hidden, "heads": heads,
           "ffn": f, "dtype": "bf16", "attention": "flash causal",
           "fwd_bwd_median_us": statistics.median(fb), "fwd_bwd_min_us": min(fb), "fwd_bwd_p90_us": tt.percentile(fb, 0.9),
           "fwd_median_us": statistics.median(fw), "fwd_min_us": min(fw),
           "fwd_bwd_sustained_median_us": statistics.median(sustained),
           "reps": reps, "fwd_bwd_all_us": fb, "fwd_all_us": fw, "sustained_all_us": sustained,
           "model_flops_fwd": flops_fwd, "model_flops_fwd_bwd": 3 * flops_fwd,
           "profiler_kernels": kernels, "profiler_kernel_sum_us": sum(k["dur_us"] for k in kernels),
           "profiler_span_us": (kernels[-1]["start_us"] + kernels[-1]["dur_us"]) if kernels else 0}
    print("%s: fwd+bwd %.1f us (min %.1f, p90 %.1f), fwd %.1f us, sustained %.1f us, %d kernels (sum %.1f us)" % (
        name, rec["fwd_bwd_median_us"], rec["fwd_bwd_min_us"], rec["fwd_bwd_p90_us"], rec["fwd_median_us"],
        rec["fwd_bwd_sustained_median_us"], len(kernels), rec["profiler_kernel_sum_us"]), flush=True)
    for k in kernels:
        print("   %9.1f %8.1f  %s" % (k["start_us"], k["dur_us"], k["name"][:110]))
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    meta = tt.provenance("calibration/microbench/layer_bench.py", VERSION)
    results = []
    if a.quick:
        results.append(run_config("quick_h1024_s512_b2", 2, 512, 1024, 8, 3))
    else:
        results.append(run_config("gpt_h4096_s2048_b2", 2, 2048, 4096, 32, 15))
        results.append(run_config("gpt_h2048_s2048_b2", 2, 2048, 2048, 16, 15))
    meta["nvidia_smi_end"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active")
    with open(a.out, "w") as f:
        json.dump({"schema": "gcsim.microbench.v1", "meta": meta, "checks": [], "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
