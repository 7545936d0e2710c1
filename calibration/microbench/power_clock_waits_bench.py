#!/usr/bin/env python3
"""Does a wait between GEMM bursts let the power-capped SM clock recover? (gcsim issue 16, clock2)

Two processes (torch.distributed.run, 2 GPUs). GPU 0 (rank 0) runs bursts of BURST bf16 8192^3
GEMMs (~13 ms at the capped clock) separated by a wait of W ms, W in 2, 5, 10, 25, the wait being

  idle  host-side: torch.cuda.synchronize() then time.sleep(W): no kernel on GPU 0
  nccl  as pp_step_bench.py's stage 0 does in its 1F1B bubbles: one batch_isend_irecv of a 32 MiB
        send to GPU 1 (an activation, bf16 1 x 4096 x 4096) and a 32 MiB recv from it (the
        gradient), waited on; GPU 1, whose stream only ever holds recv(32 MiB) ->
        torch.cuda._sleep(W) -> send(32 MiB), answers W ms after the activation arrived, so GPU 0
        spends about W ms (plus the two transfers) inside the NCCL kernel, spinning on its SMs
  spin  torch.cuda._sleep for W ms of cycles at f_max (one thread spinning; longer at a lower clock)

Each phase: 1.5 s rest (host idle, GPU 0 idle), then ~3 s of bursts (the burst count is fixed from
the back-to-back GEMM phase's steady time so both ranks agree on it). The first phase is GEMMs back
to back (the capped reference). Every GEMM and every wait kernel has a CUDA event pair mapped onto
the host clock; NVML (pynvml, every 10 ms: SM clock, power, instant power, energy, reasons) and
nvidia-smi (-lms 50) sample GPU 0 in the background (power_clock_bench.py's samplers, copied here).

Per phase summary (second half of the phase): GEMM median time, median by position in the burst,
mean measured gap between bursts (first GEMM's start minus the previous burst's last GEMM's end),
NVML median SM clock and mean power.

    NCCL_NVLS_ENABLE=0 ... python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
        wait_bench.py -o OUT.json [--scale 1.0] [--budget-s 200]
"""
import os
import time as _time

T_START = _time.time()
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
               ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

import argparse
import datetime
import hashlib
import json
import statistics
import sys
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import power_clock_bench as pcb  # noqa: E402  samplers, KernelLog, rates, GEMM operands

BURST = 8                    # GEMMs per burst (~13 ms at the capped clock on an H100)
WAITS_MS = (2, 5, 10, 25)
MODES = ("idle", "nccl", "spin")
REST_S, LOAD_S = 1.5, 3.0
MSG_BYTES = 32 << 20  # pp_step_bench.py's activation: bf16 1 x 4096 x 4096


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def plan(gemm_s, scale):
    """[(name, mode, wait_ms, bursts)] in a fixed order that both ranks compute: the idle and spin
    waits interleaved per wait, then the NCCL ones (last, so a stalled NCCL exchange cannot take
    the others' results)."""
    out = []
    for modes in (("idle", "spin"), ("nccl",)):
        for w in WAITS_MS:
            for m in modes:
                n = max(4, int(round(LOAD_S * scale / (BURST * gemm_s + w * 1e-3))))
                out.append(("%s_%dms" % (m, w), m, w, n))
    return out


def summarize(tab, burst):
    """Second-half stats of a burst phase: GEMM median, by position in the burst, the gaps."""
    kinds = tab["kinds"]
    gi = kinds.index("gemm") if "gemm" in kinds else -1
    idx = [i for i, k in enumerate(tab["kind"]) if k == gi]
    if len(idx) < 2 * burst:
        return {}
    g_t = [tab["t_s"][i] for i in idx]
    g_d = [tab["dur_us"][i] for i in idx]
    nb = len(idx) // burst
    half = nb // 2
    pos = [[] for _ in range(burst)]
    gaps = []
    for b in range(half, nb):
        for p in range(burst):
            pos[p].append(g_d[b * burst + p])
        if b > 0:
            prev_end = g_t[b * burst - 1] + g_d[b * burst - 1] * 1e-6
            gaps.append((g_t[b * burst] - prev_end) * 1e6)
    allg = [x for p in pos for x in p]
    res = {"bursts": nb, "gemm_median_us": round(statistics.median(allg), 1),
           "gemm_mean_us": round(statistics.mean(allg), 1),
           "gemm_median_by_position_us": [round(statistics.median(p), 1) for p in pos],
           "gap_mean_us": round(statistics.mean(gaps), 1) if gaps else None,
           "gap_median_us": round(statistics.median(gaps), 1) if gaps else None}
    wi = kinds.index("wait") if "wait" in kinds else -1
    wd = [tab["dur_us"][i] for i, k in enumerate(tab["kind"]) if k == wi]
    if wd:
        res["wait_kernel_median_us"] = round(statistics.median(wd[len(wd) // 2:]), 1)
    first_b = [g_d[p] for p in range(burst)]  # the first burst after the rest
    res["first_burst_us"] = [round(x, 1) for x in first_b]
    return res


def nvml_summary(rows, name, t0, t1):
    """Median SM clock and mean power of NVML rows of phase `name` in [t0, t1]."""
    r = [x for x in rows if x[1] == name and t0 <= x[0] <= t1]
    if not r:
        return {}
    return {"nvml_n": len(r), "sm_mhz_median": statistics.median([x[2] for x in r]),
            "sm_mhz_mean": round(statistics.mean([x[2] for x in r]), 1),
            "power_w_mean": round(statistics.mean([x[4] for x in r]), 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--budget-s", type=float, default=200.0, help="no new phase after this (from start)")
    args = ap.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    assert world == 2, "wait_bench.py needs exactly 2 ranks"
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    # As pp_step_bench.py (which ran this exchange on these machines): lazy NCCL init, every p2p
    # op through batch_isend_irecv. The first call's eager init (device_id) with an unbatched
    # dist.recv on rank 1 against rank 0's batched send+recv failed inside NCCL ("Message
    # truncated: received 16384 bytes instead of 8192").
    dist.init_process_group("nccl")
    act = torch.zeros(MSG_BYTES // 2, device=dev, dtype=torch.bfloat16)
    msg = torch.zeros(MSG_BYTES // 2, device=dev, dtype=torch.bfloat16)

    def p2p(*ops):  # one batch_isend_irecv, waited on (the stream waits, not the host)
        for req in dist.batch_isend_irecv([dist.P2POp(op, t, peer) for op, t, peer in ops]):
            req.wait()

    def exchange():  # rank 0: send the activation and receive the gradient in one group
        p2p((dist.isend, act, 1), (dist.irecv, msg, 1))
    max_mhz = 1980.0

    # Warm up the p2p path both ways (communicator and connections made here, not in a phase).
    for _ in range(3):
        if rank == 0:
            exchange()
        else:  # the same group as rank 0's (connections both ways set up in one exchange)
            p2p((dist.irecv, act, 0), (dist.isend, msg, 0))
    torch.cuda.synchronize()
    pcb.log("rank %d p2p warm: activation and gradient buffers %d and %d bytes" % (
        rank, act.numel() * act.element_size(), msg.numel() * msg.element_size()))

    if rank == 1:
        # _sleep's cycles per second on GPU 1 (its clock while it only sleeps and sends).
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        rate = []
        for _ in range(5):
            s.record()
            torch.cuda._sleep(2_000_000)
            e.record()
            e.synchronize()
            rate.append(2_000_000 / (s.elapsed_time(e) * 1e-3))
        cyc_per_s = statistics.median(rate)
        g = torch.zeros(1, device=dev, dtype=torch.float64)
        dist.broadcast(g, 0)
        gemm_s = float(g.item())
        pcb.log("rank 1: sleep rate %.4g cycles/s, gemm %.1f us" % (cyc_per_s, gemm_s * 1e6))
        for name, mode, w, n in plan(gemm_s, args.scale):
            go = torch.zeros(1, device=dev, dtype=torch.float64)
            dist.broadcast(go, 0)  # rank 0 says whether the phase runs (budget)
            if go.item() == 0:
                break
            if mode != "nccl":
                continue
            cyc = int(w * 1e-3 * cyc_per_s)
            ends = []
            for _ in range(n):
                p2p((dist.irecv, act, 0))
                torch.cuda._sleep(cyc)
                p2p((dist.isend, msg, 0))
                ev = torch.cuda.Event()
                ev.record()
                ends.append(ev)
                if len(ends) > 4:
                    ends[-5].synchronize()
            torch.cuda.synchronize()
        torch.cuda.synchronize()
        with open(args.o + ".rank1.json", "w") as f:  # before the barrier: rank 0 reads it after
            json.dump({"sleep_cycles_per_s": cyc_per_s, "gpu": torch.cuda.get_device_name(dev)}, f)
        dist.barrier()
        dist.destroy_process_group()
        return 0

    # rank 0
    section = {"name": "init"}
    current = lambda: section["name"]  # noqa: E731
    smi = pcb.SmiSampler(current)
    nvml = pcb.NvmlSampler(current, 0.01)
    if nvml.ok:
        try:
            max_mhz = float(nvml.nv.nvmlDeviceGetMaxClockInfo(nvml.h, nvml.nv.NVML_CLOCK_SM))
        except Exception:  # noqa: BLE001
            pass
    p = torch.cuda.get_device_properties(dev)
    here = os.path.dirname(os.path.abspath(__file__))
    meta = {"schema": "gcsim.power_clock_waits.v1", "device": torch.cuda.get_device_name(dev),
            "sms": p.multi_processor_count, "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": pcb.nccl_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "script_sha256": {"wait_bench.py": sha(os.path.join(here, "wait_bench.py")),
                              "power_clock_bench.py": sha(os.path.join(here, "power_clock_bench.py"))},
            "smi_before": pcb.smi_snapshot(), "smi_fields": smi.fields, "smi_error": smi.err,
            "nvml": nvml.ok, "nvml_error": nvml.err, "nvml_uuid": nvml.uuid, "max_sm_mhz": max_mhz,
            "nvml_columns": ["t_s", "phase", "sm_mhz", "mem_mhz", "power_w", "power_instant_w",
                             "energy_j", "reasons"],
            "smi_columns": ["t_s", "phase"] + smi.fields, "method": __doc__, "scale": args.scale,
            "burst": BURST, "msg_bytes": MSG_BYTES, "rest_s": REST_S, "load_s": LOAD_S,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                   "NVSHMEM_DISABLE_NVLS", "NCCL_RUNTIME_CONNECT")}}
    out = {"meta": meta, "phases": [], "errors": []}

    def save():
        out["nvml_samples"] = list(nvml.rows) if nvml.ok else []
        out["smi_samples"] = list(smi.rows)
        tmp = args.o + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, separators=(",", ":"))
        os.replace(tmp, args.o)

    ops = pcb.gemm_sets()
    for a, b, c in ops:
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    work = {"gemm": 2.0 * pcb.N ** 3, "wait": 1.0}
    gi = [0]

    def gemm(kl):
        a, b, c = ops[gi[0] % 2]
        gi[0] += 1
        kl.run("gemm", lambda: torch.matmul(a, b, out=c))

    def run_phase(name, body, extra):
        section["name"] = name + " rest"
        torch.cuda.synchronize()
        time.sleep(REST_S)
        section["name"] = name
        kl = pcb.KernelLog()
        t_start = time.time() - pcb.T0
        try:
            body(kl)
            tab = kl.table()
            t_end = time.time() - pcb.T0
            rec = {"phase": name, "t_start_s": round(t_start, 4), "t_end_s": round(t_end, 4),
                   "kernels": tab, "rates": pcb.rates(tab, work)}
            rec.update(extra)
            rec["summary"] = summarize(tab, BURST if extra.get("mode") else 1)
            rec["summary"].update(nvml_summary(nvml.rows if nvml.ok else [], name,
                                               t_start + (t_end - t_start) / 2, t_end))
            out["phases"].append(rec)
            pcb.log("%-10s %s" % (name, json.dumps({k: v for k, v in rec["summary"].items()
                                                     if k != "first_burst_us"})))
            return rec
        except Exception:  # noqa: BLE001
            out["errors"].append({"phase": name, "error": traceback.format_exc()})
            pcb.log("%s failed:\n%s" % (name, traceback.format_exc()))
            return None
        finally:
            section["name"] = "between"
            save()

    section["name"] = "idle"
    time.sleep(2.0 * args.scale)

    def back_to_back(kl):
        t_end = time.perf_counter() + LOAD_S * args.scale
        while time.perf_counter() < t_end:
            for _ in range(16):
                gemm(kl)
            kl.throttle_host()

    rec = run_phase("gemm", back_to_back, {})
    gemm_s = rec["rates"]["gemm"]["steady_us"] * 1e-6 if rec and "gemm" in rec["rates"] else 1.65e-3
    g = torch.tensor([gemm_s], device=dev, dtype=torch.float64)
    dist.broadcast(g, 0)
    meta["gemm_steady_s"] = gemm_s
    spin_cycles = {w: int(w * 1e-3 * max_mhz * 1e6) for w in WAITS_MS}
    meta["spin_cycles"] = spin_cycles

    for name, mode, w, n in plan(gemm_s, args.scale):
        go = time.time() - T_START < args.budget_s
        dist.broadcast(torch.tensor([1.0 if go else 0.0], device=dev, dtype=torch.float64), 0)
        if not go:
            out["errors"].append({"phase": name, "error": "budget: not run"})
            pcb.log("budget reached: %s and later phases not run" % name)
            break

        def body(kl, mode=mode, w=w, n=n):
            for b in range(n):
                for _ in range(BURST):
                    gemm(kl)
                if mode == "idle":
                    torch.cuda.synchronize()
                    time.sleep(w * 1e-3)
                elif mode == "spin":
                    kl.run("wait", lambda: torch.cuda._sleep(spin_cycles[w]))
                    kl.throttle_host(behind=4 * (BURST + 1))
                else:
                    kl.run("wait", exchange)
                    kl.throttle_host(behind=4 * (BURST + 1))
            torch.cuda.synchronize()

        run_phase(name, body, {"mode": mode, "wait_ms": w, "bursts_planned": n})

    section["name"] = "end"
    time.sleep(0.3)
    torch.cuda.synchronize()
    dist.barrier()
    smi.stop()
    nvml.stop()
    meta["smi_after"] = pcb.smi_snapshot()
    meta["wall_s"] = round(time.time() - T_START, 1)
    try:
        with open(args.o + ".rank1.json") as f:  # same host, same folder: rank 1's calibration
            meta["rank1"] = json.load(f)
    except Exception:  # noqa: BLE001
        meta["rank1"] = None
    save()
    dist.destroy_process_group()
    pcb.log("done: %d phases, %d errors, %d NVML and %d nvidia-smi samples, %.0f s" % (
        len(out["phases"]), len(out["errors"]), len(out["nvml_samples"]), len(out["smi_samples"]),
        meta["wall_s"]))
    return 0 if not out["errors"] else 3


if __name__ == "__main__":
    sys.exit(main())
