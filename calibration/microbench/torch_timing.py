"""CUDA-event timing for PyTorch microbenchmarks, the same method as gcsim_microbench's GpuTimer.

measure(enqueue, ...):
  - warm-up repetitions first;
  - before each timed phase the stream is back-logged with torch.cuda._sleep so the GPU never
    waits for Python; `backlog_ok` says the sleep was still running when the last repetition
    had been enqueued;
  - phase 1: one event pair around each repetition -> median_us, min_us, p90_us;
  - phase 2: batches of back-to-back repetitions, events only at batch ends ->
    time_us = median over batches of (batch time / repetitions): the spacing of the work in a
    stream of work, which is what gcsim's per-kernel time stands for.
enqueue(rep) gets a running repetition index so callers rotate among input sets.
"""
import math
import statistics
import time

import torch

_STATE = {"cycles_per_us": None, "rep": 0}


def _elapsed_us(a, b):
    return a.elapsed_time(b) * 1000.0


def cycles_per_us():
    if _STATE["cycles_per_us"] is None:
        cyc = 4_000_000
        for _ in range(2):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.cuda._sleep(cyc)
            e.record()
            torch.cuda.synchronize()
            _STATE["cycles_per_us"] = cyc / _elapsed_us(s, e)
    return _STATE["cycles_per_us"]


def backlog(us):
    torch.cuda._sleep(int(min(us, 200_000.0) * cycles_per_us()))


def _pending(ev):
    return not ev.query()


def percentile(v, p):
    v = sorted(v)
    pos = p * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])


def measure(enqueue, warmup=3, phase1_target_us=10_000.0, min_reps=7, max_reps=100,
            batch_target_us=400.0, batches=7, max_batch_reps=64, host_us_floor=10.0):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(warmup):
        enqueue(_STATE["rep"])
        _STATE["rep"] += 1
    host_us = max(host_us_floor, (time.perf_counter() - t0) * 1e6 / max(1, warmup))
    torch.cuda.synchronize()
    per_rep_host = host_us + 10.0

    backlog(200)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    enqueue(_STATE["rep"])
    _STATE["rep"] += 1
    e.record()
    torch.cuda.synchronize()
    est = max(0.5, _elapsed_us(s, e))

    reps = int(min(max(math.ceil(phase1_target_us / est), min_reps), max_reps))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    gate = torch.cuda.Event()
    backlog(2.0 * reps * per_rep_host + 200.0)
    gate.record()
    for r in range(reps):
        starts[r].record()
        enqueue(_STATE["rep"])
        _STATE["rep"] += 1
        ends[r].record()
    ok = _pending(gate)
    torch.cuda.synchronize()
    per = [_elapsed_us(a, b) for a, b in zip(starts, ends)]

    breps = int(min(max(math.ceil(batch_target_us / est), 1), max_batch_reps))
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(batches + 1)]
    gate2 = torch.cuda.Event()
    backlog(2.0 * batches * breps * per_rep_host + 200.0)
    gate2.record()
    marks[0].record()
    for b in range(batches):
        for _ in range(breps):
            enqueue(_STATE["rep"])
            _STATE["rep"] += 1
        marks[b + 1].record()
    ok = _pending(gate2) and ok
    torch.cuda.synchronize()
    spacing = [_elapsed_us(marks[b], marks[b + 1]) / breps for b in range(batches)]
    return {"time_us": statistics.median(spacing), "median_us": statistics.median(per),
            "min_us": min(per), "p90_us": percentile(per, 0.9), "reps": reps, "batches": batches,
            "batch_reps": breps, "backlog_ok": ok, "host_enqueue_us": host_us}


def nvsmi(query):
    import subprocess
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv"], capture_output=True,
                              text=True, timeout=20).stdout.strip()
    except Exception as ex:  # noqa: BLE001
        return "nvidia-smi failed: %r" % ex


def provenance(script, version):
    import datetime
    import platform
    import sys
    p = torch.cuda.get_device_properties(0)
    return {
        "script": script, "script_version": version,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": platform.node(), "kernel": platform.release(), "python": sys.version.split()[0],
        "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "device_name": p.name, "compute_capability": "%d.%d" % (p.major, p.minor),
        "sm_count": p.multi_processor_count, "l2_bytes": getattr(p, "L2_cache_size", None),
        "total_memory_bytes": p.total_memory,
        "nvidia_smi": nvsmi("name,driver_version,power.limit,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem"),
    }
