#!/usr/bin/env python3
"""Tables from calibration/microbench/moe_host_shapes.py's JSON: the expert loop's host cost per
layer shape, per statement and per launch-queue state (gcsim issue 22).

    python3 calibration/fit/moe_host_shapes_read.py FILE.json
"""
import json
import statistics
import sys

FWD_KERNELS = ("fc1", "silu", "mul", "fc2_out")
BWD_KERNELS = ("fc2_wgrad", "fc2_dgrad", "mul_a2", "silu_backward", "silu", "mul_silu", "cat", "fc1_wgrad",
               "fc1_dgrad_out")


def f(v, w=6, p=1):
    return ("%*.*f" % (w, p, v)) if isinstance(v, (int, float)) else "%*s" % (w, "-")


def per_op(rec, key):
    return (rec.get(key) or {}).get("per_op_mean_over_experts") or {}


def main(path):
    d = json.load(open(path))
    meta = d["meta"]
    print("# %s, %s, torch %s, %s, %d CPUs (%s)" % (
        meta.get("device_name"), meta.get("date_utc"), meta.get("torch"), meta["host"].get("cpu_model"),
        meta["host"].get("cpu_count") or 0, meta["host"].get("numa_nodes")))
    cases = d["cases"]
    print("\n## Whole loop (bench code), µs; per launch = pass / (4L fwd, 9L bwd)")
    print("| case | L | host fwd | bwd | /launch fwd | bwd | 1st half fwd | 2nd half | blocked fwd | bwd | "
          "natural host fwd | bwd | natural event fwd | bwd | GPU fwd | bwd |")
    print("|---|---:|" + "---:|" * 14)
    for n, c in cases.items():
        w, b, nat = c.get("whole", {}), c.get("blocked", {}), c.get("natural", {})
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, c["L"], f(w.get("host_fwd_us"), 0, 0), f(w.get("host_bwd_us"), 0, 0),
            f(w.get("host_us_per_launch_fwd"), 0), f(w.get("host_us_per_launch_bwd"), 0),
            f(w.get("host_fwd_us_first_half"), 0, 0), f(w.get("host_fwd_us_second_half"), 0, 0),
            f(b.get("host_fwd_us"), 0, 0), f(b.get("host_bwd_us"), 0, 0),
            f(nat.get("host_fwd_us"), 0, 0), f(nat.get("host_bwd_us"), 0, 0),
            f(nat.get("event_fwd_us"), 0, 0), f(nat.get("event_bwd_us"), 0, 0),
            f(w.get("gpu_fwd_us"), 0, 0), f(w.get("gpu_bwd_us"), 0, 0)))
    for mode in ("", "_idle", "_busy"):
        print("\n## Per statement, µs, median over rounds, mean over experts (queue: %s)" % (
            {"": "deep back-log", "_idle": "idle GPU", "_busy": "one kernel running"}[mode]))
        for pas, ops in (("fwd", None), ("bwd", None)):
            names = None
            rows = []
            for n, c in cases.items():
                o = per_op(c, "ops_%s%s" % (pas, mode))
                if not o:
                    continue
                names = names or list(o)
                head = (c.get("ops_%s%s" % (pas, mode)) or {}).get("head")
                rows.append("| %s | %s | %s | %s |" % (n, f(head), " | ".join(f(o.get(k)) for k in names),
                                                       f(sum(v for v in o.values() if v))))
            if names:
                print("| case (%s) | head | %s | sum per expert |" % (pas, " | ".join(names)))
                print("|---|" + "---:|" * (len(names) + 2))
                print("\n".join(rows))
    print("\n## First expert against the rest (deep back-log), sum of statements per expert, µs")
    for n, c in cases.items():
        for pas in ("fwd", "bwd"):
            pe = (c.get("ops_" + pas) or {}).get("per_expert") or []
            sums = [sum(v for v in e.values() if v) for e in pe]
            if sums:
                print("%-24s %s %s" % (n, pas, " ".join(f(s, 5, 0) for s in sums)))
    if "affinity" in d:
        print("\n## Main thread pinned to one CPU: whole-loop host µs")
        for cpu, r in d["affinity"].items():
            print("cpu %3s: %s" % (cpu, "; ".join("%s fwd %s bwd %s" % (n, f(v["host_fwd_us"], 0, 0),
                                                                          f(v["host_bwd_us"], 0, 0))
                                                 for n, v in r.items())))
    print("\n## Allocator over the blocked passes")
    for n, c in cases.items():
        print("%-24s %s" % (n, (c.get("blocked") or {}).get("allocator_delta")))
    print("\n## torch.profiler, per pass: CPU self µs of the runtime calls and the top aten ops")
    for n, c in cases.items():
        rows = c.get("profile") or []
        keep = [r for r in rows if r["name"].startswith("cuda") or r["name"].startswith("cu")][:6]
        keep += [r for r in rows if r["name"].startswith("aten::")][:8]
        print("%s: %s" % (n, "; ".join("%s x%.0f %.1f/call" % (r["name"], r["count"], r["self_cpu_us_per_call"])
                                        for r in keep)))
    if d.get("errors"):
        print("\nerrors:", d["errors"][:5])


if __name__ == "__main__":
    main(sys.argv[1])
