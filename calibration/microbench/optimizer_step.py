"""The mixed-precision optimizer step's HBM passes, measured one by one.

gcsim models the step as the passes Megatron-LM's fp16/bf16 optimizers make each iteration
(workloads/training/optimizer_step.h), each a memory-bound kernel whose time is bytes / HBM rate:

    zero gradients            g16.zero_()                             write 2 B/param
    gradients to fp32         g32.copy_(g16)                          read 2, write 4
    unscale + inf check       _amp_foreach_non_finite_check_and_unscale_   read 4, write 4
    gradient norm             _foreach_norm(g32)                      read 4
    adam                      torch.optim.Adam(fused=True).step()     read 16, write 12
    master to model weights   w16.copy_(p32)                          read 4, write 2

Each pass runs over N parameters held two ways: one flat tensor (Megatron's contiguous gradient
buffer, the best case) and 512 tensors (a model's parameter list, through the multi-tensor
kernels), timed with CUDA events (torch_timing.measure). The output gives time and achieved
bandwidth per pass; tests/unit/test_optimizer_step.cpp compares them with gcsim's kernels.

    python3 optimizer_step.py -o OUT.json [--params 536870912]
"""
import argparse
import json

import torch

from torch_timing import measure, provenance

PASSES = [  # name, bytes read, bytes written per parameter
    ("zero gradients", 0, 2),
    ("gradients to fp32", 2, 4),
    ("unscale + inf check", 4, 4),
    ("gradient norm", 4, 0),
    ("adam", 16, 12),
    ("master to model weights", 4, 2),
]


def tensors(n, pieces, dtype, fill=None):
    size = n // pieces
    out = []
    for _ in range(pieces):
        t = torch.empty(size, device="cuda", dtype=dtype)
        if fill is None:
            t.uniform_(-1e-3, 1e-3)
        else:
            t.fill_(fill)
        out.append(t)
    return out


def run(n, pieces):
    g16 = tensors(n, pieces, torch.float16)
    g32 = tensors(n, pieces, torch.float32)
    p32 = [torch.nn.Parameter(t) for t in tensors(n, pieces, torch.float32)]
    w16 = tensors(n, pieces, torch.float16)
    for p, g in zip(p32, g32):
        p.grad = g
    opt = torch.optim.Adam(p32, lr=1e-4, fused=True)
    opt.step()  # creates m and v
    found_inf = torch.zeros(1, device="cuda")
    inv_scale = torch.full((1,), 1.0 / 65536.0, device="cuda")

    def zero(_):
        torch._foreach_zero_(g16)

    def to_fp32(_):
        torch._foreach_copy_(g32, g16)

    def unscale(_):
        torch._amp_foreach_non_finite_check_and_unscale_(g32, found_inf, inv_scale)

    def norm(_):
        torch._foreach_norm(g32)

    def adam(_):
        opt.step()

    def master_copy(_):
        torch._foreach_copy_(w16, p32)

    fns = [zero, to_fp32, unscale, norm, adam, master_copy]
    rows = []
    for (name, rd, wr), fn in zip(PASSES, fns):
        m = measure(fn, warmup=2, phase1_target_us=200_000.0, min_reps=5, max_reps=20, batches=5)
        bytes_moved = (rd + wr) * n
        m.update({"pass": name, "params": n, "tensors": pieces, "read_bytes_per_param": rd,
                  "write_bytes_per_param": wr, "gb_per_s": bytes_moved / (m["time_us"] * 1e-6) / 1e9})
        rows.append(m)
        print("%-24s %4d tensors %9.1f us  %7.1f GB/s" % (name, pieces, m["time_us"], m["gb_per_s"]), flush=True)
    del opt, p32, g16, g32, w16
    torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--params", type=int, default=1 << 29)
    a = ap.parse_args()
    rows = run(a.params, 1) + run(a.params, 512)
    out = {"provenance": provenance("calibration/microbench/optimizer_step.py", "optimizer_step 1.0"),
           "method": "torch_timing.measure: time_us = median spacing of back-to-back repetitions",
           "passes": rows}
    with open(a.o, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
