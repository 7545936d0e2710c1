#!/usr/bin/env python3
"""Attention kernel families on one GPU: PyTorch scaled_dot_product_attention with the default
backend selection and with each backend forced (cuDNN, FlashAttention-2, memory-efficient; math
only on two tiny shapes), bf16, forward and backward, causal and not, head dims 64/128/192 and MLA
(192 for q/k, 128 for v), GQA ratios 1/4/8, sequence 512..32K, plus decode (q_len 1, KV 1K..64K,
contiguous KV standing in for vLLM's paged KV: SDPA has no paged layout).

    CUDA_VISIBLE_DEVICES=0 python3 attention_families_bench.py -o OUT.json [--budget-s 230] [--quick]

Timing is torch_timing.measure (CUDA events, warm-up, back-logged stream; time_us is the spacing of
back-to-back repetitions). Inputs are torch.randn, rotated over enough sets (>= 150 MiB) to defeat
the L2. Backward is timed alone: the forward runs once per input set outside the timing,
torch.autograd.grad(..., retain_graph=True) inside it (time of the backward kernels only).

Records (kind "attention"): batch, heads, kv_heads, q_len, kv_len, head_dim, head_dim_v, causal,
pass fwd|bwd, backend (DEFAULT = no backend forced), gqa_mode (enable_gqa | expanded: K/V repeated
to every query head before the call, for a backend that refuses enable_gqa), time_us, flops
(4*b*h*pairs*(d+dv)/2, x2.5 for bwd; pairs = unmasked (query, key) pairs), bytes for decode, and
the SM clock / power read by NVML just after. A torch.profiler pass records which CUDA kernels
each backend launches ("kernels"), so the default backend is known by name, not assumed.
Points run in priority order; past the time budget the rest are skipped (listed in "skipped").
The JSON is rewritten after every point, so a run cut short keeps what it measured.
"""
import argparse
import contextlib
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "attention_families_bench 1.0"
ROT_BYTES = 150 * 2**20  # >= 3x the 50 MB (H100) / 60 MB (H200) L2
BACKENDS = ("DEFAULT", "CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")
T0 = time.time()
STATE = {"doc": None, "out": None, "budget": 230.0, "nvml": None}


def elapsed():
    return time.time() - T0


def over_budget():
    return elapsed() > STATE["budget"]


def save():
    # Written beside /tmp and copied: $OUT must hold only the two result files.
    tmp = os.path.join(tempfile.gettempdir(), "attention_families_%d.json" % os.getpid())
    with open(tmp, "w") as f:
        json.dump(STATE["doc"], f, indent=1)
    shutil.copyfile(tmp, STATE["out"])


def sha256(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError as ex:
        return "unreadable: %r" % ex


def nvsmi():
    q = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
    out = tt.nvsmi(q)
    if "not a valid" in out.lower() or "invalid" in out.lower():
        out = tt.nvsmi(q.replace("clocks_throttle_reasons", "clocks_event_reasons"))
    return out


def nvml_init():
    try:
        import pynvml
        pynvml.nvmlInit()
        STATE["nvml"] = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(0))
    except Exception as ex:  # noqa: BLE001
        STATE["nvml"] = None
        return repr(ex)[:200]
    return "ok"


def nvml_sample():
    if STATE["nvml"] is None:
        return {}
    try:
        nv, h = STATE["nvml"]
        return {"sm_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                "power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0}
    except Exception:  # noqa: BLE001
        return {}


def backend_ctx(name):
    if name == "DEFAULT":
        return contextlib.nullcontext()
    return sdpa_kernel(getattr(SDPBackend, name))


def pairs(q, kv, causal):
    """Unmasked (query, key) pairs of one head; causal aligned to the bottom right (decode-like)."""
    if not causal:
        return q * kv
    if q <= kv:
        return q * (kv - q) + q * (q + 1) / 2
    return kv * (kv + 1) / 2


def sets_for(bytes_per_set):
    return int(min(8, max(2 if bytes_per_set < 2**30 else 1, math.ceil(ROT_BYTES / bytes_per_set))))


def timing_args(flops):
    # Large points: fewer repetitions (each is >= 10 ms, the spread is small) to stay in budget.
    if flops > 2e12:
        return {"warmup": 2, "min_reps": 5, "batches": 5}
    return {}


def expand(t, h):
    """K or V repeated to h heads, as a new leaf (the copy is made outside any timing)."""
    if t.shape[1] == h:
        return t
    return t.detach().repeat_interleave(h // t.shape[1], dim=1).requires_grad_(t.requires_grad)


def for_mode(sets, mode):
    if mode == "enable_gqa":
        return sets
    return [(q, expand(k, q.shape[1]), expand(v, q.shape[1])) for q, k, v in sets]


def add(rec):
    rec.update(nvml_sample())
    rec["t_s"] = round(elapsed(), 2)
    STATE["doc"]["results"].append(rec)
    print("%-19s %-3s b%-3d h%d/%d q%-5d kv%-5d d%d/%d %-6s %-10s %10.1f us %7.1f TF/s" % (
        rec["backend"], rec["pass"], rec["batch"], rec["heads"], rec["kv_heads"], rec["q_len"],
        rec["kv_len"], rec["head_dim"], rec["head_dim_v"], "causal" if rec["causal"] else "full",
        rec.get("gqa_mode", ""), rec["time_us"], rec.get("tflops", float("nan"))), flush=True)


def error(case, ex):
    STATE["doc"]["errors"].append({"case": case, "error": repr(ex)[:300], "t_s": round(elapsed(), 2)})
    print("ERROR", case.get("backend"), case.get("pass"), repr(ex)[:160], flush=True)


def sdpa(q, k, v, causal):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=k.shape[1] != q.shape[1])


def prefill(b, h, hkv, s, d, causal, backends, dv=None, bwd=True):
    """One shape: the same input sets for every backend; fwd then bwd per backend."""
    dv = dv or d
    bf = torch.bfloat16
    per_set = (b * h * s * (d + dv) + b * hkv * s * (d + dv)) * 2 * 2  # q,o,k,v and their grads
    ns = sets_for(per_set)
    fl = 2.0 * b * h * (d + dv) * pairs(s, s, causal)
    shape = {"kind": "attention", "dtype": "bf16", "batch": b, "heads": h, "kv_heads": hkv, "q_len": s,
             "kv_len": s, "head_dim": d, "head_dim_v": dv, "causal": causal, "rot_sets": ns}
    if over_budget():
        STATE["doc"]["skipped"].append(shape)
        return
    try:
        sets = []
        for _ in range(ns):
            q = torch.randn(b, h, s, d, device="cuda", dtype=bf, requires_grad=True)
            k = torch.randn(b, hkv, s, d, device="cuda", dtype=bf, requires_grad=True)
            v = torch.randn(b, hkv, s, dv, device="cuda", dtype=bf, requires_grad=True)
            sets.append((q, k, v))
    except Exception as ex:  # noqa: BLE001
        error({**shape, "backend": "alloc", "pass": "-"}, ex)
        return
    for be in backends:
        if over_budget():
            STATE["doc"]["skipped"].append({**shape, "backend": be})
            continue
        modes = ("enable_gqa", "expanded") if hkv != h else ("enable_gqa",)
        for mode in modes:
            base = {**shape, "backend": be, "gqa_mode": mode}
            try:
                xs = for_mode(sets, mode)
                with backend_ctx(be), torch.no_grad():
                    st = tt.measure(lambda r: sdpa(*xs[r % ns], causal), **timing_args(fl))
            except Exception as ex:  # noqa: BLE001
                error({**base, "pass": "fwd"}, ex)
                xs = None
                continue  # this mode refused: try the next one
            add({**base, "pass": "fwd", **st, "flops": fl, "tflops": fl / (st["time_us"] * 1e-6) / 1e12})
            if bwd and not over_budget():
                try:
                    with backend_ctx(be):
                        outs = [sdpa(*qkv, causal) for qkv in xs]
                        gos = [torch.randn_like(o) for o in outs]
                        st = tt.measure(lambda r: torch.autograd.grad(
                            outs[r % ns], xs[r % ns], gos[r % ns], retain_graph=True),
                            **timing_args(2.5 * fl))
                    add({**base, "pass": "bwd", **st, "flops": 2.5 * fl,
                         "tflops": 2.5 * fl / (st["time_us"] * 1e-6) / 1e12})
                except Exception as ex:  # noqa: BLE001
                    error({**base, "pass": "bwd"}, ex)
                finally:
                    outs = gos = None
            xs = None
            break  # the first mode that runs is the one recorded
        save()
    del sets
    torch.cuda.empty_cache()


def decode(b, h, hkv, kv, d, backends):
    bf = torch.bfloat16
    kv_bytes = 2 * b * hkv * kv * d * 2
    ns = sets_for(kv_bytes)
    shape = {"kind": "attention", "dtype": "bf16", "batch": b, "heads": h, "kv_heads": hkv, "q_len": 1,
             "kv_len": kv, "head_dim": d, "head_dim_v": d, "causal": False, "pass": "fwd", "rot_sets": ns,
             "kv_layout": "contiguous (stands in for paged)"}
    fl = 4.0 * b * h * d * kv
    if over_budget():
        STATE["doc"]["skipped"].append(shape)
        return
    try:
        sets = [(torch.randn(b, h, 1, d, device="cuda", dtype=bf), torch.randn(b, hkv, kv, d, device="cuda", dtype=bf),
                 torch.randn(b, hkv, kv, d, device="cuda", dtype=bf)) for _ in range(ns)]
    except Exception as ex:  # noqa: BLE001
        error({**shape, "backend": "alloc"}, ex)
        return
    for be in backends:
        if over_budget():
            STATE["doc"]["skipped"].append({**shape, "backend": be})
            continue
        # Expanded K/V would read h/hkv times the bytes: only where that stays small.
        modes = ("enable_gqa", "expanded") if (hkv != h and kv_bytes * h // hkv <= 2**31) else ("enable_gqa",)
        for mode in modes:
            base = {**shape, "backend": be, "gqa_mode": mode,
                    "bytes": kv_bytes * (h // hkv if mode == "expanded" else 1)}
            try:
                xs = for_mode(sets, mode)
                with backend_ctx(be), torch.no_grad():
                    st = tt.measure(lambda r: sdpa(*xs[r % ns], False))
            except Exception as ex:  # noqa: BLE001
                error(base, ex)
                xs = None
                continue
            xs = None
            add({**base, **st, "flops": fl, "tflops": fl / (st["time_us"] * 1e-6) / 1e12,
                 "gbps": base["bytes"] / (st["time_us"] * 1e-6) / 1e9})
            break
        save()
    del sets
    torch.cuda.empty_cache()


def profile_kernels(label, b, h, hkv, s, d, causal, be, bwd=True, dv=None):
    """Which CUDA kernels one call launches under backend `be` (names and device time)."""
    from torch.profiler import ProfilerActivity, profile
    dv = dv or d
    bf = torch.bfloat16
    rec = {"label": label, "backend": be, "batch": b, "heads": h, "kv_heads": hkv, "q_len": s,
           "kv_len": s if s > 1 else 4096, "head_dim": d, "head_dim_v": dv, "causal": causal}
    try:
        kvl = rec["kv_len"]
        q = torch.randn(b, h, s, d, device="cuda", dtype=bf, requires_grad=bwd)
        k = torch.randn(b, hkv, kvl, d, device="cuda", dtype=bf, requires_grad=bwd)
        v = torch.randn(b, hkv, kvl, dv, device="cuda", dtype=bf, requires_grad=bwd)
        for mode in (("enable_gqa", "expanded") if hkv != h else ("enable_gqa",)):
            try:
                ((q, k, v),) = for_mode([(q, k, v)], mode)
                with backend_ctx(be):
                    o = sdpa(q, k, v, causal)  # warm-up (cuDNN builds its plan here)
                    if bwd:
                        o.backward(torch.randn_like(o))
                    torch.cuda.synchronize()
                    with profile(activities=[ProfilerActivity.CUDA]) as prof:
                        o = sdpa(q, k, v, causal)
                        if bwd:
                            o.backward(torch.randn_like(o))
                        torch.cuda.synchronize()
                rec["gqa_mode"] = mode
                break
            except Exception as ex:  # noqa: BLE001
                rec["error_" + mode] = repr(ex)[:200]
        else:
            STATE["doc"]["kernels"].append(rec)
            return
        ks = []
        for e in prof.key_averages():
            t = getattr(e, "device_time_total", None)
            if t is None:
                t = getattr(e, "cuda_time_total", 0)
            if t and t > 0 and "randn" not in e.key.lower() and "normal" not in e.key.lower():
                ks.append({"name": e.key[:240], "device_us": round(t, 2), "calls": e.count})
        ks.sort(key=lambda x: -x["device_us"])
        rec["kernels"] = ks[:10]
    except Exception as ex:  # noqa: BLE001
        rec["error"] = repr(ex)[:300]
    STATE["doc"]["kernels"].append(rec)
    print("KERNELS", label, be, [k["name"][:90] for k in rec.get("kernels", [])[:3]], flush=True)
    save()


def check_vs_math():
    """Each fused backend's output against an fp32 math reference (relative Frobenius error)."""
    out = []
    q, k, v = (torch.randn(2, 8, 256, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    for be in BACKENDS:
        try:
            with backend_ctx(be):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            rel = ((o.float() - ref).norm() / ref.norm()).item()
            out.append({"check": be + " causal vs fp32 math", "rel_error": rel, "bound": 1e-2, "ok": rel < 1e-2})
        except Exception as ex:  # noqa: BLE001
            out.append({"check": be + " causal vs fp32 math", "error": repr(ex)[:200]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=230.0, help="stop starting new points after this (s)")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    STATE["out"], STATE["budget"] = a.out, a.budget_s
    torch.manual_seed(0)
    here = os.path.dirname(os.path.abspath(__file__))
    meta = tt.provenance("calibration/microbench/attention_families_bench.py", VERSION)
    meta["script_sha256"] = sha256(os.path.join(here, "attention_families_bench.py"))
    meta["torch_timing_sha256"] = sha256(os.path.join(here, "torch_timing.py"))
    meta["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        meta["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception as ex:  # noqa: BLE001
        meta["nccl"] = repr(ex)[:100]
    meta["nvidia_smi_before"] = nvsmi()
    meta["nvml"] = nvml_init()
    meta["sdp_enabled"] = {n: getattr(torch.backends.cuda, n)() for n in (
        "flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled")
        if hasattr(torch.backends.cuda, n)}
    meta["budget_s"] = a.budget_s
    STATE["doc"] = {"schema": "gcsim.microbench.v1", "meta": meta, "checks": [], "kernels": [],
                    "results": [], "errors": [], "skipped": []}
    save()
    STATE["doc"]["checks"] = check_vs_math()
    print(STATE["doc"]["checks"], flush=True)
    save()

    # 1. Which kernels each backend launches (grounds `auto`), on a Llama-like shape.
    for be in BACKENDS:
        profile_kernels("mha_d128_causal", 2, 32, 32, 2048, 128, True, be)
    for be in ("DEFAULT", "CUDNN_ATTENTION"):
        profile_kernels("gqa8_d128_causal", 2, 32, 4, 2048, 128, True, be)
    profile_kernels("mha_d64_causal", 2, 32, 32, 2048, 64, True, "DEFAULT")
    profile_kernels("mha_d192_causal", 2, 32, 32, 2048, 192, True, "DEFAULT")
    profile_kernels("mla_d192_dv128_causal", 2, 32, 32, 2048, 192, True, "DEFAULT", dv=128)
    for be in ("DEFAULT", "CUDNN_ATTENTION", "FLASH_ATTENTION"):
        profile_kernels("decode_gqa4_kv4096", 8, 32, 8, 1, 128, False, be, bwd=False)

    # 2. Math backend on two tiny shapes (it materialises the score matrix).
    for s in (512, 1024):
        prefill(1, 8, 8, s, 64, True, ("MATH",))

    if a.quick:
        prefill(2, 16, 16, 1024, 128, True, BACKENDS)
        decode(8, 32, 8, 1024, 128, BACKENDS)
    else:
        # 3. Head dim 128, MHA: the core grid (16K tokens per call; 32K with 16 heads).
        for s in (512, 1024, 2048, 4096, 8192, 16384, 32768):
            for causal in (True, False):
                b, h = (1, 16) if s == 32768 else (16384 // s, 32)
                prefill(b, h, h, s, 128, causal, BACKENDS)
        # 4. Decode, GQA 4 (Llama-3-8B-like heads), contiguous KV.
        for b in (1, 8, 32, 128):
            for kv in (1024, 4096, 16384, 65536):
                if b * kv <= 2**21:
                    decode(b, 32, 8, kv, 128, BACKENDS)
        # 5. Head dim 64 and 192.
        for d in (64, 192):
            for s in (512, 2048, 8192, 32768):
                for causal in (True, False):
                    b, h = (1, 16) if s == 32768 else (16384 // s, 32)
                    prefill(b, h, h, s, d, causal, BACKENDS)
        # 6. GQA 4 and 8 at head dim 128.
        for hkv in (8, 4):
            for s in (2048, 8192):
                prefill(16384 // s, 32, hkv, s, 128, True, BACKENDS)
        # 7. MLA-like head dims (q/k 192, v 128; DeepSeek-V3 with 128 heads -> 32 here).
        for s in (2048, 8192):
            prefill(16384 // s, 32, 32, s, 192, True, BACKENDS, dv=128)
        # 8. Decode with MHA and with GQA 8, and remaining fills.
        for kv in (4096, 16384):
            decode(8, 32, 32, kv, 128, BACKENDS)
            decode(32, 64, 8, kv, 128, BACKENDS)
        for s in (1024, 4096, 16384):
            prefill(16384 // s, 32, 32, s, 64, True, BACKENDS)
            prefill(16384 // s, 32, 32, s, 192, True, BACKENDS)

    STATE["doc"]["meta"]["nvidia_smi_after"] = nvsmi()
    STATE["doc"]["meta"]["elapsed_s"] = round(elapsed(), 1)
    save()
    print("done: %d results, %d errors, %d skipped, %.1f s" % (
        len(STATE["doc"]["results"]), len(STATE["doc"]["errors"]), len(STATE["doc"]["skipped"]), elapsed()))


if __name__ == "__main__":
    main()
