#!/usr/bin/env python3
"""Where DistributedDataParallel's gradient all-reduces start in the backward, and what runs beside
them: strategy_step_bench.py's DP4 (and TP2xDP2) step on 4 GPUs, one profiled step's kernel timeline
per rank 0, the bucket sizes DDP settled on, and the same step with the all-reduces off (no_sync)
so that each kernel class can be compared with and without NCCL beside it. gcsim's DP gradient
buckets (workloads/training/grad_buckets.h) are checked against it.

    torchrun --standalone --nproc_per_node 4 ddp_bucket_timeline.py -o OUT.json [--budget-s 110]

Per point (strategy, build in eager / compile, sync in on / off), after 3 warm-up steps (DDP
rebuilds its buckets in gradient-ready order after the first):
  buckets            DDP's logging data (its bucket sizes and limits, as DDP reports them) and,
                     from the profiler's record_param_comms ops (record_shapes), the element
                     count of each all-reduce in launch order (one more step, CPU activity on);
  timeline           rank 0's GPU kernels over 2 profiled steps (CUDA activity only): [name index, class, start us,
                     duration us], starts relative to the step's first marker; markers (the
                     tiny spin kernels torch.cuda._sleep launches) before the forward, the
                     backward and the optimizer;
  classes            every rank's kernel time per step by class (strategy_step_bench's rules).
Each point is guarded (a failure is recorded and the rest still runs); rank 0 rewrites the JSON
after every point; rank 0 decides from --budget-s whether a point still fits.
"""
import argparse
import datetime
import gc
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import strategy_step_bench as ssb  # noqa: E402
import torch_timing as tt  # noqa: E402
import bench_common  # noqa: E402

VERSION = "ddp_bucket_timeline 1.0"
T0 = time.time()
log = bench_common.make_log(T0)
# (strategy, tp, pp, dp, build); each build's runner is reused for sync on and off.
POINTS = [("DP4", 1, 1, 4, "eager"), ("DP4", 1, 1, 4, "compile"), ("TP2xDP2", 2, 1, 2, "eager")]
COST_GUESS_S = {"eager": 15.0, "compile": 35.0}
MARK_CYCLES = 64  # the marker kernels: a few cycles of torch.cuda._sleep ("spin_kernel")


def mark():
    torch.cuda._sleep(MARK_CYCLES)


def make_step(r, sync):
    """strategy_step_bench's step for PP 1 with marker kernels between its phases; without `sync`
    the forward and backward run under DDP's no_sync (no bucket copies, no all-reduces)."""
    import contextlib

    def step():
        quiet = r.model.no_sync() if (r.ddp and not sync) else contextlib.nullcontext()
        with quiet:
            mark()
            loss = r.forward(None, 0)
            mark()
            r.backward(None, loss, None)
        mark()
        ssb.clip_grads(r.params, r.lay.mp_group)
        r.opt.step()
        r.opt.zero_grad(set_to_none=True)
    return step


def ddp_logging(model):
    """DDP's own account of its buckets (sizes, limits), as strings; {} without DDP."""
    if not hasattr(model, "_get_ddp_logging_data"):
        return {}
    try:
        data = model._get_ddp_logging_data()
        keep = {}
        for k, v in data.items():
            if "bucket" in k or k in ("world_size", "comm_hook", "gradient_as_bucket_view",
                                      "static_graph", "find_unused_parameters", "backend_name",
                                      "nccl_version"):
                keep[k] = str(v)
        return keep
    except Exception as ex:  # noqa: BLE001
        return {"error": repr(ex)}


def profile(step, nsteps, cpu):
    """Rank's GPU kernels and (with `cpu`) all-reduce launches over `nsteps` steps. The kernel
    timeline is taken without CPU activity, whose overhead could starve the GPU of work."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprofile
    torch.cuda.synchronize()
    dist.barrier(device_ids=[torch.cuda.current_device()])
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cpu else [ProfilerActivity.CUDA]
    with tprofile(activities=acts, record_shapes=cpu) as prof:
        for _ in range(nsteps):
            step()
        torch.cuda.synchronize()
    kernels, comms = [], []
    for ev in prof.events():
        dt = str(getattr(ev, "device_type", ""))
        if dt.endswith("CUDA"):
            kernels.append((ev.time_range.start, ev.time_range.end - ev.time_range.start, ev.name))
        elif ev.name in ("record_param_comms", "nccl:all_reduce", "c10d::allreduce_"):
            shapes = getattr(ev, "input_shapes", None)
            try:
                args = str(getattr(ev, "concrete_inputs", None))[:300]
            except Exception as ex:  # noqa: BLE001
                args = repr(ex)
            comms.append({"op": ev.name, "start_us": ev.time_range.start,
                          "input_shapes": [list(s) for s in shapes][:4] if shapes else None,
                          "args": args})
    kernels.sort()
    return kernels, comms


def timeline(kernels):
    """[name index, class, start us, duration us] from the first marker; the marker times."""
    names, index, rows, marks = [], {}, [], []
    t0 = None
    for start, dur, name in kernels:
        if "spin_kernel" in name:
            marks.append(start)
        if t0 is None and "spin_kernel" in name:
            t0 = start
    t0 = t0 if t0 is not None else (kernels[0][0] if kernels else 0.0)
    for start, dur, name in kernels:
        if name not in index:
            index[name] = len(names)
            names.append(name)
        rows.append([index[name], ssb.class_of(name), round(start - t0, 2), round(dur, 2)])
    return {"names": names, "kernels": rows, "markers_us": [round(m - t0, 2) for m in marks]}


def classes_of(kernels, nsteps):
    out = {}
    for _, dur, name in kernels:
        c = out.setdefault(ssb.class_of(name), {"us": 0.0, "count": 0.0})
        c["us"] += dur / nsteps
        c["count"] += 1.0 / nsteps
    return out


def comm_summary(comms):
    """The all-reduce launches of the profiled steps: the records whose input is a bucket."""
    out = []
    for c in comms:
        if c["op"] != "record_param_comms" or not c["input_shapes"]:
            continue
        shape = c["input_shapes"][0]
        numel = 1
        for d in shape:
            numel *= d
        out.append({"start_us": round(c["start_us"], 1), "shape": shape, "numel": numel})
    return out


def run_point(name, tp, pp, dp, build, doc, budget_s):
    lay = ssb.Layout(tp, pp, dp)
    torch.cuda.empty_cache()
    torch._dynamo.reset()
    r = ssb.Runner(ssb.MODEL, lay, build)
    for sync in (True, False):
        step = make_step(r, sync)
        t = time.time()
        for _ in range(3 if sync else 1):
            step()
        torch.cuda.synchronize()
        warm_s = time.time() - t
        times = ssb.timed_steps(step, 6)
        kernels, _ = profile(step, 2, cpu=False)
        comms = profile(step, 1, cpu=True)[1] if sync else []
        mine = {"rank": dist.get_rank(), "step_us": sorted(times)[len(times) // 2], "step_all_us": times,
                "classes": classes_of(kernels, 2), "allreduce_launches": comm_summary(comms)}
        if dist.get_rank() == 0:
            mine["timeline"] = timeline(kernels)
            mine["ddp_logging"] = ddp_logging(r.model)
            mine["record_param_comms"] = comms[:400]
        ranks = ssb.gather(mine)
        rec = {"strategy": name, "build": build, "sync": sync, "tp": tp, "pp": pp, "dp": dp,
               "warmup_s": warm_s, "step_us": max(x["step_us"] for x in ranks), "ranks": ranks}
        log("  %s %s sync=%s: step %.1f us; rank 0: %d all-reduce launches, %d kernels" % (
            name, build, sync, rec["step_us"], len(ranks[0]["allreduce_launches"]),
            len(ranks[0].get("timeline", {}).get("kernels", []))))
        for c, v in sorted(ranks[0]["classes"].items()):
            log("     %-14s %9.1f us  %7.1f kernels" % (c, v["us"], v["count"]))
        if dist.get_rank() == 0:
            doc["results"].append(rec)
        if a_budget_left(budget_s) < 8.0:
            break
    del r
    gc.collect()
    torch.cuda.empty_cache()


def a_budget_left(budget_s):
    return budget_s - (time.time() - T0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=110.0)
    ap.add_argument("--quick", action="store_true", help="a tiny model, to try the script")
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    dist.barrier(device_ids=[local])
    torch.backends.cuda.matmul.allow_tf32 = True
    for key, value in (("cache_size_limit", 64), ("recompile_limit", 64), ("optimize_ddp", False)):
        try:  # as strategy_step_bench: no graph splits at DDP's buckets
            setattr(torch._dynamo.config, key, value)
        except Exception as ex:  # noqa: BLE001
            log("dynamo config %s not set: %r" % (key, ex))
    if a.quick:
        ssb.MODEL.update(name="quick_h256_L4_s256", layers=4, hidden=256, heads=4, ffn=704, vocab=1024, seq=256)
    out = bench_common.ResultsFile(
        a.out, "gcsim.ddp_bucket_timeline.v1", __file__, VERSION, T0, indent=None,
        meta_extra={"strategy_step_bench_sha256": bench_common.file_sha256(ssb.__file__)},
        method=__doc__, model=ssb.MODEL)
    doc, save = out.doc, out.save
    save()
    if dist.get_world_size() != 4:
        doc["errors"].append({"error": "needs 4 ranks, got %d" % dist.get_world_size()})
        save()
        dist.destroy_process_group()
        return
    for name, tp, pp, dp, build in POINTS:
        go = torch.tensor([1.0 if a_budget_left(a.budget_s) >= COST_GUESS_S[build] else 0.0], device="cuda")
        dist.broadcast(go, 0)
        if go.item() == 0.0:
            doc["skipped"].append({"strategy": name, "build": build,
                                   "reason": "%.0f s left" % a_budget_left(a.budget_s)})
            log("skip %s %s" % (name, build))
            save()
            continue
        err = None
        try:
            run_point(name, tp, pp, dp, build, doc, a.budget_s)
        except Exception as ex:  # noqa: BLE001
            err = {"strategy": name, "build": build, "rank": dist.get_rank(), "error": repr(ex)[:2000],
                   "traceback": traceback.format_exc()[-6000:]}
            print("rank %d FAILED %s %s: %r" % (dist.get_rank(), name, build, ex), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        out.gather_errors(err)
    out.finish(log)


if __name__ == "__main__":
    main()
