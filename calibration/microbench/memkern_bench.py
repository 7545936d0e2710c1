#!/usr/bin/env python3
"""Memory-bound PyTorch kernels on fewer SMs and beside a running NCCL all-reduce (gcsim "memkern").

Launch one process per GPU (2 GPUs), via calibration/microbench/run_memkern.sh:
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 memkern_bench.py \
        -o OUT.json --holder-so libsm_holder.so --budget-s 120

What it measures, per rank, with CUDA events over batches of back-to-back kernels (events only at
the batch ends, the stream back-logged with torch.cuda._sleep so Python never starves the GPU;
`gate_ok` records that the sleep was still running when the batch had been enqueued), each kernel
rotating over enough input sets that they span >= 256 MiB (5x the 50 MB L2), so every call reads
HBM, not L2:
  kernels (bf16, hidden 4096 for the norms), per call, N = bytes of one input tensor:
    copy (dst.copy_(src), 2N moved), add / mul (out=, 3N), silu (aten silu.out, 2N),
    layer_norm_fwd (aten native_layer_norm, 2N), layer_norm_bwd (aten native_layer_norm_backward,
    dx + dgamma + dbeta: 3N), rms_norm_fwd (F.rms_norm, 2N);
  sizes N: 1, 4, 16, 64, 256, 512 MiB.
  1. "beside": each kernel alone and beside back-to-back all-reduces (SUM, bf16, zeros) of 25 MiB
     (PyTorch DDP's bucket) and 256 MiB, NCCL's default algorithm/protocol/channels (--ar: sizes
     and how many distinct buffers the all-reduces cycle through; 1, the default, all-reduces one
     buffer in place, which a 25 MiB all-reduce then finds in L2).  Both streams
     are released at one GPU instant (event t0); the kernels' batch starts 300 us later; a batch
     counts as "inside" when it starts after the first all-reduce and ends before the last one
     ends.  The all-reduces alone give per-all-reduce time.  Both ranks run the same collectives
     (counts agreed through a gloo all-reduce), so a failure on one rank cannot hang the other.
  2. "sweep": each kernel with k SMs held by sm_holder.cu (exactly 2 x 1024-thread CTAs on each of
     k SMs, so no CTA of the measured kernel fits beside them), k in HOLD_LIST: the time of a
     memory-bound kernel on S = sm_count - k SMs, i.e. how much HBM bandwidth S SMs can draw.
     The holder's own HBM traffic is one L2 atomic per CTA per microsecond.
Each rank writes OUT.json.rank<r> after every point (partial results survive a timeout);
--budget-s (from process start) stops starting new points.
"""
import os
import time as _time

T0 = _time.time()
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
               ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

import argparse  # noqa: E402
import ctypes  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MIB = 1 << 20
BF16 = torch.bfloat16
HIDDEN = 4096
SIZES_MIB = [64, 4, 256, 16, 1, 512]
KERNELS = ["add", "copy", "layer_norm_fwd", "layer_norm_bwd", "mul", "silu", "rms_norm_fwd"]
HOLD_LIST = [0, 8, 16, 24, 32, 48, 66, 82, 99, 112, 124]
BESIDE_SIZES_MIB = [64, 4, 256, 16, 1]
ROTATE_BYTES = 256 * MIB
BATCH_TARGET_US = 2000.0
REPS = 3
HOLD_TIMEOUT_NS = 2_000_000_000


def log(msg):
    r = dist.get_rank() if dist.is_initialized() else -1
    print("[%6.1fs] [r%d] %s" % (time.time() - T0, r, msg), flush=True)


def nvsmi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,clocks.mem,"
                               "power.draw,temperature.gpu,clocks_throttle_reasons.active", "--format=csv"],
                              capture_output=True, text=True, timeout=20).stdout
    except Exception as ex:  # noqa: BLE001
        return repr(ex)


def sha256(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except Exception as ex:  # noqa: BLE001
        return repr(ex)


class Gate:
    """Back-logs a stream with torch.cuda._sleep (cycles calibrated once)."""

    def __init__(self):
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        a.record()
        torch.cuda._sleep(20_000_000)
        b.record()
        torch.cuda.synchronize()
        self.cycles_per_us = 20_000_000 / (a.elapsed_time(b) * 1e3)

    def sleep(self, us):
        torch.cuda._sleep(int(min(us, 300_000.0) * self.cycles_per_us))


# ----------------------------------------------------------------------------
# kernels: make(kind, n_bytes) -> (fn(i), nsets, bytes_moved_per_call)
# ----------------------------------------------------------------------------
def make_kernel(kind, n_bytes, dev):
    n = n_bytes // 2
    rows = max(1, n // HIDDEN)
    n = rows * HIDDEN
    tensors_per_set = {"copy": 2, "add": 3, "mul": 3, "silu": 2, "layer_norm_fwd": 2,
                       "layer_norm_bwd": 3, "rms_norm_fwd": 2}[kind]
    nsets = max(1, min(256, math.ceil(ROTATE_BYTES / (tensors_per_set * n * 2))))

    def t():
        return torch.randn(n, device=dev, dtype=BF16)

    if kind in ("add", "mul"):
        sets = [(t(), t(), torch.empty(n, device=dev, dtype=BF16)) for _ in range(nsets)]
        op = torch.add if kind == "add" else torch.mul

        def fn(i):
            a, b, c = sets[i % nsets]
            op(a, b, out=c)
        moved = 3 * n * 2
    elif kind == "copy":
        sets = [(t(), torch.empty(n, device=dev, dtype=BF16)) for _ in range(nsets)]

        def fn(i):
            s, d = sets[i % nsets]
            d.copy_(s)
        moved = 2 * n * 2
    elif kind == "silu":
        sets = [(t(), torch.empty(n, device=dev, dtype=BF16)) for _ in range(nsets)]

        def fn(i):
            a, c = sets[i % nsets]
            torch.ops.aten.silu.out(a, out=c)
        moved = 2 * n * 2
    elif kind in ("layer_norm_fwd", "layer_norm_bwd", "rms_norm_fwd"):
        w = torch.randn(HIDDEN, device=dev, dtype=BF16)
        b = torch.randn(HIDDEN, device=dev, dtype=BF16)
        xs = [t().view(rows, HIDDEN) for _ in range(nsets)]
        if kind == "layer_norm_fwd":
            def fn(i):
                torch.ops.aten.native_layer_norm(xs[i % nsets], [HIDDEN], w, b, 1e-5)
            moved = 2 * n * 2
        elif kind == "rms_norm_fwd":
            def fn(i):
                F.rms_norm(xs[i % nsets], [HIDDEN], w, 1e-6)
            moved = 2 * n * 2
        else:
            dys = [t().view(rows, HIDDEN) for _ in range(nsets)]
            stats_ = []
            for x in xs:
                _, mean, rstd = torch.ops.aten.native_layer_norm(x, [HIDDEN], w, b, 1e-5)
                stats_.append((mean, rstd))

            def fn(i):
                j = i % nsets
                torch.ops.aten.native_layer_norm_backward(dys[j], xs[j], [HIDDEN], stats_[j][0],
                                                          stats_[j][1], w, b, [True, True, True])
            moved = 3 * n * 2
    else:
        raise ValueError(kind)
    return fn, nsets, moved


class Timer:
    def __init__(self, gate, stream):
        self.gate = gate
        self.stream = stream

    def batch(self, fn, reps, gate_us, start_index=0, before=None, after=None):
        """One batch of `reps` calls on self.stream; returns (us per call, gate_ok).
        before(): enqueued on the stream after the gate, before the start event (extra delay);
        after(): enqueued after the end event (e.g. the holder's stop word)."""
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            self.gate.sleep(gate_us)
            if before is not None:
                before()
            s.record(self.stream)
            for i in range(reps):
                fn(start_index + i)
            e.record(self.stream)
            if after is not None:
                after()
        ok = not s.query()
        e.synchronize()
        return s.elapsed_time(e) * 1e3 / reps, ok


def gate_for(reps):
    return 1500.0 + 30.0 * reps


def probe_us(timer, fn):
    with torch.cuda.stream(timer.stream):
        for i in range(3):
            fn(i)
    torch.cuda.synchronize()
    us, _ = timer.batch(fn, 5, gate_for(5))
    return us


# ----------------------------------------------------------------------------
# section "beside": kernels beside back-to-back all-reduces
# ----------------------------------------------------------------------------
def agree_max(vals, gloo):
    t = torch.tensor(vals, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=gloo)
    return t.tolist()


def parse_ars(text):
    """'25x1,25x8' -> [(25, 1), (25, 8)]: all-reduce MiB x distinct buffers cycled through."""
    out = []
    for item in text.split(","):
        mib, _, nbuf = item.partition("x")
        out.append((int(mib), int(nbuf or 1)))
    return out


def run_beside(args, doc, save, dev, gate, cs, ms, gloo):
    ars = parse_ars(args.ar)
    ar_bufs = {(m, n): [torch.zeros(m * MIB // 2, device=dev, dtype=BF16) for _ in range(n)] for m, n in ars}
    ar_alone = {}
    for key in ars:
        m = key
        bufs = ar_bufs[key]
        for j in range(max(3, len(bufs))):
            dist.all_reduce(bufs[j % len(bufs)])
        torch.cuda.synchronize()
        vals = []
        for _ in range(REPS):
            dist.barrier(group=gloo)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(ms):
                gate.sleep(1500)
                a.record(ms)
                for j in range(20):
                    dist.all_reduce(bufs[j % len(bufs)])
                b.record(ms)
            torch.cuda.synchronize()
            vals.append(a.elapsed_time(b) * 1e3 / 20)
        ar_alone[m] = statistics.median(vals)
        doc["allreduce_alone"].append({"mib": m[0], "buffers": m[1], "us": ar_alone[m], "reps_us": vals})
        log("all-reduce %d MiB x %d buffers alone %.1f us" % (m[0], m[1], ar_alone[m]))
    save()
    timer = Timer(gate, cs)
    for size in args.beside_sizes:
        for kind in args.kernels:
            stop = agree_max([1.0 if time.time() - T0 > args.beside_until_s else 0.0], gloo)[0]
            if stop:
                doc["notes"].append("beside: budget reached before %s %d MiB" % (kind, size))
                return
            ok_local, alone, fn, moved = 1.0, 0.0, None, 0
            try:
                fn, nsets, moved = make_kernel(kind, size * MIB, dev)
                alone = probe_us(timer, fn)
            except Exception:  # noqa: BLE001
                ok_local = 0.0
                doc["errors"].append("beside %s %d: %s" % (kind, size, traceback.format_exc()[-600:]))
            okv, = agree_max([1.0 - ok_local], gloo)
            if okv:
                continue
            reps = int(min(200, max(4, math.ceil(BATCH_TARGET_US / max(alone, 1.0)))))
            for m in ars:
                # all-reduces covering 3x the batch alone + 1.5 ms, the same count on both ranks
                want = (3.0 * reps * alone + 1500.0) / ar_alone[m]
                count = int(min(300, max(3, math.ceil(want))))
                reps_a, count = (int(v) for v in agree_max([reps, count], gloo))
                point = {"kernel": kind, "mib": size, "bytes_moved": moved, "ar_mib": m[0],
                         "ar_buffers": m[1], "ar_count": count,
                         "reps": reps_a, "alone_us": [], "beside_us": [], "inside": [], "gate_ok": [],
                         "ar_span_us": [], "k_start_us": [], "k_end_us": [], "ar_start_us": [],
                         "ar_end_us": []}
                bufs = ar_bufs[m]
                for rep in range(REPS):
                    try:
                        us, gok = timer.batch(fn, reps_a, gate_for(reps_a))
                        point["alone_us"].append(us)
                    except Exception:  # noqa: BLE001
                        doc["errors"].append("alone %s %d: %s" % (kind, size, traceback.format_exc()[-400:]))
                    dist.barrier(group=gloo)
                    torch.cuda.synchronize()
                    t0 = torch.cuda.Event(enable_timing=True)
                    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                    gate_us = gate_for(reps_a) + 40.0 * count
                    with torch.cuda.stream(cs):
                        gate.sleep(gate_us)
                        t0.record(cs)
                    ms.wait_event(t0)
                    with torch.cuda.stream(ms):
                        ev[0].record(ms)
                        for j in range(count):
                            dist.all_reduce(bufs[j % len(bufs)])
                        ev[1].record(ms)
                    try:
                        with torch.cuda.stream(cs):
                            gate.sleep(300)
                            ev[2].record(cs)
                            for i in range(reps_a):
                                fn(i)
                            ev[3].record(cs)
                    except Exception:  # noqa: BLE001
                        doc["errors"].append("beside %s %d: %s" % (kind, size, traceback.format_exc()[-400:]))
                    gate_ok = not t0.query()
                    torch.cuda.synchronize()
                    try:
                        a0, a1, k0, k1 = (t0.elapsed_time(x) * 1e3 for x in ev)
                        point["beside_us"].append((k1 - k0) / reps_a)
                        point["inside"].append(bool(k0 >= a0 and k1 <= a1))
                        point["gate_ok"].append(gate_ok and gok)
                        point["ar_span_us"].append(a1 - a0)
                        point["k_start_us"].append(k0)
                        point["k_end_us"].append(k1)
                        point["ar_start_us"].append(a0)
                        point["ar_end_us"].append(a1)
                    except Exception:  # noqa: BLE001
                        doc["errors"].append("beside read %s %d: %s" % (kind, size, traceback.format_exc()[-400:]))
                doc["beside"].append(point)
                if point["alone_us"] and point["beside_us"]:
                    log("%s %d MiB beside AR %s MiB: alone %.1f us, beside %.1f us, inside %s" % (
                        kind, size, "%dx%d" % m, statistics.median(point["alone_us"]),
                        statistics.median(point["beside_us"]), point["inside"]))
                save()
            del fn
            torch.cuda.empty_cache()


# ----------------------------------------------------------------------------
# section "sweep": kernels with k SMs held
# ----------------------------------------------------------------------------
def run_sweep(args, doc, save, dev, gate, cs, hs, lib):
    sm_count = torch.cuda.get_device_properties(dev).multi_processor_count
    ws = torch.zeros(1024, device=dev, dtype=torch.int32)
    timer = Timer(gate, cs)
    holds = [k for k in HOLD_LIST if k < sm_count]

    def hold(k):
        """Returns None when k SMs are held (k > 0), else an error string."""
        with torch.cuda.stream(hs):
            ws.zero_()
        hs.synchronize()
        rc = lib.holder_launch(int(k), ctypes.c_void_p(ws.data_ptr()), int(sm_count),
                               ctypes.c_ulonglong(HOLD_TIMEOUT_NS), ctypes.c_void_p(hs.cuda_stream))
        if rc != 0:
            return "holder_launch rc %d" % rc
        if not lib.holder_wait_ready(ctypes.c_double(3.0)):
            return "holder not ready in 3 s"
        return None

    def release():
        ws[2:3].fill_(1)

    for size in SIZES_MIB:
        for kind in args.kernels:
            if time.time() - T0 > args.budget_s:
                doc["notes"].append("sweep: budget reached before %s %d MiB" % (kind, size))
                return
            try:
                fn, nsets, moved = make_kernel(kind, size * MIB, dev)
                alone = probe_us(timer, fn)
            except Exception:  # noqa: BLE001
                doc["errors"].append("sweep %s %d: %s" % (kind, size, traceback.format_exc()[-600:]))
                continue
            reps = int(min(200, max(4, math.ceil(BATCH_TARGET_US / max(alone, 1.0)))))
            for k in holds:
                if time.time() - T0 > args.budget_s:
                    break
                point = {"kernel": kind, "mib": size, "bytes_moved": moved, "held_sms": k,
                         "free_sms": sm_count - k, "reps": reps, "us": [], "gate_ok": [], "errors": []}
                for rep in range(REPS):
                    try:
                        torch.cuda.synchronize()
                        err = hold(k) if k > 0 else None
                        if err is not None:
                            point["errors"].append(err)
                            with torch.cuda.stream(cs):
                                release()
                            torch.cuda.synchronize()
                            continue
                        us, ok = timer.batch(fn, reps, gate_for(reps), after=release if k > 0 else None)
                        torch.cuda.synchronize()
                        if k > 0:
                            w = ws[:16].tolist()
                            table = ws[16:16 + 256].tolist()
                            point.setdefault("holder", []).append({
                                "arrived": w[0], "decided": w[1], "timed_out": w[3],
                                "held_cta": w[4], "sms_seen": sum(1 for v in table if v > 0),
                                "ctas_per_sm": sorted(set(v for v in table if v > 0))})
                            if w[3]:
                                point["errors"].append("holder timed out")
                                continue
                        point["us"].append(us)
                        point["gate_ok"].append(ok)
                    except Exception:  # noqa: BLE001
                        point["errors"].append(traceback.format_exc()[-400:])
                        try:
                            with torch.cuda.stream(cs):
                                release()
                            torch.cuda.synchronize()
                        except Exception:  # noqa: BLE001
                            pass
                if point["us"]:
                    point["median_us"] = statistics.median(point["us"])
                    point["gbps"] = moved / point["median_us"] / 1e3
                doc["sweep"].append(point)
                if point["us"] and k in (0, 66, 124):
                    log("%s %d MiB, %d SMs free: %.1f us (%.0f GB/s)" % (
                        kind, size, sm_count - k, point["median_us"], point["gbps"]))
                elif point["errors"]:
                    log("%s %d MiB k=%d errors %s" % (kind, size, k, point["errors"][:1]))
            save()
            del fn
            torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--holder-so", required=True)
    ap.add_argument("--beside-until-s", type=float, default=60.0)
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--ar", default="256x1,25x1",
                    help="all-reduces beside the kernels: MiB x distinct buffers cycled (x1: in place, "
                         "the same buffer every time; more: buffers that together overflow L2)")
    ap.add_argument("--kernels", type=lambda t: t.split(","), default=KERNELS)
    ap.add_argument("--beside-sizes", type=lambda t: [int(x) for x in t.split(",")], default=BESIDE_SIZES_MIB)
    ap.add_argument("--no-sweep", action="store_true", help="skip the held-SM sweep")
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    gloo = dist.new_group(backend="gloo")
    rank = dist.get_rank()
    props = torch.cuda.get_device_properties(local)
    doc = {"schema": "gcsim.calibration.memkern_bench.v1",
           "script_sha256": sha256(__file__), "holder_so_sha256": sha256(args.holder_so),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())), "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(), "sm_count": props.multi_processor_count,
           "l2_bytes": getattr(props, "L2_cache_size", None), "world_size": dist.get_world_size(),
           "rank": rank, "nccl_env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
           "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hidden": HIDDEN,
           "rotate_bytes": ROTATE_BYTES, "hold_list": HOLD_LIST, "args": vars(args),
           "nvidia_smi_before": nvsmi() if rank == 0 else "", "allreduce_alone": [], "beside": [],
           "sweep": [], "errors": [], "notes": []}
    path = args.o + ".rank%d" % rank

    def save():
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)

    gate = Gate()
    doc["sleep_cycles_per_us"] = gate.cycles_per_us
    cs = torch.cuda.Stream()
    ms = torch.cuda.Stream()
    hs = torch.cuda.Stream()
    try:
        lib = ctypes.CDLL(args.holder_so)
        lib.holder_launch.restype = ctypes.c_int
        lib.holder_wait_ready.restype = ctypes.c_int
        doc["holder_regs"] = lib.holder_regs()
    except Exception:  # noqa: BLE001
        lib = None
        doc["errors"].append("holder: " + traceback.format_exc()[-600:])
    save()
    log("start: %s, %d SMs, holder regs %s" % (doc["device"], doc["sm_count"], doc.get("holder_regs")))
    try:
        run_beside(args, doc, save, dev, gate, cs, ms, gloo)
    except Exception:  # noqa: BLE001
        doc["errors"].append("beside: " + traceback.format_exc()[-1500:])
        log("ERROR beside " + traceback.format_exc()[-400:])
    save()
    torch.cuda.synchronize()
    if lib is not None and not args.no_sweep:
        try:
            run_sweep(args, doc, save, dev, gate, cs, hs, lib)
        except Exception:  # noqa: BLE001
            doc["errors"].append("sweep: " + traceback.format_exc()[-1500:])
            log("ERROR sweep " + traceback.format_exc()[-400:])
    if rank == 0:
        doc["nvidia_smi_after"] = nvsmi()
    save()
    log("done: %d beside points, %d sweep points, errors %d" % (
        len(doc["beside"]), len(doc["sweep"]), len(doc["errors"])))
    try:
        dist.barrier(group=gloo)
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    main()
