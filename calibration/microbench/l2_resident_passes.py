#!/usr/bin/env python3
"""gcsim l2_resident_passes (issue 16): eager PyTorch's elementwise kernels reading tensors a
kernel just wrote (as a decode step's or a short prefill's activations are) against the same
kernels reading tensors from HBM, over tensor sizes from 256 KiB to 256 MiB, on one GPU.

Ops (bf16, contiguous, what a Llama-style step's passes launch): `copy` (y.copy_(x): one read,
one write), `add` (torch.add(x, r, out=y): two reads, one write; the residual add), `silu`
(F.silu(x): PyTorch's generic elementwise kernel, one read, one write, an exponential a
element), `cast` (x.float(): 2 bytes read, 4 written).
States: `cold` = a read of a 1 GiB buffer (torch.sum: it leaves L2 holding clean lines of other
data), then the op; `warm` = the same read, then a fill_ of each input (the producer: the
inputs' lines dirty in L2, as a GEMM's output is), then the op. Each (op, size, state) is run
`repeats` times after a spin-kernel marker in one torch.profiler run; `op_us` is the median of
the op's profiled duration (its kernel, or the cudaMemcpy a bf16 copy_ runs; 1.0 timed the
fill or the flush for `copy`), `fill_us` the fills'. Footprint = bytes the op reads and
writes. The GPU's L2 size comes from torch (device properties) and is recorded.

    python3 l2_resident_passes.py -o OUT.json [--budget-s 150]
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

VERSION = "l2_resident_passes 1.1"
MIB = 2**20
SIZES = [MIB // 4 * 2**i for i in range(11)]  # bytes of one bf16 input: 256 KiB ... 256 MiB
FLUSH_BYTES = 2**30
REPEATS = 5
OPS = {
    # name: (inputs, bytes written per input byte, call)
    "copy": (1, 1.0, lambda x, r, y: y.copy_(x)),
    "add": (2, 1.0, lambda x, r, y: torch.add(x, r, out=y)),
    "silu": (1, 1.0, lambda x, r, y: F.silu(x)),
    "cast": (1, 2.0, lambda x, r, y: x.float()),
}


def case_calls(op, size, flush):
    """(rec, cold_fn, warm_fn) for one op and size: the op's tensors allocated once."""
    inputs, write_ratio, fn = OPS[op]
    n = size // 2
    dev = torch.device("cuda")
    x = torch.randn(n, device=dev, dtype=torch.bfloat16)
    r = torch.randn(n, device=dev, dtype=torch.bfloat16) if inputs == 2 else None
    y = torch.empty(n, device=dev, dtype=torch.bfloat16)
    rec = {"op": op, "elements": n, "input_bytes": size, "inputs": inputs,
           "footprint_bytes": int(size * inputs + size * write_ratio)}

    def cold():
        torch.sum(flush)
        fn(x, r, y)

    def warm():
        torch.sum(flush)
        x.fill_(0.5)
        if r is not None:
            r.fill_(0.25)
        fn(x, r, y)
    return rec, cold, warm


def profile_states(cases):
    """One profiler run over every case's cold and warm calls, REPEATS each after a marker."""
    def run_all():
        for _, cold, warm in cases:
            for fn in (cold, warm):
                for _ in range(REPEATS):
                    torch.cuda._sleep(skb.SPIN_CYCLES)
                    fn()
        torch.cuda._sleep(skb.SPIN_CYCLES)
    groups = skb.split_on_spins(skb.gpu_activities(run_all))
    if len(groups) != 2 * REPEATS * len(cases):
        return "%d profile groups for %d cases" % (len(groups), len(cases))
    for i, (rec, _, _) in enumerate(cases):
        for j, state in enumerate(("cold", "warm")):
            per = groups[(2 * i + j) * REPEATS:(2 * i + j + 1) * REPEATS]
            # The op's activity is the group's last: a kernel, or for a bf16 copy_ the
            # cudaMemcpy it runs (1.0 took the last kernel, the fill or the flush).
            kernels = [[e for e in g if e["cat"] in ("kernel", "gpu_memcpy")] for g in per]
            rec[state] = {
                "op_us": statistics.median(g[-1]["dur_us"] for g in kernels),
                "op_us_all": [g[-1]["dur_us"] for g in kernels],
                "fill_us": statistics.median(sum(e["dur_us"] for e in g[1:-1]) for g in kernels),
                "flush_us": statistics.median(g[0]["dur_us"] for g in kernels),
                "kernels": [{"name": e["name"], "dur_us": e["dur_us"]} for e in kernels[-1]],
            }
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.l2_resident_passes.v1", "method": __doc__, "errors": [], "skipped": [],
           "passes": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/l2_resident_passes.py"
    doc["meta"]["script_version"] = VERSION
    with open(os.path.abspath(__file__), "rb") as fh:
        doc["meta"]["sha256"]["l2_resident_passes.py"] = hashlib.sha256(fh.read()).hexdigest()
    props = torch.cuda.get_device_properties(0)
    doc["meta"]["l2_cache_bytes"] = getattr(props, "L2_cache_size", None)
    doc["nvidia_smi_before"] = skb.clocks()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    save()
    skb.log("%s on %s (L2 %s B), torch %s" % (VERSION, doc["meta"]["device_name"], doc["meta"]["l2_cache_bytes"],
                                             torch.__version__))
    try:
        skb.gpu_activities(lambda: torch.cuda._sleep(1000))  # CUPTI's first start is slow
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "profiler warm-up", "error": repr(ex)[:500]})
    flush = torch.ones(FLUSH_BYTES // 4, device="cuda", dtype=torch.float32)
    for op in OPS:
        if time.time() - skb.T0 > a.budget_s:
            doc["skipped"].append({"op": op, "why": "budget"})
            continue
        try:
            cases = [case_calls(op, s, flush) for s in SIZES]
            for _, cold, warm in cases:  # warm-up: allocations, kernels' first launch
                cold()
                warm()
            torch.cuda.synchronize()
            error = profile_states(cases)
            if error:
                doc["errors"].append({"section": op, "error": error})
            for rec, _, _ in cases:
                doc["passes"].append(rec)
                if "cold" in rec:
                    skb.log("%-4s %8.2f MiB in, footprint %8.2f MiB: cold %8.2f us (%5.2f TB/s), warm %8.2f us "
                            "(%5.2f TB/s), fills %8.2f us" % (
                                op, rec["input_bytes"] / MIB, rec["footprint_bytes"] / MIB, rec["cold"]["op_us"],
                                rec["footprint_bytes"] / rec["cold"]["op_us"] * 1e-6, rec["warm"]["op_us"],
                                rec["footprint_bytes"] / rec["warm"]["op_us"] * 1e-6, rec["warm"]["fill_us"]))
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": op, "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
        cases = None
        gc.collect()
        torch.cuda.empty_cache()
        save()
    doc["nvidia_smi_after"] = skb.clocks()
    save()
    skb.log("done in %.1f s: %d passes, %d errors" % (time.time() - skb.T0, len(doc["passes"]), len(doc["errors"])))


if __name__ == "__main__":
    main()
