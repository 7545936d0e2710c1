#!/usr/bin/env python3
"""The host's cost per kind of Python call of the eager EP MoE layer (gcsim's `moe` op,
workloads/moe/moe_layer.h EagerHostCost and host_profile), read from the bench's own host
readings, not fitted to the layer times they are then checked against.

    python3 calibration/fit/moe_host_costs.py [--json]

Kinds (as calibration/microbench/moe_ep_bench.py calls them; L = local experts with rows):
  router   the router's 4 forward calls (GEMM, .float(), softmax, top-k)
  permute  the permute's index_select (forward, 1 call) and the backward's gather and scale
           (permute_bwd, 2 calls)
  launch   every other kernel call: the expert loop (4L forward, 9L backward), sort, unsort
           (1 each per pass), unpermute (3: zero, mul, index_add), unpermute_bwd (2), router_bwd (2)
  nccl     one NCCL collective call (all_to_all_single with its output allocation)
  sync     the counts' .tolist() once the exchange is done on the GPU

The 4-H100 machine ("h100"): calibration/measurements/h100-x4/moe_ep_2026-11-26, `host_us_rank0`:
time.perf_counter around each phase's Python call with the GPU back-logged (no launch waits for
the GPU), 36 points; each kind is the median over the points of its phases' host time per call.
nccl: dispatch, combine, combine_bwd, dispatch_bwd (one call each). sync: the forward's counts
phase holds an NCCL call, the exchange on the GPU, the wait for the other ranks' calls and the
.tolist(); the least (counts - that point's nccl) over the points (where the ranks arrived
together) minus the exchange (the least instrumented `sync_dispatch`, a 1-element all_reduce
with the ranks aligned) bounds the .tolist().

The H200 machines ("h200"): the H200 files carry no host reading; their instrumented phases
(CUDA events, `phases_us_per_rank`) time the host where the GPU waits for it: the 4K-token
points, where the kernels of these phases are short. router: the forward's first phase /4 (the
GPU idle at the pass start, its kernels < 10 us); permute: the permute phase (one call; its
gather moves 32-64 MB, 10-20 us on an H200); launch: the expert phases per launch of the
balanced 2-GPU points, forward and backward, the median (the only expert phases near the host's
bound: gcsim's GPU-only time of the phase is 49-87% of them, 76-100% on 4 GPUs and at the skewed
points' hot ranks, while the cold ranks' host runs ahead; hidden 2048 reads 30.5-32.9 us,
hidden 4096 21.2-22.1: the per-launch cost differs by layer shape, as on the H100 host, 37-38
against 29); nccl + sync: the counts
phase (NCCL call, exchange, .tolist(), the GPU idle before it) minus the exchange, split as
the H100 host splits it (no H200 reading separates the two). Medians over every rank of both
files' 4K points.
"""
import argparse
import json
import os
import statistics as st

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "measurements")


def load(machine):
    with open(os.path.join(ROOT, machine, "moe_ep_2026-11-26", "moe_ep.json")) as f:
        return json.load(f)["results"]


def local_experts(r):
    return sum(1 for n in r["received_per_local_expert"] if n > 0)


def least_sync_phase(results):
    return min(p["sync_dispatch"] for r in results for p in r["phases_us_per_rank"]["fwd"])


def h100():
    rs = load("h100-x4")
    k = {"router": [], "permute": [], "launch": [], "nccl": []}
    counts_minus_nccl = []
    for r in rs:
        f, b = r["host_us_rank0"]["fwd"], r["host_us_rank0"]["bwd"]
        L = local_experts(r)
        k["router"].append(f["router"] / 4)
        k["permute"].append((f["permute"] + b["permute_bwd"]) / 3)
        other = (f["experts"] + b["experts_bwd"] + f["sort"] + f["unsort"] + f["unpermute"] + b["sort_bwd"] +
                 b["unsort_bwd"] + b["unpermute_bwd"] + b["router_bwd"])
        k["launch"].append(other / (13 * L + 1 + 1 + 3 + 1 + 1 + 2 + 2))
        nccl = (f["dispatch"] + f["combine"] + b["combine_bwd"] + b["dispatch_bwd"]) / 4
        k["nccl"].append(nccl)
        counts_minus_nccl.append(f["counts"] - nccl)
    out = {n: st.median(v) for n, v in k.items()}
    out["sync"] = min(counts_minus_nccl) - least_sync_phase(rs)
    out["spread"] = {n: (min(v), max(v)) for n, v in k.items()}
    return out


def h200(sync_share):
    router, permute, launch, counts, exch = [], [], [], [], []
    for machine in ("h200-x2", "h200-x4"):
        rs = load(machine)
        exch.append(least_sync_phase(rs))
        for r in rs:
            if r["tokens_per_rank"] != 4096:
                continue
            L = local_experts(r)
            for f, b in zip(r["phases_us_per_rank"]["fwd"], r["phases_us_per_rank"]["bwd"]):
                router.append(f["router"] / 4)
                permute.append(f["permute"])
                counts.append(f["counts"])
                if r["skew"] == 0.0 and r["ranks"] == 2:
                    launch += [f["experts"] / (4 * L), b["experts_bwd"] / (9 * L)]
    nccl_sync = st.median(counts) - min(exch)
    return {"router": st.median(router), "permute": st.median(permute), "launch": st.median(launch),
            "nccl": nccl_sync * (1 - sync_share), "sync": nccl_sync * sync_share,
            "spread": {"router": (min(router), max(router)), "permute": (min(permute), max(permute)),
                       "launch": (min(launch), max(launch)), "counts": (min(counts), max(counts))}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    h = h100()
    share = h["sync"] / (h["nccl"] + h["sync"])
    g = h200(share)
    if a.json:
        print(json.dumps({"h100": h, "h200": g}, indent=1))
        return
    print("| kind | h200 (µs) | h100 (µs) |\n|---|---:|---:|")
    for n in ("router", "permute", "launch", "nccl", "sync"):
        print("| %s | %.1f | %.1f |" % (n, g[n], h[n]))
    print("spread h100:", {n: "%.0f-%.0f" % v for n, v in h["spread"].items()})
    print("spread h200:", {n: "%.0f-%.0f" % v for n, v in g["spread"].items()})


if __name__ == "__main__":
    main()
