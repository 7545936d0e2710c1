#!/usr/bin/env python3
"""Board power and SM clock of each part of a long prefill step, run alone back to back on 4 GPUs
(issue 16: gcsim's serving governor gives TP2's 8192-token Llama-2-70B prefill 1796 MHz at the
700 W cap where three H100 machines measured 1655-1729 MHz; which part draws more than modelled?).

    torchrun --standalone --nproc_per_node 4 phase_power_bench.py -o OUT.json [--seconds 6] [--set attention]

Phases (every rank runs the same one on its own GPU; the collectives over the groups named):
  idle            nothing on any GPU
  ar_tp2_128MiB   NCCL all_reduce (sum, bf16) of 128 MiB over {0,1} and {2,3} at once, back to back:
                  the TP2 prefill's all-reduce of [8192, 8192] bf16
  ar_tp4_128MiB   the same over all 4 GPUs (TP4's)
  ar_tp4_16MiB    16 MiB over all 4 (a 1024-token step's)
  sdpa_tp2        PyTorch's default SDPA (cuDNN on Hopper), causal, b1, 32 query / 4 KV heads, 8192
                  tokens, head dim 128, enable_gqa: TP2's prefill attention
  sdpa_tp4        the same with 16 / 2 heads (TP4's)
  silu_mul        F.silu(gate) * up, [8192, 14336] bf16 each (eager: two kernels): TP2's activation
  gemm_up         [8192, 8192] @ [8192, 28672] bf16: TP2's gate+up projection
--set attention (version 1.1) runs attention_phases() instead (SDPA forward and backward), each
phase first as a burst of 8 calls timed alone after 2 s idle (near the rested clock), then the loop.
Per phase and rank: operations done and CUDA-event time per operation (the whole loop between two
events over the count); mean board power from NVML's energy counter over the phase's second
half (exact: the counter integrates the board power) and the mean and median SM clock and
NVML's instant power of the 10 ms samples in that half; the host keeps at most 8 operations
queued, and every 16 operations the ranks agree on a 2-float all-reduce (a host sync: a gap of
tens of microseconds). nvidia-smi before and after every phase (clocks, throttle reasons).
"""
import time

T0 = time.time()

import argparse  # noqa: E402
import datetime  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

VERSION = "phase_power_bench 1.1"
log = bench_common.make_log(T0)
MIB = 1 << 20


class Nvml:
    """This rank's GPU through NVML: 10 ms samples of SM clock and instant power in a thread,
    and the energy counter (mJ since driver load) on demand."""

    def __init__(self, index):
        import pynvml
        pynvml.nvmlInit()
        self.nv = pynvml
        self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
        self.instant = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", 186)
        self.rows = []
        self._stop = False
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def energy_j(self):
        return self.nv.nvmlDeviceGetTotalEnergyConsumption(self.h) / 1000.0

    def _loop(self):
        nv, h = self.nv, self.h
        while not self._stop:
            try:
                sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
                v = nv.nvmlDeviceGetFieldValues(h, [self.instant])[0]
                inst = v.value.uiVal / 1000.0 if v.nvmlReturn == 0 else None
                self.rows.append((time.time(), sm, inst))
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.01)

    def window(self, a, b):
        rows = [r for r in self.rows if a <= r[0] <= b]
        sm = [r[1] for r in rows]
        inst = [r[2] for r in rows if r[2] is not None]
        return {"samples": len(rows),
                "sm_mhz_mean": statistics.fmean(sm) if sm else None,
                "sm_mhz_median": statistics.median(sm) if sm else None,
                "instant_w_median": statistics.median(inst) if inst else None}

    def stop(self):
        self._stop = True


def phases(rank, pair, world):
    dev, bf = torch.device("cuda"), torch.bfloat16
    out = {"idle": None}

    def all_reduce(group, mib):
        x = torch.ones(mib * MIB // 2, device=dev, dtype=bf)
        return lambda: dist.all_reduce(x, group=group)
    out["ar_tp2_128MiB"] = ("all_reduce", 128 * MIB, 2, all_reduce(pair, 128))
    out["ar_tp4_128MiB"] = ("all_reduce", 128 * MIB, 4, all_reduce(world, 128))
    out["ar_tp4_16MiB"] = ("all_reduce", 16 * MIB, 4, all_reduce(world, 16))

    def sdpa(hq, hkv, s=8192, d=128):
        q = torch.randn(1, hq, s, d, device=dev, dtype=bf)
        k = torch.randn(1, hkv, s, d, device=dev, dtype=bf)
        v = torch.randn(1, hkv, s, d, device=dev, dtype=bf)
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    out["sdpa_tp2"] = ("sdpa", 0, 1, sdpa(32, 4))
    out["sdpa_tp4"] = ("sdpa", 0, 1, sdpa(16, 2))
    g = torch.randn(8192, 14336, device=dev, dtype=bf)
    u = torch.randn(8192, 14336, device=dev, dtype=bf)
    out["silu_mul"] = ("elementwise", 0, 1, lambda: F.silu(g) * u)
    a = torch.randn(8192, 8192, device=dev, dtype=bf)
    w = torch.randn(8192, 28672, device=dev, dtype=bf)
    out["gemm_up"] = ("gemm", 0, 1, lambda: a @ w)
    return out


def attention_phases():
    """--set attention: PyTorch's default SDPA (cuDNN on Hopper), causal, head dim 128, forward and
    backward, each GPU on its own: serving's long-prefill shapes and the strategy steps' training
    shape. The backward phases replay autograd's backward of one forward (retain_graph): the cuDNN
    backward kernel and its side kernels (dO.O, the dQ conversion, GQA's head sums)."""
    dev, bf = torch.device("cuda"), torch.bfloat16
    out = {"idle": None}

    def qkv(b, hq, hkv, s, grad):
        return [torch.randn(b, h, s, 128, device=dev, dtype=bf, requires_grad=grad) for h in (hq, hkv, hkv)]

    def fwd(b, hq, hkv, s):
        q, k, v = qkv(b, hq, hkv, s, False)
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hkv < hq)

    def bwd(b, hq, hkv, s):
        q, k, v = qkv(b, hq, hkv, s, True)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hkv < hq)
        g = torch.randn_like(o)

        def step():
            q.grad = k.grad = v.grad = None
            o.backward(g, retain_graph=True)
        return step
    out["fwd_b1_h32_kv4_s8192"] = ("sdpa", 0, 1, fwd(1, 32, 4, 8192))
    out["fwd_b1_h16_kv2_s8192"] = ("sdpa", 0, 1, fwd(1, 16, 2, 8192))
    out["fwd_b1_h32_kv4_s4096"] = ("sdpa", 0, 1, fwd(1, 32, 4, 4096))
    out["fwd_b2_h32_kv32_s4096"] = ("sdpa", 0, 1, fwd(2, 32, 32, 4096))
    out["bwd_b2_h32_kv32_s4096"] = ("sdpa_bwd", 0, 1, bwd(2, 32, 32, 4096))
    out["bwd_b1_h32_kv4_s8192"] = ("sdpa_bwd", 0, 1, bwd(1, 32, 4, 8192))
    return out


def run_burst(fn, nv, local, rest_s=2.0, calls=8):
    """After `rest_s` idle, `calls` calls each timed alone (CUDA events, synchronised): the kernel
    near the rested clock; NVML's clock over the burst."""
    dist.barrier(device_ids=[local])
    fn()
    torch.cuda.synchronize()
    time.sleep(rest_s)
    ta = time.time()
    times = []
    for _ in range(calls):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    tb = time.time()
    w = nv.window(ta, tb)
    return {"burst_us": statistics.median(times), "burst_us_all": times, "burst_sm_mhz": w["sm_mhz_mean"],
            "burst_samples": w["samples"]}


def run_phase(fn, seconds, nv, local):
    """fn back to back for `seconds` (all ranks stop together); returns the rank's record."""
    dist.barrier(device_ids=[local])
    t_start = time.time()
    half = t_start + seconds / 2
    if fn is None:
        time.sleep(seconds / 2)
        e0, ta = nv.energy_j(), time.time()
        time.sleep(seconds / 2)
        e1, tb = nv.energy_j(), time.time()
        return {"ops": 0, "board_w_energy": (e1 - e0) / (tb - ta), "window_s": tb - ta, **nv.window(ta, tb)}
    for _ in range(3):  # warm-up: NCCL's connections, cuDNN's plan
        fn()
    torch.cuda.synchronize()
    # Every 16 operations all ranks agree (a 2-float all-reduce, MAX) whether the phase's half
    # is reached (timing starts) and whether it is over: the same decision at the same operation
    # on every rank, so the collectives stay matched.
    ev_a = None
    n_timed = 0
    e0 = ta = None
    done = []
    flags = torch.zeros(2, device="cuda")
    count = 0
    while True:
        e = torch.cuda.Event()
        fn()
        e.record()
        done.append(e)
        if len(done) > 8:
            done.pop(0).synchronize()
        count += 1
        if ev_a is not None:
            n_timed += 1
        if count % 16:
            continue
        now = time.time()
        flags[0] = 1.0 if now >= half else 0.0
        flags[1] = 1.0 if now - t_start >= seconds else 0.0
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        f = flags.tolist()
        if ev_a is None and f[0] > 0:
            torch.cuda.synchronize()
            e0, ta = nv.energy_j(), time.time()
            ev_a = torch.cuda.Event(enable_timing=True)
            ev_a.record()
        elif ev_a is not None and f[1] > 0:
            break
    ev_b = torch.cuda.Event(enable_timing=True)
    ev_b.record()
    torch.cuda.synchronize()
    e1, tb = nv.energy_j(), time.time()
    # the flags' all-reduces are inside the timed loop: one per 16 operations
    return {"ops": n_timed, "op_us": ev_a.elapsed_time(ev_b) * 1000.0 / n_timed,
            "board_w_energy": (e1 - e0) / (tb - ta), "window_s": tb - ta, **nv.window(ta, tb)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--set", default="prefill", choices=("prefill", "attention"),
                    help="prefill: the parts of TP2's prefill; attention: SDPA forward and backward, "
                         "each phase a rested burst first, then the loop")
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    rank = dist.get_rank()
    pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    out = bench_common.ResultsFile(a.out, "gcsim.phase_power.v1", __file__, VERSION, T0, method=__doc__)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    index = int(visible[local]) if local < len(visible) and visible[local].strip().isdigit() else local
    nv = Nvml(index)
    table = phases(rank, pairs[rank // 2], dist.group.WORLD) if a.set == "prefill" else attention_phases()
    for name, spec in table.items():
        err = None
        rec = None
        try:
            fn = None if spec is None else spec[3]
            burst = run_burst(fn, nv, local) if a.set == "attention" and fn is not None else {}
            rec = run_phase(fn, a.seconds, nv, local)
            rec.update(rank=rank, gpu_index=index, **burst)
        except Exception as ex:  # noqa: BLE001
            err = {"phase": name, "rank": rank, "error": repr(ex)[:1000], "traceback": traceback.format_exc()[-3000:]}
        recs = bench_common.gather(rec)
        if rank == 0:
            kind, nbytes, group = (None, 0, 1) if spec is None else spec[:3]
            out.doc["results"].append({"phase": name, "kind": kind, "bytes": nbytes, "group": group,
                                       "ranks": recs, "nvidia_smi_after": bench_common.clocks()})
            w = [r["board_w_energy"] for r in recs if r]
            us = [r.get("op_us") for r in recs if r and r.get("op_us")]
            clk = [r["sm_mhz_mean"] for r in recs if r and r.get("sm_mhz_mean")]
            bu = ["%.1f@%.0f" % (r["burst_us"], r["burst_sm_mhz"] or 0) for r in recs if r and "burst_us" in r]
            log("%-14s board %s W  op %s us  sm %s MHz%s" % (
                name, "/".join("%.0f" % x for x in w), "/".join("%.1f" % x for x in us),
                "/".join("%.0f" % x for x in clk), ("  burst " + "/".join(bu)) if bu else ""))
        out.gather_errors(err)
    nv.stop()
    out.finish(log)


if __name__ == "__main__":
    main()
