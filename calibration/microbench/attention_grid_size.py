#!/usr/bin/env python3
"""SDPA with PyTorch's default backend (cuDNN on sm_90) at the strategy steps' attention shapes,
alone on one GPU: does a small grid cost more per unit of work than a large one, with nothing
beside it?

Why: strategy_step_bench.py's per-kernel table (calibration/measurements/h100-x4/
strategy_step_2026-11-26, rank 0) has the same attention work per rank in every strategy (512
(batch, head) pairs of 4096 causal tokens), but the cuDNN forward takes 3.79-3.84 ms where each
call is 2048 CTAs (TP4 b8 h8, TP2xDP2 b4 h16, DP4 b2 h32), 4.06-4.11 ms at 1024 (PP4, PP2xDP2:
b1 h32) and 4.64 ms at 512 (TP2xPP2: b1 h16); the backward 10.6 / 11.2 / 12.6 ms alike. In PP4
and TP2xPP2 every NCCL kernel is waited on before the next compute (Megatron's batched p2p, then
req.wait()), so nothing runs beside attention there: the extra time is the kernel's own. gcsim
charges tiles of one mean size in waves (attention_kernel_model.h), the same per unit of work at
every grid, which is TP2xPP2's -16% attention class. This measures the grids alone, causal (the
steps' case: query tiles of unequal work) and full (equal tiles: the control).

    CUDA_VISIBLE_DEVICES=0 python3 attention_grid_size.py -o OUT.json [--budget-s 100]

Points and timing are attention_families_bench.prefill's (CUDA events, back-to-back repetitions,
inputs rotated past the L2; backward timed alone); a profiler pass per shape records each kernel's
device time, so the main cuDNN kernel is told from its small pre/post kernels.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_families_bench as afb  # noqa: E402
import torch_timing as tt  # noqa: E402

VERSION = "attention_grid_size 1.0"
SEQ, HEAD_DIM = 4096, 128
# (batch, heads) per call: 2048, 1024, 512 and 256 CTAs of 128 query rows (forward).
GRIDS = ((8, 8), (2, 32), (1, 32), (1, 16), (1, 8), (4, 16))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=100.0, help="stop starting new points after this (s)")
    a = ap.parse_args()
    afb.STATE["out"], afb.STATE["budget"] = a.out, a.budget_s
    afb.torch.manual_seed(0)
    here = os.path.dirname(os.path.abspath(__file__))
    meta = tt.provenance("calibration/microbench/attention_grid_size.py", VERSION)
    for name in ("attention_grid_size.py", "attention_families_bench.py", "torch_timing.py"):
        meta[name.replace(".py", "_sha256")] = afb.sha256(os.path.join(here, name))
    meta["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    meta["nvidia_smi_before"] = afb.nvsmi()
    meta["nvml"] = afb.nvml_init()
    meta["budget_s"] = a.budget_s
    afb.STATE["doc"] = {"schema": "gcsim.microbench.v1", "meta": meta, "checks": [], "kernels": [],
                        "results": [], "errors": [], "skipped": []}
    afb.save()
    # Causal first (the steps' case), then the full-attention control.
    for causal in (True, False):
        for b, h in GRIDS:
            afb.prefill(b, h, h, SEQ, HEAD_DIM, causal, ("DEFAULT",))
    for b, h in GRIDS:
        if afb.over_budget():
            break
        afb.profile_kernels("b%d_h%d_causal" % (b, h), b, h, h, SEQ, HEAD_DIM, True, "DEFAULT")
    afb.STATE["doc"]["meta"]["nvidia_smi_after"] = afb.nvsmi()
    afb.STATE["doc"]["meta"]["elapsed_s"] = round(afb.elapsed(), 1)
    afb.save()
    print("done: %d results, %d errors, %d skipped, %.1f s" % (
        len(afb.STATE["doc"]["results"]), len(afb.STATE["doc"]["errors"]),
        len(afb.STATE["doc"]["skipped"]), afb.elapsed()))


if __name__ == "__main__":
    main()
