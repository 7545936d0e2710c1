// Inference quiz: serve a preset model on one GPU kind with TP t, as vLLM
// does (../shared/REFERENCE.md "Inference"): KV bytes per token, KV blocks
// after weights and the profiling peak, concurrent 4K-token requests, and a
// roofline TTFT (prefill is compute-bound) and TPOT (decode at batch 1 is
// bound by reading the weights from HBM). Block counts reuse vLLM's start-up
// arithmetic in workloads/inference/kv_capacity.h.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "workloads/estimate/inference_estimate.h"
#include "workloads/inference/kv_capacity.h"
#include "workloads/inference/serving_config.h"
#include "workloads/models/model_formulas.h"
#include "workloads/quiz/quiz.h"
#include "workloads/quiz/quiz_pick.h"

namespace gcsim::workloads::quiz {

namespace wi = workloads::inference;
using gcsim::models::gpu::Dtype;

Quiz make_inference_quiz(uint64_t seed, const PresetBook& presets) {
  sim::RandomStream r = quiz_stream(seed, "inference");
  const std::string model_name = pick(
      r, std::vector<std::string>{"llama3-8b", "llama3-70b", "qwen2.5-72b", "mixtral-8x7b"});
  const std::string gpu_name =
      pick(r, std::vector<std::string>{"a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200"});
  const auto& m = presets.models.at(model_name);
  const auto& gpu = presets.gpus.at(gpu_name);
  const int64_t prompt = pick(r, std::vector<int64_t>{512, 1024, 2048});
  constexpr int64_t kOutput = 64, kBlock = 16, kBudget = 8192, kSeqs = 256;

  // The smallest TP whose weights leave at least a quarter of the budget for
  // the KV cache, then one size up half the time (a quiz should not always
  // pick the tightest fit).
  const wi::MemoryInputs base{Dtype::bf16, Dtype::bf16, {}, gpu.hbm_capacity, 0.9, kBlock,
                              kBudget,     kSeqs,       sim::GiB(1)};
  int tp = 1;
  auto plan_for = [&](int t) {
    wi::MemoryInputs in = base;
    in.parallel.tp = t;
    return wi::plan_memory(m, in);
  };
  while (tp < 8 && plan_for(tp).kv_cache.as_double() < 0.25 * plan_for(tp).budget.as_double()) {
    tp *= 2;
  }
  if (tp < 8 && r.uniform() < 0.5) tp *= 2;
  const wi::MemoryPlan plan = plan_for(tp);
  const wi::ParallelShape shape{tp, 1, 1};

  const int64_t kv_token = wi::kv_bytes_per_token(m, Dtype::bf16);
  const int64_t kv_gpu = wi::kv_bytes_per_token_per_gpu(m, Dtype::bf16, shape);
  const int64_t blocks_per_request = (4096 + kBlock - 1) / kBlock;
  const int64_t concurrent = plan.num_blocks / blocks_per_request;

  // Fixed costs the roofline leaves out, as an engineer states them: each
  // of the ~10 kernels of a layer (norms, QKV, rotary, KV write, attention,
  // output projection, gate/up, activation, down) pays the launch latency
  // and one wave's overhead of the preset (2 + 1 us on Hopper); each of the
  // 2 per-layer TP all-reduces of a few KB pays NCCL's small-message
  // latency, ~10 us (REFERENCE.md: tens of us per small call).
  constexpr double kKernelsPerLayer = 10, kSmallAllReduce = 10e-6;
  const double fixed_kernels = kKernelsPerLayer * m.layers *
                               (gpu.kernel_launch_latency.seconds() +
                                gpu.efficiency.tile_overhead.seconds());
  const double fixed_ar = tp > 1 ? 2.0 * m.layers * kSmallAllReduce : 0.0;

  // TTFT: prefill FLOPs = 2 N_active P (every active weight once per token)
  // + causal attention 2 L P^2 q_width (QK^T and PV, half the square each),
  // over TP GPUs at the preset's bf16 peak x efficiency, or the time to read
  // every weight once if that is longer (a short prompt on an MoE).
  const auto params = workloads::models::count_params(m);
  const double peak = gpu.tensor_peak_for(Dtype::bf16).flops_per_s() *
                      gpu.efficiency.tensor_for(Dtype::bf16);
  const double P = static_cast<double>(prompt);
  const double prefill_flops =
      2.0 * params.active * P + 2.0 * m.layers * P * P * static_cast<double>(m.q_width());
  const double hbm = gpu.hbm_bandwidth.bytes_per_s() * gpu.efficiency.hbm;
  // TP: two all-reduces per layer of P x h bf16 values, 2(t-1)/t of it over NVLink.
  const double nvl = gpu.nvlink_bandwidth.bytes_per_s();
  const double tp_bytes = tp > 1 ? 2.0 * m.layers * 2.0 * (tp - 1) / tp * P * m.hidden * 2 : 0;
  const double compute = prefill_flops / (tp * peak);
  const double weight_read = plan.weights.as_double() / hbm;
  const double ttft = std::max(compute, weight_read) + tp_bytes / nvl + fixed_kernels + fixed_ar;
  // TPOT at batch 1: each token reads this GPU's weights (of an MoE layer
  // only the top_k routed experts) and its KV so far (about P + output/2
  // tokens) from HBM, plus the fixed costs.
  const double routed = m.moe_layers() * params.moe_layer.routed_experts * 2.0 / tp;  // B per GPU
  const double unread =
      m.is_moe() ? routed * (1.0 - static_cast<double>(m.moe.top_k) / m.moe.experts) : 0.0;
  const double ctx = P + kOutput / 2.0;
  const double read = plan.weights.as_double() - unread + ctx * static_cast<double>(kv_gpu);
  const double tpot = read / hbm + fixed_kernels + fixed_ar;

  // The same request through `gcsim explain`'s serving roofline
  // (workloads/estimate/), as a cross-check printed in the answer.
  wi::ServingConfig sc;
  sc.model = m;
  sc.parallel = shape;
  sc.non_torch_memory = sim::GiB(1);
  sc.scheduler.max_num_batched_tokens = kBudget;
  sc.requests.count = 4;
  sc.requests.rate = 0.1;
  sc.requests.prompt.value = prompt;
  sc.requests.output.value = kOutput;
  gcsim::workloads::estimate::LinkRates links;
  links.scale_up_bytes_per_s = nvl;
  links.scale_up_latency_s = gpu.nvlink_latency.seconds();
  const auto serving = gcsim::workloads::estimate::estimate_inference(sc, gpu, links);

  Quiz q;
  q.topic = Topic::inference;
  q.seed = seed;
  q.title = "Serving " + model_name + " on " + gpu_name + " TP" + std::to_string(tp);
  q.question =
      "Serve " + model_name + " (" + std::to_string(m.layers) + " layers, hidden " +
      std::to_string(m.hidden) + ", " + std::to_string(m.heads) + " heads, " +
      std::to_string(m.kv_heads) + " KV heads of " + std::to_string(m.head_dim) + ", " +
      fmt("%.3g", params.total / 1e9) + "B parameters, " + fmt("%.3g", params.active / 1e9) +
      "B active) in bf16 on " + std::to_string(tp) + " " + gpu_name + " (" +
      fmt("%.0f GiB", gpu.hbm_capacity.as_double() / 1073741824.0) + " HBM at " +
      fmt("%.0f GB/s", gpu.hbm_bandwidth.bytes_per_s() / 1e9) + ", " +
      fmt("%.0f TFLOP/s", gpu.tensor_peak_for(Dtype::bf16).tflops()) +
      " bf16) with vLLM: gpu_memory_utilization 0.9, 16-token blocks, 1 GiB outside PyTorch, a "
      "profiling pass of 8192 tokens.\n\n"
      "(a) KV-cache bytes per token, for the model and per GPU.\n"
      "(b) KV blocks per GPU and how many 4096-token requests fit at once.\n"
      "(c) TTFT of one " + std::to_string(prompt) + "-token prompt and TPOT of that request "
      "alone (64 output tokens), assuming " + fmt("%.0f%%", gpu.efficiency.tensor_for(Dtype::bf16) * 100) +
      " of tensor peak and " + fmt("%.0f%%", gpu.efficiency.hbm * 100) + " of HBM bandwidth.\n";

  q.steps.push_back("KV per token = 2 (K and V) x layers x kv_heads x head_dim x 2 B = 2 x " +
                    std::to_string(m.layers) + " x " + std::to_string(m.kv_heads) + " x " +
                    std::to_string(m.head_dim) + " x 2 = " + num(static_cast<double>(kv_token)) +
                    " B; per GPU the KV heads split over TP (at least one each): " +
                    num(static_cast<double>(kv_gpu)) + " B.");
  q.steps.push_back("Per GPU: budget 0.9 x HBM = " + fmt("%.2f GiB", plan.budget.as_double() / 1073741824.0) +
                    "; weights " + fmt("%.2f GiB", plan.weights.as_double() / 1073741824.0) +
                    ", profiling activations " + fmt("%.2f GiB", plan.activations.as_double() / 1073741824.0) +
                    ", non-torch 1 GiB; KV cache " +
                    fmt("%.2f GiB", plan.kv_cache.as_double() / 1073741824.0) + ".");
  q.steps.push_back("Blocks = floor(KV cache / (16 x " + num(static_cast<double>(kv_gpu)) +
                    " B)) = " + num(static_cast<double>(plan.num_blocks)) + "; a 4096-token "
                    "request needs 256 blocks, so " + std::to_string(concurrent) + " at once.");
  q.steps.push_back("Fixed costs: 10 kernels per layer x " + std::to_string(m.layers) +
                    " layers x (launch + one wave's overhead) = " +
                    fmt("%.3g ms", fixed_kernels * 1e3) + "; 2 TP all-reduces per layer x ~10 us = " +
                    fmt("%.3g ms", fixed_ar * 1e3) + ".");
  q.steps.push_back("Prefill FLOPs = 2 N_active P + 2 L P^2 q_width = " + num(prefill_flops) +
                    " over " + std::to_string(tp) + " x " + fmt("%.0f TFLOP/s", peak / 1e12) + " = " +
                    fmt("%.3g ms", compute * 1e3) + " against reading the weights once " +
                    fmt("%.3g ms", weight_read * 1e3) + "; + TP all-reduce bytes over NVLink " +
                    fmt("%.3g ms", tp_bytes / nvl * 1e3) + " + fixed => TTFT = " +
                    fmt("%.4g ms", ttft * 1e3) + ".");
  q.steps.push_back("Decode reads per GPU per token: weights " +
                    fmt("%.2f GiB", plan.weights.as_double() / 1073741824.0) +
                    (m.is_moe() ? " less the unrouted experts " + fmt("%.2f GiB", unread / 1073741824.0)
                                : std::string()) +
                    " + KV " + fmt("%.3g GiB", ctx * kv_gpu / 1073741824.0) + " at " +
                    fmt("%.0f GB/s", hbm / 1e9) + ", + fixed => TPOT = " +
                    fmt("%.4g ms", tpot * 1e3) +
                    ". Batch 1 leaves the tensor cores idle: batching raises throughput almost "
                    "for free until the KV reads catch up with the weight reads.");
  q.steps.push_back("Cross-check, `gcsim explain`'s serving roofline for this load: " +
                    serving.ttft.text() + "; " + serving.tpot.text() + ".");

  q.sim_note =
      "The simulator runs vLLM's steps kernel by kernel on the GPU model: GEMM tiles in waves, "
      "flash attention at its own (lower) efficiency, the sampler, and TP all-reduces on the "
      "NVLink fabric; TTFT also holds the first decode step. The closed form rounds all of "
      "that into one efficiency and fixed costs per kernel.";
  q.verifications.push_back(
      {"serving",
       "cluster: {gpu: " + gpu_name + ", nodes: 1, gpus_per_node: " + std::to_string(tp) +
           ", scale_up: {kind: nvswitch}, scale_out: {topology: none}, calibration: none}\n"
           "workload:\n  kind: inference\n  model: {preset: " + model_name + "}\n"
           "  serving:\n    tp: " + std::to_string(tp) + "\n    replicas: 1\n"
           "    scheduler: {mode: vllm-v1, block_size: 16, gpu_memory_utilization: 0.9, "
           "max_num_seqs: 256, max_num_batched_tokens: 8192}\n"
           "  requests:\n    count: 4\n    arrival: {kind: poisson, rate: 0.1}\n"
           "    prompt_len: " + std::to_string(prompt) + "\n    output_len: 64\n"});

  auto add = [&](const char* key, const char* what, const char* unit, double est, double tol,
                 const char* why, const char* ptr, double scale, double sim_tol) {
    add_quantity(q, key, what, unit, est, tol, why, 0, ptr, scale, sim_tol);
  };
  const char* exact = "1%: an exact product of the model's shape";
  add("kv_bytes_per_token", "KV-cache bytes per token, whole model", "B",
      static_cast<double>(kv_token), 0.01, exact, nullptr, 1, 0);
  add("kv_bytes_per_token_per_gpu", "KV-cache bytes per token on one GPU", "B",
      static_cast<double>(kv_gpu), 0.01, exact, nullptr, 1, 0);
  add("kv_blocks", "KV blocks per GPU", "blocks", static_cast<double>(plan.num_blocks), 0.10,
      "10%: the activation peak and non-torch memory are the user's assumptions",
      "/kv_cache/blocks_total", 1.0, 0.02);
  add("max_concurrent_4k", "4096-token requests that fit at once", "requests",
      static_cast<double>(concurrent), 0.10, "10%: follows the block count", nullptr, 1, 0);
  add("ttft_ms", "time to first token, one prompt alone", "ms", ttft * 1e3, 0.25,
      "25%: the efficiency assumed for prefill GEMMs and attention", "/ttft_s/mean", 1e3, 0.35);
  add("tpot_ms", "time per output token, batch 1", "ms", tpot * 1e3, 0.25,
      "25%: the HBM efficiency and per-kernel overheads assumed", "/tpot_s/mean", 1e3, 0.35);
  return q;
}

}  // namespace gcsim::workloads::quiz
