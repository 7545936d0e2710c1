"""What every step benchmark records and how it times and classifies a step.

One place for the pieces the step benchmarks (framework_step, strategy_step_bench,
ddp_bucket_timeline, serving_step_bench) share, so a measurement's provenance and its kernel
classes mean the same thing in every results file:
  - provenance(): GPU, driver, torch/CUDA/NCCL/cuDNN versions, the script's sha256, host;
  - clocks(): the nvidia-smi clock, power and throttle state, taken before and after a point;
  - class_of(): the kernel class gcsim's report uses (gemm, attention, norm, elementwise,
    optimizer, communication, other) from a CUDA kernel's name;
  - profile_steps(): torch.profiler over n steps, per-kernel and per-class time per step (us);
  - timed_steps(): CUDA events at every step boundary, the host at most 2 steps ahead;
  - gather(): one Python object from every rank.
Results committed before this module existed cite the sha256 of the script as it was then
(see git history of each script); the measured numbers do not depend on where a helper lives.
"""
import datetime
import hashlib
import json
import os
import platform
import sys
import time

import torch
import torch.distributed as dist

import torch_timing as tt

SMI_STATE = "index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
SMI_BOARD = "index,name,driver_version,power.limit,clocks.max.sm,clocks.max.mem"


def make_log(t0):
    """print() with the seconds since t0, on rank 0 only once a process group exists."""
    def log(*a):
        if dist.is_available() and dist.is_initialized() and dist.get_rank() != 0:
            return
        print("[%6.1fs]" % (time.time() - t0), *a, flush=True)
    return log


def file_sha256(path):
    with open(os.path.abspath(path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _nccl_version():
    try:
        return ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:  # noqa: BLE001
        return None


def provenance(script_file, version, **extra):
    """The record every results file starts with; `script_file` is the caller's __file__."""
    p = torch.cuda.get_device_properties(0)
    distributed = dist.is_available() and dist.is_initialized()
    out = {"script": "calibration/microbench/" + os.path.basename(script_file), "script_version": version,
           "sha256": file_sha256(script_file), "bench_common_sha256": file_sha256(__file__),
           "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "hostname": platform.node(), "python": sys.version.split()[0], "torch": torch.__version__,
           "cuda_runtime": torch.version.cuda, "nccl": _nccl_version(),
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "device_name": p.name, "sm_count": p.multi_processor_count, "total_memory_bytes": p.total_memory,
           "world_size": dist.get_world_size() if distributed else 1, "gpu_count": torch.cuda.device_count(),
           "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
           "nvidia_smi": tt.nvsmi(SMI_BOARD),
           "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_", "CUDA_"))},
           "cpu": platform.processor(), "cpu_count": os.cpu_count()}
    out.update(extra)
    return out


def clocks():
    """nvidia-smi's clock, power and throttle state now (read before and after each point)."""
    return {"throttle": tt.nvsmi(SMI_STATE), "event": tt.nvsmi("clocks_event_reasons.active"),
            "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def class_of(name):
    """gcsim's kernel class of a CUDA kernel name (the report's "where the step goes")."""
    n = name.lower()
    if "nccl" in n:
        return "communication"
    if any(s in n for s in ("flash", "fmha", "cudnn", "sdpa", "attention", "attn")):
        return "attention"
    if any(s in n for s in ("multi_tensor", "foreach", "adam", "fused_optim")):
        return "optimizer"
    if any(s in n for s in ("gemm", "gemv", "nvjet", "sm90_xmma", "sm80_xmma", "cutlass", "cublas", "xmma",
                            "splitk", "triton_tem")):
        return "gemm"
    if any(s in n for s in ("norm", "rsqrt", "softmax", "nll_loss", "cross_entropy")):
        return "norm"
    if any(s in n for s in ("elementwise", "vectorized", "unrolled", "reduce_kernel", "triton_", "cat",
                            "copy", "memcpy", "memset", "index", "embedding", "fill", "scatter", "gather",
                            "argmax")):
        return "elementwise"
    return "other"


def _barrier():
    if dist.is_available() and dist.is_initialized():
        dist.barrier(device_ids=[torch.cuda.current_device()])


def profile_steps(step, nsteps):
    """torch.profiler over nsteps steps: (kernels, classes), each per step (us and launches)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    _barrier()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(nsteps):
            step()
        torch.cuda.synchronize()
    agg = {}
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        a = agg.setdefault(ev.name, {"count": 0, "us": 0.0})
        a["count"] += 1
        a["us"] += ev.time_range.elapsed_us()
    kernels = [{"name": k, "class": class_of(k), "per_step_count": v["count"] / nsteps,
                "per_step_us": v["us"] / nsteps} for k, v in agg.items()]
    kernels.sort(key=lambda k: -k["per_step_us"])
    classes = {}
    for k in kernels:
        c = classes.setdefault(k["class"], {"us": 0.0, "count": 0.0})
        c["us"] += k["per_step_us"]
        c["count"] += k["per_step_count"]
    return kernels, classes


def timed_steps(step, n):
    """n steps back to back, a CUDA event at every boundary, the host at most 2 steps ahead (us)."""
    torch.cuda.synchronize()
    _barrier()
    tt.backlog(5000)  # the first step starts queued, not from an idle host
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        step()
        ev[i + 1].record()
        if i >= 1:
            ev[i - 1].synchronize()
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) * 1000.0 for i in range(n)]


def gather(x):
    """x from every rank, in rank order."""
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, x)
    return out


def _distributed():
    return dist.is_available() and dist.is_initialized()


class ResultsFile:
    """A benchmark's results document: provenance and clocks first, then results, errors and
    skipped points; rank 0 writes it after every point, so a timeout keeps what ran."""

    def __init__(self, path, schema, script_file, version, t0, indent=1, meta_extra=None, **fields):
        self.path, self.t0, self.indent = path, t0, indent
        self.rank0 = not _distributed() or dist.get_rank() == 0
        self.doc = {"schema": schema, **fields, "results": [], "errors": [], "skipped": []}
        if self.rank0:
            self.doc["meta"] = provenance(script_file, version, **(meta_extra or {}))
            self.doc["nvidia_smi_before"] = clocks()

    def save(self):
        if self.rank0:
            self.doc["elapsed_s"] = time.time() - self.t0
            with open(self.path, "w") as f:
                json.dump(self.doc, f, indent=self.indent)

    def gather_errors(self, err):
        """Every rank's error of the point just run (None where it went well), then save."""
        self.doc["errors"].extend(e for e in gather(err) if e is not None)
        self.save()

    def finish(self, log):
        """Clocks after, the last write, and the process group's orderly end."""
        if self.rank0:
            self.doc["nvidia_smi_after"] = clocks()
        self.save()
        log("done in %.1f s: %d points, %d errors, %d skipped" % (
            time.time() - self.t0, len(self.doc["results"]), len(self.doc["errors"]), len(self.doc["skipped"])))
        if _distributed():
            dist.barrier(device_ids=[torch.cuda.current_device()])
            dist.destroy_process_group()
