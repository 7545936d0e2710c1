#!/usr/bin/env python3
"""gcsim pass_power_clock (issue 16): the settled SM clock and board power of memory-bound passes of
different arithmetic per byte, and of NCCL's all-reduce, each back to back for LOOP_S seconds on
H200s: the data for a power term of the passes' SM-side work and of the collectives' kernels
(kernel_power_clock_2026-11-28: an add draws 48 W more than a copy of its bytes, SiLU caps).

Every figure is a loop's second half (step_power_clock.py's `sustained`: CUDA events `time_us`,
NVML's clock `sm_clock_mhz`, energy-counter power `power_w`, averaged reading `power_avg_w`).

    python3 pass_power_clock.py -o OUT.json                      # passes, one GPU (GPU 0)
    torchrun --nproc_per_node 2 pass_power_clock.py -o OUT.json --allreduce   # NCCL, each rank's GPU
"""
import time

import argparse
import hashlib
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serving_kernels_bench as skb  # noqa: E402  (its T0 is set at its import, before torch's)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from serving_step_bench import rms_norm, rotate_half  # noqa: E402
from step_power_clock import Nvml, sustained  # noqa: E402

VERSION = "pass_power_clock 1.0"
LOOP_S = 3.0
BF16 = torch.bfloat16
TOKENS, HIDDEN, FFN, VOCAB, HEADS, HEAD_DIM = 8192, 8192, 14336, 32000, 32, 128


def passes():
    """(name, what, setup -> call): Llama-2-70B's TP2 prefill shapes, 8192 tokens."""
    def tensors(*shapes, dtype=BF16):
        return [torch.randn(*s, device="cuda", dtype=dtype) for s in shapes]

    def gemm():
        a, b = tensors((8192, 8192), (8192, 8192))
        return lambda: torch.mm(a, b)

    def copy():
        x, z = tensors((TOKENS, HIDDEN * 4), (TOKENS, HIDDEN * 4))
        return lambda: z.copy_(x)

    def binary(op):
        def setup():
            x, y, z = tensors((TOKENS, HIDDEN * 2), (TOKENS, HIDDEN * 2), (TOKENS, HIDDEN * 2))
            return lambda: op(x, y, out=z)
        return setup

    def unary(fn):
        def setup():
            (x,) = tensors((TOKENS, FFN))
            return lambda: fn(x)
        return setup

    def norm():
        x, w = tensors((TOKENS, HIDDEN), (HIDDEN,))
        return lambda: rms_norm(x, w, 1e-5)

    def rotary():
        q, cos, sin = tensors((TOKENS, HEADS, HEAD_DIM), (TOKENS, 1, HEAD_DIM), (TOKENS, 1, HEAD_DIM))
        return lambda: q * cos + rotate_half(q) * sin

    def softmax():
        (x,) = tensors((TOKENS // 2, VOCAB), dtype=torch.float32)
        return lambda: torch.softmax(x, dim=-1)

    return [
        ("gemm_8192", "bf16 8192^3 torch.mm (this chip's reference)", gemm),
        ("copy", "z.copy_(x), 8192 x 32768 bf16", copy),
        ("add", "torch.add(x, y, out=z), 8192 x 16384 bf16", binary(torch.add)),
        ("mul", "torch.mul(x, y, out=z), 8192 x 16384 bf16", binary(torch.mul)),
        ("silu", "F.silu(x), 8192 x 14336 bf16", unary(F.silu)),
        ("gelu", "F.gelu(x), 8192 x 14336 bf16", unary(F.gelu)),
        ("rms_norm_eager", "Hugging Face RMSNorm in eager kernels, 8192 x 8192 bf16", norm),
        ("rotary_eager", "q cos + rotate_half(q) sin, 8192 x 32 x 128 bf16", rotary),
        ("softmax_fp32", "torch.softmax over 4096 x 32000 fp32 logits", softmax),
    ]


class RankNvml(Nvml):
    """Nvml on GPU `index` (a torchrun rank's own; the machine runs with every GPU visible)."""

    def __init__(self, index):  # noqa: super().__init__ reads CUDA_VISIBLE_DEVICES instead
        import threading

        import pynvml
        pynvml.nvmlInit()
        self.nv, self.h = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
        self.rows, self._stop = [], False
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()


def new_doc(mode):
    doc = {"schema": "gcsim.pass_power_clock.v1", "method": __doc__, "mode": mode, "errors": [],
           "skipped": [], "idle": {}, "loops": []}
    doc["meta"] = skb.provenance()
    doc["meta"]["script"] = "calibration/microbench/pass_power_clock.py"
    doc["meta"]["script_version"] = VERSION
    for name in ("pass_power_clock.py", "step_power_clock.py"):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "rb") as fh:
            doc["meta"]["sha256"][name] = hashlib.sha256(fh.read()).hexdigest()
    doc["nvidia_smi_before"] = skb.clocks()
    return doc


def run_passes(a):
    torch.cuda.set_device(0)
    doc = new_doc("passes")
    nvml = Nvml()

    def save():
        doc["elapsed_s"] = time.time() - skb.T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    try:
        t0 = time.time()
        time.sleep(2.0)
        doc["idle"] = nvml.window(t0 + 0.5, time.time())
        for name, what, setup in passes():
            rec = {"loop": name, "what": what}
            if time.time() - skb.T0 > a.budget_s:
                doc["skipped"].append(rec)
                continue
            try:
                call = setup()
                sustained(rec, call, LOOP_S, nvml)
                del call
                skb.log("%-16s %10.1f us, %6.0f MHz, %5.0f W (avg %5.0f)" % (
                    name, rec["time_us"], rec.get("sm_clock_mhz", 0), rec.get("power_w") or 0,
                    rec.get("power_avg_w") or 0))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:800]
                rec["traceback"] = traceback.format_exc()[-2000:]
            doc["loops"].append(rec)
            torch.cuda.empty_cache()
            save()
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "passes", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    finally:
        nvml.stop()
    doc["nvidia_smi_after"] = skb.clocks()
    save()


def run_allreduce(a):
    import torch.distributed as dist
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    doc = new_doc("allreduce")
    doc["rank"], doc["world"] = rank, dist.get_world_size()
    nvml = RankNvml(local)
    out = "%s.rank%d" % (a.out, rank)
    try:
        for mib in (256, 1024):
            rec = {"loop": "all_reduce_%dMiB" % mib, "what": "dist.all_reduce, bf16, NCCL's own choice"}
            x = torch.randn(mib * 2**20 // 2, device="cuda", dtype=BF16)
            sustained(rec, lambda: dist.all_reduce(x), LOOP_S, nvml)
            n = dist.get_world_size()
            rec["busbw_gbs"] = mib * 2**20 * 2 * (n - 1) / n / (rec["time_us"] * 1e-6) / 1e9
            doc["loops"].append(rec)
            skb.log("rank %d %-20s %10.1f us, busbw %6.1f GB/s, %6.0f MHz, %5.0f W" % (
                rank, rec["loop"], rec["time_us"], rec["busbw_gbs"], rec.get("sm_clock_mhz", 0),
                rec.get("power_w") or 0))
            del x
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "allreduce", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    finally:
        nvml.stop()
    doc["nvidia_smi_after"] = skb.clocks()
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--allreduce", action="store_true")
    a = ap.parse_args()
    if a.allreduce:
        run_allreduce(a)
    else:
        run_passes(a)
    skb.log("done in %.1f s" % (time.time() - skb.T0))


if __name__ == "__main__":
    main()
