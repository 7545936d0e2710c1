#!/usr/bin/env python3
"""Per-rank look at a strategy_step_bench.py run made with --all-rank-kernels and --timeline
(issue 16; calibration/measurements/h100-x4/strategy_ranks_2026-11-27): Markdown on stdout.

    python3 calibration/fit/strategy_ranks_report.py MEASUREMENT.json [--top 25]

Per point:
  - per rank, the kernel time per step by class (ms; torch.profiler over 2 steps), the kernel
    count, the step (the rank's median step time);
  - with pipeline stages: the last stage's non-GEMM, non-attention, non-communication kernels
    against the first stage's (TP rank 0 of each; what the last runs beyond the first, by kernel
    name: launches per step and us per step), the largest differences first;
  - from the timeline of one step on every rank (kernels with their CUDA stream; the benchmark's
    probe all-reduces name the stream a blocking collective of each group runs on: in PyTorch
    2.11 the caller's, the compute stream, for every group, so the TP all-reduces (and the
    clip's) are the NCCL kernels on that stream and DDP's asynchronous bucket all-reduces the
    all-reduces on any other; pipeline SendRecv kernels are neither, "p2p" below):
      busy       the union of the compute (non-NCCL) kernels' intervals;
      exposed    the step less that union: time no compute kernel runs, split into the time a TP,
                 a DP or a p2p NCCL kernel runs (communication on the critical path, or a kernel
                 waiting for its peer; TP taken first, then DP, then p2p) and the time none does
                 (host gaps);
      TP / DP    each group's NCCL kernel time (sum of durations; NCCL kernels include the time
                 they wait for their peers), the part of it beside compute;
      TP all-reduces while a DP all-reduce runs (their intervals intersect) against those while
                 none does, by kernel name (dtype and algorithm): count, mean and median us.
Only reads the JSON; no gcsim.
"""
import argparse
import json
import statistics
import sys

CLASSES = ["gemm", "attention", "elementwise", "norm", "other", "optimizer", "communication"]
COMPUTE_SKIP = ("gemm", "attention", "communication", "optimizer")  # the stage diff looks at the rest


def union(intervals):
    """Sorted disjoint [start, end) intervals covering the given ones."""
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(u):
    return sum(e - s for s, e in u)


def intersect(a, b):
    """The intersection of two unions (each sorted and disjoint)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(u, lo, hi):
    return [[max(s, lo), min(e, hi)] for s, e in u if min(e, hi) > max(s, lo)]


def short(name, n=70):
    return name if len(name) <= n else name[:n - 1] + "~"


def timeline_rows(tl):
    """[(name, class, stream, start, end)] of one rank's timeline."""
    names = tl["names"]
    return [(names[k][0], names[k][1], st, t, t + d) for k, st, t, d in tl["kernels"]]


def timeline_stats(tl):
    """The busy/exposed/TP/DP figures of one rank's step (us), and the TP all-reduces by name
    while a DP one runs or not."""
    rows = timeline_rows(tl)
    step = tl["step_us"]
    streams = tl.get("group_streams", {})
    tp_s, dp_s = streams.get("tp"), streams.get("dp")
    compute = union([(s, e) for _, c, _, s, e in rows if c != "communication"])
    comm = [(n, st, s, e) for n, c, st, s, e in rows if c == "communication"]
    tp = [(n, s, e) for n, st, s, e in comm if st == tp_s]
    if dp_s is not None and dp_s == tp_s:
        # PyTorch 2.11 runs a blocking collective (async_op=False: the TP all-reduces, the
        # probes, the clip's) on the caller's stream, so the probes name the compute stream for
        # every group; DDP's bucket all-reduces are asynchronous and run on the DP group's NCCL
        # stream: the all-reduces on any other stream.
        dp = [(n, s, e) for n, st, s, e in comm if st != tp_s and "AllReduce" in n]
    else:
        dp = [(n, s, e) for n, st, s, e in comm if st == dp_s]
    dp_streams = {st for n, st, s, e in comm if st != tp_s and (dp_s is None or dp_s == tp_s) and "AllReduce" in n}
    dp_streams |= {dp_s} if dp_s is not None and dp_s != tp_s else set()
    other = [(n, s, e) for n, st, s, e in comm if st != tp_s and st not in dp_streams]
    u_tp = clip(union([(s, e) for _, s, e in tp]), 0, step)
    u_dp = clip(union([(s, e) for _, s, e in dp]), 0, step)
    u_other = clip(union([(s, e) for _, s, e in other]), 0, step)
    busy = clip(compute, 0, step)
    idle = []  # the step less the compute union
    t = 0.0
    for s, e in busy:
        if s > t:
            idle.append([t, s])
        t = max(t, e)
    if t < step:
        idle.append([t, step])
    any_comm = union(u_tp + u_dp + u_other)
    out = {"step_us": step, "busy_us": length(busy), "exposed_us": length(idle),
           "exposed_tp_us": length(intersect(idle, u_tp)), "exposed_dp_us": length(intersect(idle, u_dp)),
           "exposed_comm_us": length(intersect(idle, any_comm)),
           "tp_sum_us": sum(e - s for _, s, e in tp), "tp_union_us": length(u_tp),
           "tp_beside_compute_us": length(intersect(u_tp, busy)), "tp_count": len(tp),
           "dp_sum_us": sum(e - s for _, s, e in dp), "dp_union_us": length(u_dp),
           "dp_beside_compute_us": length(intersect(u_dp, busy)), "dp_count": len(dp),
           "other_comm_sum_us": sum(e - s for _, s, e in other), "other_comm_count": len(other),
           "tp_dp_overlap_us": length(intersect(u_tp, u_dp)),
           "dp_first_us": min((s for _, s, _ in dp), default=None),
           "dp_last_end_us": max((e for _, _, e in dp), default=None)}
    out["exposed_none_us"] = out["exposed_us"] - out["exposed_comm_us"]
    idle_no_tp = []  # the idle time outside TP kernels, then outside DP ones
    rest = idle
    for u in (u_tp, u_dp):
        cut = []
        for s0, e0 in rest:
            t = s0
            for s1, e1 in u:
                if e1 <= t or s1 >= e0:
                    continue
                if s1 > t:
                    cut.append([t, s1])
                t = max(t, e1)
            if t < e0:
                cut.append([t, e0])
        rest = cut
        idle_no_tp.append(length(rest))
    out["exposed_dp_only_us"] = idle_no_tp[0] - idle_no_tp[1]
    out["exposed_p2p_only_us"] = length(intersect(rest, u_other))
    # each TP all-reduce's share of its duration beside a DP all-reduce
    out["tp_dp_fraction"] = {}
    for n, s0, e0 in tp:
        if e0 > s0:
            f = length(intersect([[s0, e0]], u_dp)) / (e0 - s0)
            out["tp_dp_fraction"].setdefault(n, []).append(f)
    by_name = {}
    for n, s, e in tp:
        beside = any(ds < e and s < de for _, ds, de in dp)
        by_name.setdefault(n, {True: [], False: []})[beside].append(e - s)
    out["tp_by_name"] = by_name
    return out


def per_rank_classes(rec):
    print("\n| rank | tp | dp | pp | step ms | " + " | ".join(CLASSES) + " | kernels |")
    print("|---:|---:|---:|---:|---:|" + "---:|" * len(CLASSES) + "---:|")
    for r in rec["ranks"]:
        cl = r["classes"]
        print("| %d | %d | %d | %d | %.1f | %s | %.0f |" % (
            r["rank"], r["tp_rank"], r["dp_rank"], r["pp_rank"], r["step_us"] / 1e3,
            " | ".join("%.2f" % (cl.get(c, {}).get("us", 0.0) / 1e3) for c in CLASSES), r["kernels_per_step"]))


def kernel_table(r):
    if "kernels" in r:
        return r["kernels"]
    return None


def stage_diff(rec, top):
    """The last stage's TP-rank-0 kernels against the first stage's, outside GEMM, attention,
    NCCL and the optimizer."""
    ranks = {(r["tp_rank"], r["dp_rank"], r["pp_rank"]): r for r in rec["ranks"]}
    first, last = ranks.get((0, 0, 0)), ranks.get((0, 0, rec["pp"] - 1))
    if first is None or last is None or kernel_table(first) is None or kernel_table(last) is None:
        print("\n(no per-rank kernel tables: run with --all-rank-kernels)")
        return
    def table(r):
        t = {}
        for k in kernel_table(r):
            if k["class"] in COMPUTE_SKIP:
                continue
            a = t.setdefault(k["name"], [k["class"], 0.0, 0.0])
            a[1] += k["per_step_count"]
            a[2] += k["per_step_us"]
        return t
    a, b = table(first), table(last)
    rows = []
    for n in set(a) | set(b):
        ca, ua = (a[n][1], a[n][2]) if n in a else (0.0, 0.0)
        cb, ub = (b[n][1], b[n][2]) if n in b else (0.0, 0.0)
        rows.append((ub - ua, cb - ca, n, (b.get(n) or a.get(n))[0], ca, ua, cb, ub))
    rows.sort(key=lambda x: -abs(x[0]))
    tot_a, tot_b = sum(x[2] for x in a.values()), sum(x[2] for x in b.values())
    cnt_a, cnt_b = sum(x[1] for x in a.values()), sum(x[1] for x in b.values())
    print("\nLast stage (rank %d) against first (rank %d), elementwise + norm + other kernels per step: "
          "%.2f ms in %.0f launches against %.2f ms in %.0f (%+.2f ms, %+.0f launches; %d micro-batches: "
          "%+.3f ms and %+.1f launches each)" % (
              last["rank"], first["rank"], tot_b / 1e3, cnt_b, tot_a / 1e3, cnt_a, (tot_b - tot_a) / 1e3,
              cnt_b - cnt_a, rec["micro_batches_per_replica"], (tot_b - tot_a) / 1e3 / rec["micro_batches_per_replica"],
              (cnt_b - cnt_a) / rec["micro_batches_per_replica"]))
    print("\n| kernel | class | first: launches | us | last: launches | us | diff us |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for du, dc, n, c, ca, ua, cb, ub in rows[:top]:
        print("| `%s` | %s | %.1f | %.1f | %.1f | %.1f | %+.1f |" % (short(n, 90), c, ca, ua, cb, ub, du))
    rest = rows[top:]
    if rest:
        print("| (%d more) | | | | | | %+.1f |" % (len(rest), sum(x[0] for x in rest)))


def timeline_report(rec):
    ranks = [r for r in rec["ranks"] if "timeline" in r and "kernels" in r["timeline"]]
    if not ranks:
        print("\n(no timeline: run with --timeline)")
        return
    print("\nTimeline of one step (us; NCCL kernel time includes waiting for the peer):\n")
    print("| rank | step | compute busy | exposed | of it TP | then DP | then p2p | none | TP sum | TP beside compute "
          "| DP sum | DP beside compute | DP exposed | TP/DP overlap | DP span |")
    print("|---:|" + "---:|" * 14)
    stats = []
    for r in ranks:
        s = timeline_stats(r["timeline"])
        stats.append(s)
        span = ("%.0f-%.0f" % (s["dp_first_us"], s["dp_last_end_us"])) if s["dp_count"] else "-"
        print("| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f (%d) | %.0f | %.0f (%d) | %.0f | %.0f | %.0f | %s |" % (
            r["rank"], s["step_us"], s["busy_us"], s["exposed_us"], s["exposed_tp_us"], s["exposed_dp_only_us"],
            s["exposed_p2p_only_us"], s["exposed_none_us"], s["tp_sum_us"], s["tp_count"], s["tp_beside_compute_us"], s["dp_sum_us"],
            s["dp_count"], s["dp_beside_compute_us"], s["exposed_dp_us"], s["tp_dp_overlap_us"], span))
    merged, frac = {}, {}
    for s in stats:
        for n, f in s["tp_dp_fraction"].items():
            frac.setdefault(n, []).extend(f)
        for n, d in s["tp_by_name"].items():
            m = merged.setdefault(n, {True: [], False: []})
            m[True] += d[True]
            m[False] += d[False]
    if any(m[True] for m in merged.values()):
        print("\nTP all-reduces (all ranks of the point) while a DP all-reduce kernel runs against while none does:\n")
        print("| kernel | beside DP: count | mean us | median us | sum us | share of it beside DP "
              "| alone: count | mean us | median us |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n, m in sorted(merged.items(), key=lambda x: -len(x[1][True])):
            def st(v):
                return (len(v), statistics.mean(v), statistics.median(v), sum(v)) if v else (0, float("nan"), float("nan"), 0.0)
            b, a = st(m[True]), st(m[False])
            fr = [f for f in frac.get(n, []) if f > 0]
            print("| `%s` | %d | %.1f | %.1f | %.0f | %s | %d | %.1f | %.1f |" % (
                short(n, 60), b[0], b[1], b[2], b[3], "%.2f" % statistics.mean(fr) if fr else "-", a[0], a[1], a[2]))
        print("\n(TP all-reduces of one size: the forward's bf16 ones carry the activation, the backward's "
              "f32 ones its gradient, twice the bytes; the small f32 ones are the loss's and the clip's.)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--top", type=int, default=25, help="kernels listed in the stage diff")
    a = ap.parse_args()
    try:
        with open(a.measurement) as f:
            doc = json.load(f)
        results = doc["results"]
    except (OSError, ValueError, KeyError) as ex:
        print("%s: cannot read a strategy_step_bench results file: %s" % (a.measurement, ex), file=sys.stderr)
        return 2
    meta = doc.get("meta", {})
    print("# Per-rank strategy steps: %s x%s, %s\n" % (meta.get("device_name"), meta.get("world_size"),
                                                       meta.get("date_utc")))
    for rec in results:
        print("\n## %s %s (tp %d, pp %d, dp %d; %d micro-batch(es) of %d): step %.1f ms (slowest rank)" % (
            rec["strategy"], rec["build"], rec["tp"], rec["pp"], rec["dp"], rec["micro_batches_per_replica"],
            rec["micro_batch"], rec["step_us"] / 1e3))
        per_rank_classes(rec)
        if rec["pp"] > 1:
            stage_diff(rec, a.top)
        timeline_report(rec)
    for e in doc.get("errors", []):
        print("\nERROR %s %s rank %s: %s" % (e.get("strategy"), e.get("build"), e.get("rank"), e.get("error")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
