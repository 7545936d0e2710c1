#!/usr/bin/env python3
"""The host's cost per kind of Python call of the eager EP MoE layer (gcsim's `moe` op,
workloads/moe/moe_layer.h EagerHostCost and host_profile), read from the bench's own host
readings, not fitted to the layer times they are then checked against.

    python3 calibration/fit/moe_host_costs.py [--json]

Kinds (as calibration/microbench/moe_ep_bench.py calls them; L = local experts with rows):
  router   the router's 4 forward calls (GEMM, .float(), softmax, top-k)
  permute  the permute's index_select (forward, 1 call) and the backward's gather and scale
           (permute_bwd, 2 calls)
  expert   one kernel call of the expert loop (4L forward, 9L backward), and the loop's fixed
           cost per pass, loop_fwd / loop_bwd (its first iteration and output allocation)
  launch   every other kernel call: sort, unsort (1 each per pass), unpermute (3: zero, mul,
           index_add), unpermute_bwd (2), router_bwd (2)
  nccl     one NCCL collective call (all_to_all_single with its output allocation)
  sync     the counts' .tolist() once the exchange is done on the GPU

The expert loop (calibration/measurements/h100-x2/moe_host_shapes_2026-11-26,
calibration/microbench/moe_host_shapes.py): the bench's own loop on one GPU, nine cases of three
layer shapes at L = 2, 4, 8 interleaved over 120 rounds, costs the host a fixed part per pass plus
one cost per call, whatever the shape: `loop_structure` fits host = fixed + per_call x calls over
the cases and gives the fixed part in calls' worth (F_fwd, F_bwd); fitted on the hidden-2048 /
FFN-1408 cases alone it predicts the other shapes' cases (held out) within a few percent. Each
machine's per-call cost c then comes from that machine's own loop readings as reading / (k L + F)
(k = 4 forward, 9 backward), and its loop costs are F x c.

The 4-H100 machine ("h100", the first reading; gcsim's `h100` and `h100-fast` are now read from two later
machines' plain passes by calibration/fit/moe_host_timeline_read.py --profile; this reading was
near the slow one's, `h100`):
calibration/measurements/h100-x4/moe_ep_2026-11-26, `host_us_rank0`:
time.perf_counter around each phase's Python call with the GPU back-logged (no launch waits for
the GPU), 36 points; each kind is the median over the points of its phases' host time per call
(expert: of both passes' loop readings / (k L + F)).
nccl: dispatch, combine, combine_bwd, dispatch_bwd (one call each). sync: the forward's counts
phase holds an NCCL call, the exchange on the GPU, the wait for the other ranks' calls and the
.tolist(); the least (counts - that point's nccl) over the points (where the ranks arrived
together) minus the exchange (the least instrumented `sync_dispatch`, a 1-element all_reduce
with the ranks aligned) bounds the .tolist().

The H200 machines ("h200"): the H200 files carry no host reading; their instrumented phases
(CUDA events, `phases_us_per_rank`) time the host where the GPU waits for it: the 4K-token
points, where the kernels of these phases are short. router: the forward's first phase /4 (the
GPU idle at the pass start, its kernels < 10 us); permute: the permute phase (one call; its
gather moves 32-64 MB, 10-20 us on an H200); expert: the expert phases of the balanced 2-GPU
hidden-2048 points (L = 4), forward and backward, / (k L + F), the median (the only expert phases
bound by the host: gcsim's GPU-only time of the phase is 49-60% of them; at hidden 4096, L = 8,
80-87%, and on 4 GPUs and at the skewed points' hot ranks 76-100%: GPU-bound, not host
readings); launch: the same per-call cost (no H200 reading of a call outside the loop); nccl +
sync: the counts phase (NCCL call, exchange, .tolist(), the GPU idle before it) minus the
exchange, split as the H100 host splits it (no H200 reading separates the two). Medians over
every rank of both files' 4K points.
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


def loop_structure(held_out=False):
    """The expert loop's fixed cost per pass in calls' worth, forward and backward, from the
    microbench: least squares of host = fixed + per_call x calls over its cases. held_out: fit
    on the hidden-2048 / FFN-1408 cases, return the other cases' relative errors too."""
    with open(os.path.join(ROOT, "h100-x2", "moe_host_shapes_2026-11-26", "moe_host_shapes.json")) as f:
        cases = json.load(f)["cases"]
    out = {}
    for pas, k in (("fwd", 4), ("bwd", 9)):
        pts = [(c["L"] * k, c["whole"]["host_%s_us" % pas], c["hidden"] == 2048 and c["expert_ffn"] == 1408)
               for c in cases.values() if "whole" in c]
        fit_pts = [(x, y) for x, y, own in pts if own or not held_out]
        n = len(fit_pts)
        mx, my = sum(x for x, _ in fit_pts) / n, sum(y for _, y in fit_pts) / n
        per_call = (sum((x - mx) * (y - my) for x, y in fit_pts) / sum((x - mx) ** 2 for x, _ in fit_pts))
        fixed = my - per_call * mx
        out[pas] = {"fixed_us": fixed, "per_call_us": per_call, "F": fixed / per_call}
        if held_out:
            out[pas]["held_out_err"] = [(fixed + per_call * x) / y - 1 for x, y, own in pts if not own]
    return out


def h100(F):
    rs = load("h100-x4")
    k = {"router": [], "permute": [], "launch": [], "nccl": [], "expert": []}
    counts_minus_nccl = []
    for r in rs:
        f, b = r["host_us_rank0"]["fwd"], r["host_us_rank0"]["bwd"]
        L = local_experts(r)
        k["router"].append(f["router"] / 4)
        k["permute"].append((f["permute"] + b["permute_bwd"]) / 3)
        other = (f["sort"] + f["unsort"] + f["unpermute"] + b["sort_bwd"] + b["unsort_bwd"] + b["unpermute_bwd"] +
                 b["router_bwd"])
        k["launch"].append(other / (1 + 1 + 3 + 1 + 1 + 2 + 2))
        k["expert"] += [f["experts"] / (4 * L + F["fwd"]), b["experts_bwd"] / (9 * L + F["bwd"])]
        nccl = (f["dispatch"] + f["combine"] + b["combine_bwd"] + b["dispatch_bwd"]) / 4
        k["nccl"].append(nccl)
        counts_minus_nccl.append(f["counts"] - nccl)
    out = {n: st.median(v) for n, v in k.items()}
    out["sync"] = min(counts_minus_nccl) - least_sync_phase(rs)
    out["loop_fwd"], out["loop_bwd"] = F["fwd"] * out["expert"], F["bwd"] * out["expert"]
    out["spread"] = {n: (min(v), max(v)) for n, v in k.items()}
    return out


def h200(sync_share, F):
    router, permute, expert, counts, exch = [], [], [], [], []
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
                if r["skew"] == 0.0 and r["ranks"] == 2 and r["hidden"] == 2048:
                    expert += [f["experts"] / (4 * L + F["fwd"]), b["experts_bwd"] / (9 * L + F["bwd"])]
    nccl_sync = st.median(counts) - min(exch)
    c = st.median(expert)
    return {"router": st.median(router), "permute": st.median(permute), "launch": c, "expert": c,
            "loop_fwd": F["fwd"] * c, "loop_bwd": F["bwd"] * c,
            "nccl": nccl_sync * (1 - sync_share), "sync": nccl_sync * sync_share,
            "spread": {"router": (min(router), max(router)), "permute": (min(permute), max(permute)),
                       "expert": (min(expert), max(expert)), "counts": (min(counts), max(counts))}}


def host_states():
    """The 4-H100 host's own spread: per point, rank 0's speed (the median over its 11 kinds of
    call outside the loop of cost / that kind's median over the points), and the ranks' host
    time of one pass, slowest / fastest. Returns (speeds, fwd spreads, bwd spreads)."""
    rs = load("h100-x4")
    per = []
    for r in rs:
        f, b = r["host_us_rank0"]["fwd"], r["host_us_rank0"]["bwd"]
        per.append({"router": f["router"] / 4, "permute": f["permute"], "permute_bwd": b["permute_bwd"] / 2,
                    "sort": f["sort"], "unsort": f["unsort"], "sort_bwd": b["sort_bwd"],
                    "unsort_bwd": b["unsort_bwd"], "unpermute": f["unpermute"] / 3,
                    "unpermute_bwd": b["unpermute_bwd"] / 2, "router_bwd": b["router_bwd"] / 2,
                    "nccl": (f["dispatch"] + f["combine"] + b["combine_bwd"] + b["dispatch_bwd"]) / 4})
    med = {k: st.median(p[k] for p in per) for k in per[0]}
    speeds = [st.median(p[k] / med[k] for k in p) for p in per]
    spread = {pas: [max(x[pas] for x in r["host_pass_us_per_rank"]) / min(x[pas] for x in r["host_pass_us_per_rank"])
                    for r in rs] for pas in ("fwd", "bwd")}
    # Each kind's cost at the point's speed, per layer shape (median over its points): the
    # expert loop's per-call reading against the other kinds.
    loop = [(r["host_us_rank0"]["fwd"]["experts"] / (4 * local_experts(r))) for r in rs]
    loop_med = st.median(loop)
    by_shape = {}
    for r, p, v, sp in zip(rs, per, loop, speeds):
        sh = by_shape.setdefault("h%d/f%d/L%d" % (r["hidden"], r["expert_ffn"], local_experts(r)),
                                 {"loop": [], "other": {k: [] for k in p}})
        sh["loop"].append(v / (sp * loop_med))
        for k in p:
            sh["other"][k].append(p[k] / (sp * med[k]))
    residual = {}
    for n, v in by_shape.items():
        other = [st.median(x) for x in v["other"].values()]
        residual[n] = (st.median(v["loop"]), min(other), max(other))
    return speeds, spread["fwd"], spread["bwd"], residual


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    loop = loop_structure()
    F = {p: loop[p]["F"] for p in loop}
    h = h100(F)
    share = h["sync"] / (h["nccl"] + h["sync"])
    g = h200(share, F)
    if a.json:
        print(json.dumps({"loop": loop, "h100": h, "h200": g}, indent=1))
        return
    for p in ("fwd", "bwd"):
        print("loop %s: %.1f us + %.2f us per call (F = %.2f calls)" % (
            p, loop[p]["fixed_us"], loop[p]["per_call_us"], loop[p]["F"]))
    ho = loop_structure(held_out=True)
    for p in ("fwd", "bwd"):
        print("  fitted on hidden 2048 / FFN 1408 alone: F = %.2f; the other shapes' cases %s" % (
            ho[p]["F"], " ".join("%+.1f%%" % (100 * e) for e in ho[p]["held_out_err"])))
    print("| kind | h200 (µs) | h100 (µs) |\n|---|---:|---:|")
    for n in ("router", "permute", "launch", "expert", "loop_fwd", "loop_bwd", "nccl", "sync"):
        print("| %s | %.1f | %.1f |" % (n, g[n], h[n]))
    speeds, sf, sb, residual = host_states()
    print("h100 host, rank 0's speed per point (1 = the median): %.2f-%.2f; ranks' issue of one pass, "
          "slowest / fastest: forward up to %.2f, backward up to %.2f" % (min(speeds), max(speeds), max(sf), max(sb)))
    for n, (lp, lo, hi) in residual.items():
        print("  at the point's speed, %s: the loop's forward per call %.2f of its median; the other kinds' "
              "per-kind medians %.2f-%.2f" % (n, lp, lo, hi))
    print("spread h100:", {n: "%.0f-%.0f" % v for n, v in h["spread"].items()})
    print("spread h200:", {n: "%.0f-%.0f" % v for n, v in g["spread"].items()})


if __name__ == "__main__":
    main()
