#!/usr/bin/env python3
"""Reads calibration/microbench/moe_host_timeline.py's output: per point, block and rank the pass
times, the host's issue of each pass, the host's cost per kind of Python call (the kinds of
gcsim's cluster.host, workloads/moe/moe_layer.h EagerHostCost), and, where CUDA events were
recorded after each call, how long the GPU waited for the host.

    python3 calibration/fit/moe_host_timeline_read.py FILE.json [--costs] [--profile] [--json]

Kinds, from the call labels (moe_host_timeline.py stamps after every call):
  router   router_mm, router_float, router_softmax, router_topk
  permute  permute, permute_bwd_gather, permute_bwd_scale
  nccl     counts_a2a, dispatch, combine, combine_bwd, dispatch_bwd (the output's allocation with it)
  launch   sort, unsort, unpermute_*, sort_bwd, unsort_bwd, unpermute_bwd_*, router_bwd_*
  expert   a kernel call of the expert loop after its first expert (fc1 silu mul fc2; bwd 9 calls)
  loop_fwd / loop_bwd  the loop's fixed cost: its output allocation and first expert's calls
           beyond k calls' worth
  sync     the counts' .tolist(): its return on the host minus the exchange's end on the GPU
           (events blocks only: both clocks start at the pass's start event, recorded on an
           idle GPU right after the host's t0, so the difference holds that launch's latency)
A call's host time is the median over a block's rounds of the time since the previous stamp
(the previous call's return): Python between the calls included; a kind's cost per call is its
calls' sum over their number, per rank and block (expert: the loop's calls after its first
expert).

--profile: a gcsim `cluster.host` profile (workloads/moe/moe_layer.cpp: `h100x4-20261126-2313`, once
`h100`, from moe_host_timeline_4k_2026-11-26; `h100x4-20261126-2212`, once `h100-fast`, from
moe_host_timeline_2026-11-26; a user calibrates the host with eager_host_bench.py and
`gcsim calibrate --host-fit` instead) as read from the file: each
kind's cost the median over the plain blocks' ranks (sync: over the events blocks') of the fit
points (hidden 2048 / FFN 1408 / 8 experts, every token count; the other two shapes and
calibration/measurements/h100-x4/moe_ep_2026-11-26 are held out), and `slowest_rank`, the
median over those plain blocks of the slowest rank's expert-loop cost per call over the ranks'
median (every all-to-all waits for the last rank's launch, so a layer issues at its slowest
rank's pace).
"""
import argparse
import json
import statistics as st

KINDS = {
    "router": ("router_mm", "router_float", "router_softmax", "router_topk"),
    "permute": ("permute", "permute_bwd_gather", "permute_bwd_scale"),
    "nccl": ("counts_a2a", "dispatch", "combine", "combine_bwd", "dispatch_bwd"),
    "launch": ("sort", "unsort", "unpermute_zero", "unpermute_mul", "unpermute_index_add", "sort_bwd",
               "unsort_bwd", "unpermute_bwd_zero", "unpermute_bwd_index_add", "router_bwd_dgrad",
               "router_bwd_wgrad"),
}
LOOP_FWD = ("fc1", "silu", "mul", "fc2")
LOOP_BWD = ("wgrad_fc2", "dgrad_fc2", "bwd_mul", "silu_backward", "bwd_silu", "bwd_mul2", "cat", "wgrad_fc1",
            "dgrad_fc1")


def mean(v):
    return sum(v) / len(v) if v else None


def call_costs(b):
    """One rank's block -> {kind: per-call host us}: the kind's calls' host time over their
    number (what the model charges them together; a pass's first call costs more)."""
    labels, cost = b["labels"], b["host_call_us"]
    out = {}
    for kind, names in KINDS.items():
        out[kind] = mean([c for n, c in zip(labels, cost) if n in names])
    for pas, names, alloc in (("fwd", LOOP_FWD, "experts_alloc"), ("bwd", LOOP_BWD, "experts_bwd_alloc")):
        k = len(names)
        idx = [i for i, n in enumerate(labels) if n in names and (i == 0 or labels[i - 1] != "backlog")]
        # the loop's calls, in order, after its allocation
        start = labels.index(alloc)
        loop = [i for i in idx if i > start][:]
        per_expert = [loop[j:j + k] for j in range(0, len(loop), k)]
        later = [cost[i] for grp in per_expert[1:] for i in grp]
        out["expert_" + pas] = mean(later)
        first = cost[start] + sum(cost[i] for i in per_expert[0]) if per_expert else None
        out["loop_" + pas] = (first - k * out["expert_" + pas]) if later else None
        out["calls_" + pas] = len(loop)
        out["loop_host_" + pas] = cost[start] + sum(cost[i] for i in loop)
    return out


def gpu_waits(b):
    """Events block, one rank -> per pass: the GPU's idle time waiting for a launch (sum over calls
    of host return - the GPU's end of the call before, where positive), the GPU's end of the pass,
    and the .tolist()'s return after the exchange's end on the GPU."""
    if "gpu_at_us" not in b:
        return None
    labels, h, g, nf = b["labels"], b["host_at_us"], b["gpu_at_us"], b["n_fwd_calls"]
    res = {}
    for pas, rng, g0 in (("fwd", range(0, nf), 0.0), ("bwd", range(nf, len(labels)), b["gpu_bwd_start_us"])):
        idle, prev = 0.0, g0
        for i in rng:
            if labels[i] in ("counts_host", "backlog"):
                continue
            idle += max(0.0, h[i] - prev) if labels[i] != "counts_tolist" else 0.0
            prev = max(prev, g[i])
        res[pas + "_gpu_waits_us"] = idle
    i = labels.index("counts_tolist")
    res["sync_us"] = h[i] - g[labels.index("counts_a2a")]
    res["tolist_wait_us"] = b["host_call_us"][i]
    return res


def table(doc):
    for r in doc["results"]:
        print("== %s (received per local expert on rank 0: %s)" % (r["name"], r.get("received_per_local_expert")))
        for blk in r["blocks"]:
            pr = blk["per_rank"]
            if any("error" in p for p in pr):
                print("  %s:%s failed: %s" % (blk["mode"], blk["affinity"], [p.get("error") for p in pr]))
                continue
            cells = []
            for p in pr:
                w = gpu_waits(p)
                cells.append("r%d cpu%s fwd %5.0f bwd %5.0f | host %5.0f/%5.0f%s" % (
                    p["rank"], ",".join(str(c) for c in p["cpus"][:3]), p["fwd_us_median"], p["bwd_us_median"],
                    p["host_fwd_end_us"], p["host_bwd_end_us"] - p["host_bwd_start_us"],
                    (" | gpu waits %4.0f/%4.0f sync %3.0f" % (w["fwd_gpu_waits_us"], w["bwd_gpu_waits_us"],
                                                              w["sync_us"])) if w else ""))
            print("  %-9s %s" % (blk["mode"] + ":" + blk["affinity"], "\n            ".join(cells)))


def costs(doc):
    """Per block kind (mode:affinity), every rank and point: per-call costs, medians and spread."""
    agg = {}
    for r in doc["results"]:
        for blk in r["blocks"]:
            key = blk["mode"] + ":" + blk["affinity"]
            for p in blk["per_rank"]:
                if "error" in p:
                    continue
                c = call_costs(p)
                w = gpu_waits(p)
                if w:
                    c["sync"] = w["sync_us"]
                for k, v in c.items():
                    if v is not None and not k.startswith(("calls_", "loop_host_")):
                        agg.setdefault(key, {}).setdefault(k, []).append(v)
    return {key: {k: (st.median(v), min(v), max(v), len(v)) for k, v in d.items()} for key, d in agg.items()}


def is_fit_point(r):
    return r["hidden"] == 2048 and r["expert_ffn"] == 1408 and r["experts"] == 8


def loop_call_us(c):
    """A rank's expert-loop cost per call over both passes."""
    return ((c["expert_fwd"] * c["calls_fwd"] + c["expert_bwd"] * c["calls_bwd"]) /
            (c["calls_fwd"] + c["calls_bwd"]))


def profile(doc, select=is_fit_point):
    """The h100 host profile read from `doc`'s points that `select` keeps, with the spread."""
    k, spread = {}, []
    for r in doc["results"]:
        if not select(r):
            continue
        for b in r["blocks"]:
            if any("error" in p for p in b["per_rank"]):
                continue
            if b["mode"] == "plain":
                cs = [call_costs(p) for p in b["per_rank"]]
                for c in cs:
                    for n in ("router", "permute", "launch", "nccl", "loop_fwd", "loop_bwd"):
                        k.setdefault(n, []).append(c[n])
                    k.setdefault("expert", []).extend((c["expert_fwd"], c["expert_bwd"]))
                v = [loop_call_us(c) for c in cs]
                spread.append(max(v) / st.median(v))
            elif b["mode"] == "events":
                k.setdefault("sync", []).extend(gpu_waits(p)["sync_us"] for p in b["per_rank"])
    out = {n: st.median(v) for n, v in k.items()}
    out["slowest_rank"] = st.median(spread)
    out["slowest_rank_range"] = (min(spread), max(spread))
    out["plain_blocks"] = len(spread)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--costs", action="store_true", help="only the per-kind cost summary")
    ap.add_argument("--profile", action="store_true", help="the host profile read from the fit points")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    doc = json.load(open(a.file))
    if a.profile:
        p = profile(doc)
        if a.json:
            print(json.dumps(p, indent=1))
            return
        print("host profile from %d plain blocks of the fit points (hidden 2048 / FFN 1408 / 8 experts):" % p["plain_blocks"])
        for n in ("router", "permute", "launch", "nccl", "sync", "expert", "loop_fwd", "loop_bwd"):
            print("  %-9s %6.1f us" % (n, p[n]))
        print("  slowest_rank %.3f (per block %.2f-%.2f)" % ((p["slowest_rank"],) + p["slowest_rank_range"]))
        pa = profile(doc, lambda r: True)
        print("the same from every point: " + ", ".join("%s %.1f" % (n, pa[n]) for n in (
            "router", "permute", "launch", "nccl", "sync", "expert", "loop_fwd", "loop_bwd")) +
              ", slowest_rank %.3f" % pa["slowest_rank"])
        return
    c = costs(doc)
    if a.json:
        print(json.dumps(c, indent=1))
        return
    if not a.costs:
        table(doc)
    kinds = ["router", "permute", "launch", "nccl", "expert_fwd", "expert_bwd", "loop_fwd", "loop_bwd", "sync"]
    print("| block | " + " | ".join(kinds) + " |")
    print("|---|" + "---:|" * len(kinds))
    for key, d in c.items():
        print("| %s | %s |" % (key, " | ".join("%.1f (%.0f-%.0f)" % d[k][:3] if k in d else "-" for k in kinds)))


if __name__ == "__main__":
    main()
