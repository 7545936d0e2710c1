#!/usr/bin/env python3
"""The host's cost of each Python call of the eager EP MoE layer (moe_ep_bench.py's calls, one
GPU, no NCCL), per layer shape: is the per-launch cost a property of the kind of call, or of the
shape too? (gcsim issue 22: the expert loop read 31 us per launch at hidden 2048 and 22 at
hidden 4096 on the 2-H200 machine, 37-38 against 29 on the H100 host.)

    python3 calibration/microbench/moe_host_calls.py -o OUT.json [--budget-s 80]

Each call is timed alone with time.perf_counter, REPS times in a row, with the GPU back-logged
by torch.cuda._sleep before the batch (so no call waits for the GPU: the host's own time); the
median per call is recorded. Calls, as moe_ep_bench.py writes them: router (x @ wr.t(),
.float(), softmax, topk), permute (x.index_select), sort (index_select of the received rows),
the expert loop's forward (fc1 xe @ w1, silu on the strided half, mul, fc2 torch.mm(out=)) and
backward (h.t() @ ge, ge @ w2.t(), the SwiGLU backward's five kernels in three calls, xe.t() @ da,
torch.mm(da, w1.t(), out=)), unpermute (zero_, mul, index_add_).
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "moe_host_calls 1.0"
BF = torch.bfloat16
REPS = 60


def time_call(fn, reps=REPS):
    """Median host µs of fn() over reps calls, the GPU back-logged for all of them."""
    fn()  # warm: allocator blocks, cuBLAS heuristics
    torch.cuda.synchronize()
    tt.backlog(100_000.0)  # 100 ms of GPU sleep covers reps calls at <= 1 ms each
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(out)


def shape_calls(H, Fh, E, n, T):
    """{call: fn} for one shape: n rows per expert, T tokens, E router experts."""
    d = "cuda"
    rnd = lambda *s: torch.randn(*s, device=d, dtype=BF) * s[-1] ** -0.5  # noqa: E731
    x, wr = rnd(T, H), rnd(E, H)
    idx = torch.randint(0, T, (2 * T,), device=d)
    probs = torch.rand(2 * T, device=d, dtype=BF)
    xe, w1, w2 = rnd(n, H), rnd(H, 2 * Fh), rnd(Fh, H)
    a = xe @ w1
    h = F.silu(a[:, :Fh]) * a[:, Fh:]
    y = torch.empty(n, H, device=d, dtype=BF)
    ge = rnd(n, H)
    dh = ge @ w2.t()
    da = torch.cat([dh, dh], dim=1)
    gx = torch.empty(n, H, device=d, dtype=BF)
    out = torch.empty(T, H, device=d, dtype=BF)
    comb = rnd(2 * T, H)
    logits = x @ wr.t()
    p = torch.softmax(logits.float(), dim=-1)
    return {
        "router_gemm": lambda: x @ wr.t(),
        "router_float": lambda: logits.float(),
        "router_softmax": lambda: torch.softmax(p, dim=-1),
        "router_topk": lambda: torch.topk(p, 2, dim=-1),
        "permute_index_select": lambda: x.index_select(0, idx),
        "sort_index_select": lambda: comb.index_select(0, idx),
        "fc1": lambda: xe @ w1,
        "silu_strided": lambda: F.silu(a[:, :Fh]),
        "mul_strided": lambda: h * a[:, Fh:],
        "fc2_out": lambda: torch.mm(h, w2, out=y),
        "fc2_wgrad": lambda: h.t() @ ge,
        "fc2_dgrad": lambda: ge @ w2.t(),
        "silu_backward": lambda: torch.ops.aten.silu_backward(dh * a[:, Fh:], a[:, :Fh]),
        "swiglu_cat": lambda: torch.cat([dh, dh * F.silu(a[:, :Fh])], dim=1),
        "fc1_wgrad": lambda: xe.t() @ da,
        "fc1_dgrad_out": lambda: torch.mm(da, w1.t(), out=gx),
        "unpermute_zero": lambda: out.zero_(),
        "unpermute_mul": lambda: comb * probs.unsqueeze(1),
        "unpermute_index_add": lambda: out.index_add_(0, idx, comb),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=80.0)
    a = ap.parse_args()
    t0 = time.perf_counter()
    torch.cuda.set_device(0)
    meta = tt.provenance("calibration/microbench/moe_host_calls.py", VERSION)
    try:
        with open(os.path.abspath(__file__), "rb") as f:
            meta["script_sha256"] = hashlib.sha256(f.read()).hexdigest()
    except Exception as ex:  # noqa: BLE001
        meta["script_sha256"] = "unreadable: %r" % ex
    meta["reps"] = REPS
    try:
        meta["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
    except Exception as ex:  # noqa: BLE001
        meta["nccl"] = "unknown: %r" % ex
    meta["nvidia_smi_before"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
    results = []

    def write():
        doc = {"schema": "gcsim.microbench.v1", "meta": meta, "results": results,
               "elapsed_s": time.perf_counter() - t0}
        text = json.dumps(doc, indent=1)
        with open(a.out, "w") as f:
            f.write(text)

    # (hidden, expert ffn, router experts) as in moe_ep_bench.py's shapes; rows per expert.
    for H, Fh, E in ((2048, 1408, 8), (4096, 2048, 16), (2048, 1024, 32)):
        for n in (1024, 2048, 4096):
            if time.perf_counter() - t0 > a.budget_s:
                print("budget reached", flush=True)
                break
            rec = {"hidden": H, "expert_ffn": Fh, "experts": E, "rows_per_expert": n, "tokens": 4096,
                   "host_us": {}}
            try:
                calls = shape_calls(H, Fh, E, n, 4096)
                for name, fn in calls.items():
                    try:
                        rec["host_us"][name] = time_call(fn)
                    except Exception as ex:  # noqa: BLE001
                        rec["host_us"][name] = None
                        rec.setdefault("errors", {})[name] = repr(ex)
                del calls
                torch.cuda.empty_cache()
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)
            print("h%d f%d n%d: %s" % (H, Fh, n, {k: (round(v, 1) if v else v) for k, v in rec["host_us"].items()}),
                  flush=True)
            results.append(rec)
            write()
    meta["nvidia_smi_after"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
    write()


if __name__ == "__main__":
    main()
