#!/usr/bin/env python3
"""Attention (PyTorch's default SDPA) beside an NCCL kernel that is only *waiting* for its peer.

Question (gcsim issue 16): in the 4-GPU strategy steps the attention class runs 7-17% slower than
alone wherever NCCL kernels sit beside it (PP's send/recv, DP's all-reduce), even where they move
no bytes while attention runs. cuDNN's SDPA kernels launch one CTA per SM (grid = SM count), so an
SM that an NCCL kernel holds while it spins could push CTAs into a second pass.

2 ranks (torchrun). For each case, rank M (the measured one) starts an NCCL op whose peer enters it
late (the peer's GPU sleeps first), then runs N attention iterations timed with CUDA events; the
same N iterations alone are the baseline. Cases: recv waiting for a send, send waiting for a recv,
all-reduce (64 MiB) waiting for the peer's; SDPA forward and backward at batch 2, 32 heads, seq
4096, head dim 128, causal, bf16 (the strategy steps' shape) and batch 4, seq 2048.
Writes one JSON (with versions, nvidia-smi state, the script's sha256) and prints a log.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

T0 = time.time()


def log(msg):
    print("[%6.1fs] [r%d] %s" % (time.time() - T0, dist.get_rank() if dist.is_initialized() else -1, msg),
          flush=True)


def nvsmi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,clocks.mem,"
                               "power.draw,temperature.gpu,clocks_throttle_reasons.active", "--format=csv"],
                              capture_output=True, text=True, timeout=20).stdout
    except Exception as ex:  # noqa: BLE001
        return repr(ex)


def sleep_cycles_per_us():
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    a.record()
    torch.cuda._sleep(20_000_000)
    b.record()
    torch.cuda.synchronize()
    return 20_000_000 / (a.elapsed_time(b) * 1e3)


class Attn:
    def __init__(self, b, h, s, d, backward):
        self.backward = backward
        g = torch.Generator(device="cuda").manual_seed(1)
        mk = lambda: torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
        self.q, self.k, self.v = mk(), mk(), mk()
        if backward:
            for t in (self.q, self.k, self.v):
                t.requires_grad_(True)
            self.out = F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=True)
            self.dout = torch.randn_like(self.out)

    def __call__(self):
        if self.backward:
            torch.autograd.grad(self.out, (self.q, self.k, self.v), self.dout, retain_graph=True)
        else:
            F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=True)


def timed(fn, n):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        fn()
        ev[i + 1].record()
    return ev


def per_iter_us(ev):
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(len(ev) - 1)]


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=60)
    args = ap.parse_args()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
    rank = dist.get_rank()
    peer = 1 - rank
    doc = {"schema": "gcsim.calibration.attention_beside_waiting_nccl.v1",
           "script_sha256": hashlib.sha256(open(__file__, "rb").read()).hexdigest(),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())), "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(), "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
           "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nvidia_smi_before": nvsmi() if rank == 0 else "",
           "iters": args.iters, "reps": args.reps, "cases": [], "errors": []}
    cyc = sleep_cycles_per_us()
    doc["sleep_cycles_per_us"] = cyc
    buf = torch.ones(16 * 2**20, device="cuda")  # 64 MiB fp32
    p2p = torch.ones(2**20, device="cuda", dtype=torch.bfloat16)  # 2 MiB message
    # Warm-up: communicators for all-reduce and for p2p both ways.
    dist.all_reduce(buf)
    for src in (0, 1):
        if rank == src:
            dist.send(p2p, peer)
        else:
            dist.recv(p2p, peer)
    torch.cuda.synchronize()
    dist.barrier()

    shapes = [("b2h32s4096", 2, 32, 4096), ("b4h32s2048", 4, 32, 2048)]
    kinds = ["recv_waiting", "send_waiting", "allreduce_waiting"]

    def save():
        with open(args.o + ".rank%d" % rank, "w") as f:
            json.dump(doc, f, indent=1)

    for sname, b, h, s in shapes:
        for backward in (False, True):
            name = "sdpa_%s_%s" % ("bwd" if backward else "fwd", sname)
            try:
                fn = Attn(b, h, s, 128, backward)
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
                alone = []
                for _ in range(args.reps):
                    alone += per_iter_us(timed(fn, args.iters))
                t_iter = median(alone)
                log("%s alone median %.1f us" % (name, t_iter))
            except Exception as ex:  # noqa: BLE001
                doc["errors"].append("%s setup: %r" % (name, ex))
                log("ERROR %s setup %r" % (name, ex))
                dist.barrier()
                continue
            # The peer sleeps 1.5x the measured loop before entering its side of the op.
            delay_cycles = int(1.5 * t_iter * args.iters * cyc) + int(200 * cyc)
            for kind in kinds:
                for measured in (0, 1):
                    over = torch.tensor([1 if time.time() - T0 > args.budget_s else 0], device="cuda")
                    dist.all_reduce(over, op=dist.ReduceOp.MAX)  # both ranks stop at the same case
                    if over.item():
                        doc["errors"].append("budget reached before %s %s r%d" % (name, kind, measured))
                        break
                    per = []
                    try:
                        for _ in range(args.reps):
                            dist.barrier()
                            torch.cuda.synchronize()
                            if rank == measured:
                                if kind == "recv_waiting":
                                    work = dist.irecv(p2p, peer)
                                elif kind == "send_waiting":
                                    work = dist.isend(p2p, peer)
                                else:
                                    work = dist.all_reduce(buf, async_op=True)
                                ev = timed(fn, args.iters)
                                work.wait()
                                per += per_iter_us(ev)
                            else:
                                torch.cuda._sleep(delay_cycles)
                                if kind == "recv_waiting":
                                    dist.send(p2p, peer)
                                elif kind == "send_waiting":
                                    dist.recv(p2p, peer)
                                else:
                                    dist.all_reduce(buf)
                                torch.cuda.synchronize()
                        if rank == measured:
                            m = median(per)
                            doc["cases"].append({"kernel": name, "beside": kind, "rank": rank,
                                                 "alone_us": t_iter, "beside_us": m, "slowdown": m / t_iter,
                                                 "beside_all_us": per, "alone_all_us": alone})
                            log("%s beside %s: %.1f us (x%.3f)" % (name, kind, m, m / t_iter))
                    except Exception as ex:  # noqa: BLE001
                        doc["errors"].append("%s %s r%d: %r" % (name, kind, measured, ex))
                        log("ERROR %s %s %r" % (name, kind, ex))
                    save()
            del fn
            torch.cuda.empty_cache()
    torch.cuda.synchronize()
    dist.barrier()
    if rank == 0:
        doc["nvidia_smi_after"] = nvsmi()
    save()
    # Rank 0 merges both ranks' files into the one output.
    dist.barrier()
    if rank == 0:
        merged = {"rank0": doc}
        try:
            with open(args.o + ".rank1") as f:
                merged["rank1"] = json.load(f)
        except Exception as ex:  # noqa: BLE001
            merged["rank1_error"] = repr(ex)
        with open(args.o, "w") as f:
            json.dump(merged, f, indent=1)
        for r in (0, 1):
            try:
                os.remove(args.o + ".rank%d" % r)
            except OSError:
                pass
        log("done, %d cases on rank 0, errors: %s" % (len(doc["cases"]), doc["errors"]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
