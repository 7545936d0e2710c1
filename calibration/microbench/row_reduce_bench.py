#!/usr/bin/env python3
"""Few-row reductions as a decode step launches them, kernel by kernel: PyTorch's reduce_kernel
(mean, amax, argmax over the last dimension) and cunn_SoftMaxForward, fp32, on 1-128 rows of
4096-128256 columns: how fast one CTA pulls its row(s) from HBM, and whether argmax's index
handling (not its bytes) sets its pace.

    python3 row_reduce_bench.py -o OUT.json

Why: gcsim's few-row reductions run one CTA per row (or per 16 rows), each at its warps' share of
an SM's HBM reach (KernelDesc::sm_pull_fraction); the RMSNorm's mean and the sampler's softmax
came within 0-16% of the serving step's profile, the argmax over 128256 logits did not (27.5 us
measured, 16.8 in gcsim; calibration/measurements/h100-x4/serving_graph_parts_2026-11-27).

Per (op, rows, cols): each op 30 times back to back inside torch.profiler, after 5 warm-up calls;
the kernels' profiled durations (median, min) and their names. The input is re-used (L2 keeps what
fits: rows x cols x 4 B under 50 MiB stays resident after the first call, as the step's logits do
not; `l2_flush` repeats the 8-row points with a 256 MiB write between calls). nvidia-smi's clocks
before and after.
"""
import time

T0 = time.time()

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

VERSION = "row_reduce_bench 1.0"
log = bench_common.make_log(T0)
ROWS = [1, 8, 32, 64, 128]
COLS = [4096, 8192, 32000, 128256]
OPS = {
    "mean": lambda x: x.mean(-1),
    "amax": lambda x: x.amax(-1),
    "argmax": lambda x: torch.argmax(x, dim=-1),
    "max_values_indices": lambda x: torch.max(x, dim=-1),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "sum": lambda x: x.sum(-1),
}


def profile(fn, reps, flush=None):
    from torch.profiler import ProfilerActivity, profile as prof_ctx
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with prof_ctx(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            if flush is not None:
                flush()
            fn()
        torch.cuda.synchronize()
    by = {}
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        by.setdefault(ev.name, []).append(ev.time_range.elapsed_us())
    return by


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    out = bench_common.ResultsFile(a.out, "gcsim.row_reduce.v1", __file__, VERSION, T0, indent=None,
                                   method=__doc__)
    doc = out.doc
    g = torch.Generator(device="cuda")
    g.manual_seed(7)
    big = torch.empty(64 * 1024 * 1024, device="cuda", dtype=torch.float32)

    def flush():
        big.fill_(1.0)

    for flush_l2 in (False, True):
        for cols in COLS:
            for rows in ROWS:
                if flush_l2 and rows != 8:
                    continue
                x = torch.randn(rows, cols, device="cuda", dtype=torch.float32, generator=g)
                for name, op in OPS.items():
                    try:
                        by = profile(lambda: op(x), 30, flush if flush_l2 else None)
                        kernels = [{"name": k[:120], "count": len(v), "median_us": statistics.median(v),
                                    "min_us": min(v)} for k, v in by.items() if "fill" not in k.lower()
                                   and "FillFunctor" not in k]
                        doc["results"].append({"op": name, "rows": rows, "cols": cols, "l2_flush": flush_l2,
                                               "kernels": kernels})
                        main_k = max(kernels, key=lambda k: k["median_us"]) if kernels else None
                        log("%-18s %4d x %-6d flush=%d  %s" % (
                            name, rows, cols, flush_l2,
                            "%.2f us %s" % (main_k["median_us"], main_k["name"][:50]) if main_k else "-"))
                    except Exception as ex:  # noqa: BLE001
                        doc["errors"].append({"op": name, "rows": rows, "cols": cols, "error": repr(ex)[:500]})
                out.save()
    out.finish(log)


if __name__ == "__main__":
    main()
