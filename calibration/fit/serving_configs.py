#!/usr/bin/env python3
"""Writes calibration/validation/serving/*.yaml: one gcsim config per point that
calibration/microbench/serving_step_bench.py measures (issue 16's serving validation).

    python3 calibration/fit/serving_configs.py          # rewrites the configs
    python3 calibration/fit/serving_configs.py --model l3_8b   # the held-out model's, serving_l3_8b/
    python3 calibration/fit/serving_configs.py --model l70_full  # all 80 layers, TP2 and TP4 (h200-sxm)

Each config is serving_step_bench.py's model (Llama-2-70B's layer, 8 layers, vocabulary 32000) at
TP4 or TP2 on 4 H100 SXM of one NVSwitch node, under `workload.framework: pytorch-eager` without
CUDA graphs (the bench's eager build; `-s workload.serving.cuda_graphs=true` is its graph build)
and a burst of requests that makes exactly the measured step under vLLM V0's scheduler (prefill-only
or decode-only steps; CUDA graphs, when on, for pure decodes only: the bench's builds):
  decode (batch B, KV length L after the step's token): B requests of L - 1 prompt tokens and 2
      output tokens, prefilled in steps of at most 16384 tokens, then one pure decode step of B
      sequences at KV length L: the run's only decode step, summary.json's
      breakdown.decode_steps (mean_step_s and kernel_classes_s);
  prefill (S tokens): one request of S prompt tokens and 1 output token: the run's only step,
      breakdown.prefill_steps (= ttft_s.mean).
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# serving_step_bench.py's DECODE_CORE + DECODE_MORE and PREFILL_CORE + PREFILL_MORE
DECODE = [(1, 512), (1, 8192), (32, 2048), (64, 8192), (256, 512), (256, 2048),
          (8, 2048), (32, 8192), (128, 4096), (128, 512)]
PREFILL = [512, 2048, 8192, 1024, 4096]

MODEL = ("{name: llama2_70b_shape_L8, layers: 8, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, "
         "ffn_hidden: 28672, vocab: 32000, seq_len: 16384, attention: gqa, mlp: swiglu, norm: rms_norm, "
         "position: rotary, tied_embeddings: false, linear_bias: false, dropout: 0.0}")
# serving_step_bench.py --model: (the model line, the configs' folder, the measurement it was
# measured in)
MODELS = {
    "l70": (MODEL, "serving", "calibration/measurements/h100-x4/serving_step_2026-11-26"),
    "l3_8b": ("{name: llama3_8b_shape_L8, layers: 8, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, "
              "ffn_hidden: 14336, vocab: 128256, seq_len: 16384, attention: gqa, mlp: swiglu, "
              "norm: rms_norm, position: rotary, tied_embeddings: false, linear_bias: false, dropout: 0.0}",
              "serving_l3_8b", "calibration/measurements/h100-x4/serving_step_l3_8b_2026-11-27"),
    # Llama-2-70B itself (80 layers): TP2 holds 69 GB of weights a GPU, with its KV cache more than
    # an H100 has, so it was measured on H200s (serving_step_bench.py --points full --tp 2); TP4
    # (35 GB) fits either (--tp 4 --prefill 512,2048,4096,8192)
    "l70_full": (MODEL.replace("llama2_70b_shape_L8, layers: 8", "llama2_70b_full, layers: 80"),
                 "serving_l70_full", "calibration/measurements/h200-x4/serving_step_full_2026-11-28"),
}
# The points and GPU of a model measured apart from the others (serving_step_bench.py's
# DECODE_FULL, PREFILL_FULL): tps, decode, prefill, gpu
POINTS = {"l70_full": ((2, 4), [(1, 512), (8, 2048), (64, 4096), (1, 4096), (32, 2048), (128, 2048)],
                       [512, 2048, 4096, 8192], "h200-sxm")}


def config(tp, kind, batch, kv, model="l70"):
    line, _, measured = MODELS[model]
    gpu = POINTS[model][3] if model in POINTS else "h100-sxm"
    if kind == "decode":
        what = "decode of %d sequences at KV length %d (after the step's token)" % (batch, kv)
        requests = "{count: %d, arrival: {kind: burst}, prompt_len: %d, output_len: 2}" % (batch, kv - 1)
        read = "breakdown.decode_steps"
    else:
        what = "prefill of one %d-token prompt" % kv
        requests = "{count: 1, arrival: {kind: burst}, prompt_len: %d, output_len: 1}" % kv
        read = "breakdown.prefill_steps"
    return """# serving_step_bench.py's TP%d %s (calibration/fit/serving_configs.py wrote this;
# compare with %s, tests/scenario/
# test_serving_measured.cpp). The step is read from summary.json's %s.
#   gcsim run THIS.yaml                                      (eager PyTorch, as measured)
#   gcsim run THIS.yaml -s workload.serving.cuda_graphs=true  (the decode step in a CUDA graph)
#   gcsim run THIS.yaml -s workload.framework=vllm            (vLLM's fused kernels)
# The bench ran each point's steps back to back: clock_start: steady starts each step from the power
# governor's periodic state of that step repeated (README, "Clocks from a power model").
cluster: {gpu: %s, nodes: 1, gpus_per_node: 4, scale_up: {kind: nvswitch}, scale_out: {topology: none}, clock_start: steady}
workload:
  kind: inference
  framework: pytorch-eager
  model: %s
  serving:
    tp: %d
    cuda_graphs: false
    scheduler: {mode: vllm-v0, max_num_batched_tokens: 16384, max_num_seqs: 256, max_model_len: 16384}
  requests: %s
simulation: {seed: 1}
""" % (tp, what, measured, read, gpu, line, tp, requests)


def name(tp, kind, batch, kv):
    if kind == "decode":
        return "tp%d_decode_b%d_kv%d.yaml" % (tp, batch, kv)
    return "tp%d_prefill_s%d.yaml" % (tp, kv)


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="l70")
    model = ap.parse_args().model
    out = os.path.join(HERE, "..", "validation", MODELS[model][1])
    os.makedirs(out, exist_ok=True)
    n = 0
    tps, decode, prefill, _ = POINTS.get(model, ((4, 2), DECODE, PREFILL, None))
    for tp in tps:
        for b, kv in decode:
            with open(os.path.join(out, name(tp, "decode", b, kv)), "w") as f:
                f.write(config(tp, "decode", b, kv, model))
            n += 1
        for s in prefill:
            with open(os.path.join(out, name(tp, "prefill", 1, s)), "w") as f:
                f.write(config(tp, "prefill", 1, s, model))
            n += 1
    print("wrote %d configs to %s" % (n, os.path.normpath(out)))


if __name__ == "__main__":
    main()
