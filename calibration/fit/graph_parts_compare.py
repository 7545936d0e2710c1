#!/usr/bin/env python3
"""gcsim's CUDA-graph decode step against serving_graph_parts_bench.py's measurement, part by part:
the whole step, the step without its collectives, the collectives' share (whole minus without) and
the kernel classes of one profiled replay (rank 0), plus the launch gaps the profile shows.

    M=calibration/measurements/h100-x4/serving_graph_parts_2026-11-27
    python3 calibration/fit/graph_parts_compare.py --gcsim build/gcsim \
        --measurement $M/graph_parts.json $M/v1.0_run/graph_parts.json

gcsim runs the model's TP4 b8 kv2048 decode config (calibration/validation/serving or serving_l3_8b)
with workload.serving.cuda_graphs=true and the point's batch, KV length and TP set by overrides; its
step is summary.json's breakdown.decode_steps.mean_step_s, its classes kernel_classes_s.

Also printed, from the measurement alone: what each collective's kernel node costs the step beyond
its kernel, (whole - without collectives) / collectives - the replica's mean NCCL kernel duration
in the profiled replay, per point and its mean per model: the value of the presets'
graph_collective_overhead (fitted on the first model, Llama-2-70B's layer; Llama 3 8B's held out).
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import tempfile

from serving_fit import CONFIG_DIRS  # the bench's model name -> its configs' folder

HERE = os.path.dirname(os.path.abspath(__file__))
CLASSES = ["gemm", "attention", "elementwise+norm", "communication"]


def run_gcsim(gcsim, model, tp, batch, kv, gpu=None):
    cfg = os.path.join(HERE, "..", "validation", CONFIG_DIRS[model], "tp4_decode_b8_kv2048.yaml")
    with tempfile.TemporaryDirectory() as d:
        cmd = [gcsim, "run", cfg, "-o", d, "-q", "-s", "workload.serving.cuda_graphs=true",
               "-s", "workload.serving.tp=%d" % tp, "-s", "workload.requests.count=%d" % batch,
               "-s", "workload.requests.prompt_len=%d" % (kv - 1)]
        if gpu:
            cmd += ["-s", "cluster.gpu=%s" % gpu]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "summary.json")) as f:
            b = json.load(f)["breakdown"]["decode_steps"]
    c = b["kernel_classes_s"]
    return {"step_us": b["mean_step_s"] * 1e6,
            "classes": {"gemm": c.get("gemm", 0) * 1e6, "attention": c.get("attention", 0) * 1e6,
                        "elementwise+norm": (c.get("elementwise", 0) + c.get("norm", 0)) * 1e6,
                        "communication": c.get("communication", 0) * 1e6}}


def measured_classes(prof):
    c = prof["classes_us"]
    return {"gemm": c.get("gemm", 0.0), "attention": c.get("attention", 0.0),
            "elementwise+norm": c.get("elementwise", 0.0) + c.get("norm", 0.0) + c.get("other", 0.0),
            "communication": c.get("communication", 0.0)}


def gaps(seq):
    """Mean launch gap before an NCCL kernel, after one, and between two other kernels (us)."""
    before = [s[3] for i, s in enumerate(seq) if i > 0 and s[0] == "communication"]
    after = [seq[i + 1][3] for i in range(len(seq) - 1) if seq[i][0] == "communication"]
    other = [s[3] for i, s in enumerate(seq)
             if i > 0 and s[0] != "communication" and seq[i - 1][0] != "communication"]
    return [statistics.mean(v) if v else 0.0 for v in (before, after, other)]


SEQUENCES = "graph_parts_sequences.json.gz"


def split_sequences(path):
    """Moves the profiled replays' kernel sequences out of a bench file into SEQUENCES beside it
    (losslessly: each keeps its profiled / rank / graph index); the rest stays in `path`."""
    with open(path) as f:
        doc = json.load(f)
    seqs = []
    for i, p in enumerate(doc["profiled"]):
        for ri, r in enumerate(p["ranks"]):
            for name, v in r.items():
                if isinstance(v, dict) and "sequence" in v:
                    seqs.append({"profiled_index": i, "rank_index": ri, "graph": name, "sequence": v.pop("sequence")})
    with open(path, "w") as f:
        json.dump(doc, f)
    with gzip.open(os.path.join(os.path.dirname(path), SEQUENCES), "wt") as f:
        json.dump({"note": "the profiled replays' kernel sequences, split out of graph_parts.json losslessly "
                           "(profiled[profiled_index].ranks[rank_index][graph].sequence)", "sequences": seqs}, f)


def load(path):
    """A bench file with its split-out sequences put back."""
    with open(path) as f:
        doc = json.load(f)
    seq_path = os.path.join(os.path.dirname(path), SEQUENCES)
    if os.path.exists(seq_path):
        with gzip.open(seq_path, "rt") as f:
            for s in json.load(f)["sequences"]:
                doc["profiled"][s["profiled_index"]]["ranks"][s["rank_index"]][s["graph"]]["sequence"] = s["sequence"]
    return doc


def merge(docs):
    """The runs as one: each point's full / nocomm / commonly times averaged over the runs that have
    it; the profiles of the last run that profiled it, with every run's NCCL kernel durations."""
    def key(p):
        return (p["model"], p["tp"], p["batch"], p["kv_len"])
    results, profiled = {}, {}
    for d in docs:
        for r in d["results"]:
            results.setdefault(key(r), []).append(r)
        for p in d["profiled"]:
            if key(p) in profiled:
                for old, new in zip(profiled[key(p)]["ranks"], p["ranks"]):
                    new["full"]["nccl_us"] = old["full"].get("nccl_us", []) + new["full"].get("nccl_us", [])
            profiled[key(p)] = p
    out = []
    for rs in results.values():
        r = dict(rs[0])
        for k in ("full_us", "nocomm_us", "commonly_us"):
            r[k] = statistics.mean(x[k] for x in rs)
        out.append(r)
    return {"results": out, "profiled": list(profiled.values())}


def pct(model, meas):
    return 100.0 * (model - meas) / meas if meas else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("--measurement", required=True, nargs="+",
                    help="one or more runs (e.g. two hosts): each point's times are their mean")
    ap.add_argument("--gpu", help="the measured GPU's preset (cluster.gpu; default: the configs' h100-sxm)")
    ap.add_argument("--split", action="store_true",
                    help="only move each file's kernel sequences into " + SEQUENCES + " beside it")
    a = ap.parse_args()
    if a.split:
        for path in a.measurement:
            split_sequences(path)
        return
    doc = merge([load(path) for path in a.measurement])
    prof = {(p["model"], p["tp"], p["batch"], p["kv_len"]): p for p in doc["profiled"]}
    print("| model | TP | batch | step meas / gcsim | err | " + " | ".join(CLASSES) +
          " | gaps before/after NCCL, other (us) |")
    print("|---|---|---|---|---|" + "---|" * len(CLASSES) + "---|")
    errs = []
    for r in doc["results"]:
        k = (r["model"], r["tp"], r["batch"], r["kv_len"])
        g = run_gcsim(a.gcsim, r["model"], r["tp"], r["batch"], r["kv_len"], a.gpu)
        e = pct(g["step_us"], r["full_us"])
        errs.append(e)
        cells = []
        p = prof.get(k)
        gap = ""
        if p and "sequence" in p["ranks"][0]["full"]:
            m = measured_classes(p["ranks"][0]["full"])
            cells = ["%.0f / %.0f (%+.0f%%)" % (m[c], g["classes"][c], pct(g["classes"][c], m[c])) for c in CLASSES]
            gap = "%.2f / %.2f, %.2f" % tuple(gaps(p["ranks"][0]["full"]["sequence"]))
        print("| %s | %d | %d | %.0f / %.0f | %+.1f%% | %s | %s |" % (
            r["model"][:10], r["tp"], r["batch"], r["full_us"], g["step_us"], e, " | ".join(cells), gap))
    print("\nsteps: mean |error| %.1f%%, range %+.1f .. %+.1f%%" % (
        statistics.mean(abs(x) for x in errs), min(errs), max(errs)))
    print("\nA collective node's cost beyond its kernel (us), measured:")
    per_model = {}
    for r in doc["results"]:
        p = prof.get((r["model"], r["tp"], r["batch"], r["kv_len"]))
        if not p or "nccl_us" not in p["ranks"][0]["full"]:
            continue
        nccl = [x for rk in p["ranks"][:r["tp"]] for x in rk["full"]["nccl_us"]]
        n = sum(1 for k in p["ranks"][0]["full"]["sequence"] if k[0] == "communication")
        over = (r["full_us"] - r["nocomm_us"]) / n - statistics.mean(nccl)
        per_model.setdefault(r["model"], []).append(over)
        print("  %s TP%d b%d: %d collectives, %.2f us each in the step, NCCL kernel %.2f, node %.2f" % (
            r["model"], r["tp"], r["batch"], n, (r["full_us"] - r["nocomm_us"]) / n, statistics.mean(nccl), over))
    for mdl, v in per_model.items():
        print("  %s: mean %.2f us (%.2f .. %.2f)" % (mdl, statistics.mean(v), min(v), max(v)))


if __name__ == "__main__":
    main()
