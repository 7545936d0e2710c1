// The worksheet core (workloads/estimate) against hand computations and
// published figures: GPT-3 175B by Megatron's formula (Narayanan et al.
// SC'21: 174.6B), ZeRO's 7.5B-on-64-GPUs table (Rajbhandari et al. 2020;
// ../shared/REFERENCE.md: 120 / 31.4 / 16.6 / 1.9 GB), ring all-reduce
// bytes 2(n-1)/n S (nccl-tests PERFORMANCE.md), Llama-2-70B KV bytes per
// token (2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B; 40 KiB per GPU
// at TP8), the pipeline bubble (p-1)/m against the schedule itself, and the
// serving rooflines (decode reads weights + KV from HBM) by hand.
#include <memory>

#include "catch.h"
#include "preset_fixtures.h"
#include "workloads/estimate/comm_estimate.h"
#include "workloads/estimate/inference_estimate.h"
#include "workloads/estimate/memory_estimate.h"
#include "workloads/estimate/model_estimate.h"
#include "workloads/estimate/time_estimate.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/pipeline_schedule.h"

using namespace gcsim;
using namespace gcsim::workloads::estimate;
namespace wm = gcsim::workloads::models;
namespace wt = gcsim::workloads::training;

namespace {

using test::model_preset;

// A GPU of round figures: 132 SMs, 1000 TF/s bf16, 3000 GB/s HBM, the
// default efficiencies (tensor 0.8, HBM 0.9).
models::gpu::GpuSpec round_gpu() {
  models::gpu::GpuSpec g;
  g.sm_count = 132;
  g.tensor_peak[static_cast<size_t>(models::gpu::Dtype::bf16)] = sim::FlopRate::tflops(1000);
  g.hbm_bandwidth = sim::Bandwidth::gb_per_s(3000);
  return g;
}

// 450 GB/s NVLink, 50 GB/s NICs, 8 GPUs a node.
LinkRates hgx_links() {
  LinkRates links;
  links.scale_up_bytes_per_s = 450e9;
  links.scale_out_bytes_per_s = 50e9;
  links.gpus_per_node = 8;
  return links;
}

// Llama-2-70B (Touvron et al. 2023): 80 layers, hidden 8192, 64 heads, 8 KV
// heads of 128.
wm::ModelSpec llama2_70b() {
  wm::ModelSpec m;
  m.name = "llama2-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 28672;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.attention = wm::AttentionKind::gqa;
  m.mlp = wm::MlpKind::swiglu;
  m.norm = wm::NormKind::rms_norm;
  m.position = wm::PositionKind::rotary;
  return m;
}

}  // namespace

TEST_CASE("GPT-3 175B has 174.6B parameters by Megatron's formula", "[explain]") {
  const ModelEstimate e = estimate_model(model_preset("gpt3-175b"));
  // 12 x 96 x 12288^2 x (1 + 13/(12 x 12288) + (51200 + 2048)/(12 x 96 x 12288))
  // = 174,615,822,336 (Narayanan et al. SC'21, Table 1: 174.6B).
  CHECK(e.narayanan.value == Approx(174'615'822'336.0).epsilon(1e-9));
  CHECK(e.narayanan.formula.find("12288") != std::string::npos);
  CHECK(e.narayanan.text().find("174.6 B") != std::string::npos);
  // The part-by-part count (biases and LayerNorms spelled out) is the same model.
  CHECK(e.total.value == Approx(174.6e9).epsilon(0.001));
  CHECK(e.active.value == e.total.value);
  // 6N + attention: 2N per token forward for the weights; 2 l s (q + v widths)
  // = 2 x 96 x 2048 x 24576 for attention.
  CHECK(e.attention_flops_per_token.value == Approx(2.0 * 96 * 2048 * 24576));
  CHECK(e.training_flops_per_token.value ==
        Approx(3.0 * (e.dense_flops_per_token.value + e.attention_flops_per_token.value)));
}

TEST_CASE("MoE models show active parameters below the total", "[explain]") {
  const ModelEstimate e = estimate_model(model_preset("mixtral-8x7b"));
  // Mixtral 8x7B: 46.7B total, 12.9B active (Jiang et al. 2024).
  CHECK(e.total.value == Approx(46.7e9).epsilon(0.01));
  CHECK(e.active.value == Approx(12.9e9).epsilon(0.01));
  CHECK(e.experts.value > 0);
}

TEST_CASE("ZeRO table: 7.5B parameters on 64 GPUs", "[explain]") {
  const wt::OptimizerConfig adam;  // 2 + 2 + 12 bytes per parameter
  // REFERENCE.md: 120, 31.4, 16.6, 1.9 GB; by hand 16 x 7.5 = 120,
  // 4 x 7.5 + 12 x 7.5 / 64 = 31.41, 2 x 7.5 + 14 x 7.5 / 64 = 16.64,
  // 16 x 7.5 / 64 = 1.875.
  const double expected[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
  for (int stage = 0; stage <= 3; ++stage) {
    const ZeroRow r = zero_row(7.5e9, 64, stage, adam);
    INFO("stage " << stage);
    CHECK(r.stage == stage);
    CHECK(r.total.value == Approx(expected[stage]));
    CHECK(r.weights.value + r.gradients.value + r.optimizer.value == Approx(r.total.value));
  }
  CHECK(zero_row(7.5e9, 64, 1, adam).optimizer.formula.find("/ 64") != std::string::npos);
}

TEST_CASE("ring all-reduce sends 2(n-1)/n S per GPU", "[explain]") {
  // 1 GB on 8 GPUs: 2 x 7/8 x 1e9 = 1.75e9 bytes; at 450 GB/s and no
  // latency 3.889 ms.
  const Line wire = wire_bytes_line(collectives::CollectiveOp::all_reduce, 1e9, 8);
  CHECK(wire.value == Approx(1.75e9));
  const Line t = ideal_time_line(collectives::CollectiveOp::all_reduce, 1e9, 8, 450e9, 0.0);
  CHECK(t.value == Approx(1.75e9 / 450e9));
  // All-gather and reduce-scatter move half of it; a send moves S.
  CHECK(wire_bytes_line(collectives::CollectiveOp::all_gather, 1e9, 8).value == Approx(0.875e9));
  CHECK(wire_bytes_line(collectives::CollectiveOp::send_recv, 1e9, 2).value == Approx(1e9));
  // Latency: 2(n-1) ring steps of 1 us for an all-reduce.
  CHECK(ideal_time_line(collectives::CollectiveOp::all_reduce, 0.0, 8, 450e9, 1e-6).value == Approx(14e-6));
}

TEST_CASE("Llama-2-70B KV cache: 327,680 B per token, 40 KiB per GPU at TP8", "[explain]") {
  workloads::inference::MemoryInputs in;
  in.parallel.tp = 8;
  in.capacity = sim::Bytes(80'000'000'000);
  const KvEstimate kv = estimate_kv(llama2_70b(), in, 1024, 256);
  CHECK(kv.bytes_per_token.value == 327'680);
  CHECK(kv.bytes_per_token_per_gpu.value == 40'960);
  CHECK(format_value(kv.bytes_per_token_per_gpu.value, Unit::bytes) == "40 KiB");
  CHECK(kv.block_bytes.value == 16 * 40'960);
  CHECK(kv.tokens.value == kv.blocks.value * 16);
  // A request of 1024 tokens holds 64 blocks.
  CHECK(kv.max_concurrent.value == std::min(256.0, std::floor(kv.blocks.value / 64)));
}

TEST_CASE("bubble formulas match the schedules run with unit passes", "[explain]") {
  // 1F1B with F = B_input = W = 1: bubble / busy = (p-1)(F+B)/(m(F+B)) = (p-1)/m.
  const Line one = bubble_fraction_line(wt::Schedule::one_f_one_b, 8, 1, 32);
  CHECK(one.value == Approx(7.0 / 32));
  const auto plan = wt::build_pipeline(wt::Schedule::one_f_one_b, 8, 1, 32);
  const auto ev = wt::evaluate(plan, wt::PassCosts{});
  CHECK((ev.makespan - ev.busy[0]) / ev.busy[0] == Approx(one.value));
  // Interleaved: (p-1)/(v m).
  CHECK(bubble_fraction_line(wt::Schedule::interleaved, 8, 2, 32).value == Approx(7.0 / 64));
}

TEST_CASE("communication rows of a TP8 x DP4 step", "[explain]") {
  wt::TrainingConfig c;
  c.model = model_preset("llama3-8b");
  c.parallel.tp = 8;
  c.parallel.dp = 4;
  c.batch.global = 32;
  c.batch.micro = 1;
  const auto rows = estimate_training_comm(c, hgx_links());
  REQUIRE(rows.size() == 1 + 1);  // TP all-reduce, DP all-reduce (ZeRO-0)
  // TP: 4 all-reduces per layer x 32 layers x 8 micro-batches of s h x 2 B.
  CHECK(rows[0].dimension == "TP");
  CHECK(rows[0].count == 4 * 32 * 8);
  CHECK(rows[0].bytes_each == 8192.0 * 4096 * 2);
  CHECK(rows[0].link == LinkClass::scale_up);
  // DP over 4 nodes: gradients of the TP shard, through the NIC.
  CHECK(rows[1].dimension == "DP");
  CHECK(rows[1].link == LinkClass::scale_out);
  CHECK(rows[1].count * rows[1].bytes_each == Approx(wm::count_params(c.model).total / 8 * 2).epsilon(0.01));
}

TEST_CASE("ZeRO-2 reduces every micro-batch's gradients, overlapped with the compute", "[explain]") {
  // TP8 x DP4 of Llama 3 8B, 8 micro-batches: ZeRO-1 reduce-scatters the
  // accumulated gradients once per step; ZeRO-2 shards them, so each
  // micro-batch's are reduced as they are made (the generator does the
  // same): 8 times the buckets, each the same size.
  wt::TrainingConfig c;
  c.model = model_preset("llama3-8b");
  c.parallel.tp = 8;
  c.parallel.dp = 4;
  c.batch.global = 32;
  c.optimizer.zero_stage = 1;
  const auto z1 = estimate_training_comm(c, hgx_links());
  c.optimizer.zero_stage = 2;
  const auto z2 = estimate_training_comm(c, hgx_links());
  auto grads = [](const std::vector<CommRow>& rows) {
    for (const auto& r : rows) {
      if (r.dimension == "DP" && r.op == collectives::CollectiveOp::reduce_scatter) return r;
    }
    FAIL("no DP reduce-scatter row");
    return rows.front();
  };
  CHECK(grads(z2).count == 8 * grads(z1).count);
  CHECK(grads(z2).bytes_each == grads(z1).bytes_each);
  // Exposed: what the whole step's compute cannot hide, or the last
  // micro-batch's reduction beyond its own backward (2/3 of its compute),
  // or one bucket; plus the weight all-gather after the optimizer.
  const models::gpu::GpuSpec g = round_gpu();
  const TrainingTimeEstimate t = estimate_training_time(c, g, z2);
  const double dp = grads(z2).time_total.value, compute = t.compute.value;
  double gather = 0;
  for (const auto& r : z2) {
    if (r.dimension == "DP" && r.op == collectives::CollectiveOp::all_gather) gather += r.time_total.value;
  }
  const double last = dp / 8 - compute * 2.0 / 3.0 / 8;
  CHECK(t.exposed_of("DP") ==
        Approx(std::max({grads(z2).time_each.value, last, dp - compute}) + gather).epsilon(1e-12));
}

TEST_CASE("step time is the sum of its parts, MFU its inverse", "[explain]") {
  wt::TrainingConfig c;
  c.model = model_preset("llama3-8b");
  c.parallel.tp = 8;
  c.parallel.pp = 4;
  c.parallel.dp = 2;
  c.batch.global = 64;
  c.batch.micro = 1;
  const models::gpu::GpuSpec g = round_gpu();
  const auto rows = estimate_training_comm(c, hgx_links());
  const TrainingTimeEstimate t = estimate_training_time(c, g, rows);
  // 1F1B, p = 4, m = 64 / 2 = 32: the fill and drain are 3/32 of the
  // compute, and the last stage's output head makes it the slowest. Per
  // token, seconds: the layers' GEMMs A = 3 f.layers / rate, the head
  // H = 3 f.logits / rate, causal attention T = f.attention / 2 / peak x
  // (1 / eff_fwd + 2 / eff_bwd); the last rank does a quarter of A + T plus
  // H, against the mean (A + H + T) / 4.
  CHECK(t.bubble_fraction.value == Approx(3.0 / 32));
  const auto f = wm::forward_flops_per_token(c.model);
  const double A = 3 * f.layers / 800e12, H = 3 * f.logits / 800e12;
  // FlashAttention-2 runs its causal diagonal blocks whole: 8192 tokens in
  // 128 x 64 forward (and 64 x 128 backward) blocks execute 2080 x 16384
  // pairs for 8192 x 8193 / 2 unmasked, a 0.9847 useful fraction.
  const double whole = 8192.0 * 8193 / 2 / (2080.0 * 16384);
  // The backward grid (b1, 32 / 8 = 4 heads, one 8-warp CTA a SM) is causal
  // and small: 256 CTAs of 128 - 2j query blocks (j = 0..63) list-scheduled
  // in launch order on 132 SMs end at 190 blocks, against the wave model's
  // 2 waves x 65 = 130 (attention_grid_tail.h): x 190 / 130. The forward
  // runs two 4-warp CTAs a SM: no tail charged.
  const double bwd_tail = 190.0 / 130.0;
  const double T = f.attention / 2 / 1000e12 / whole *
                   (1 / g.efficiency.attention + 2 * bwd_tail / g.efficiency.attention_backward);
  // Compute per GPU: 64 sequences of 8192 tokens over 64 GPUs, each token
  // A + H + T seconds of the whole model's work.
  CHECK(t.compute.value == Approx(64.0 * 8192 / 64 * (A + H + T)));
  const double last = ((A + T) / 4 + H) / ((A + H + T) / 4);
  // Llama 3 8B's 128,256-entry head is about 2.4 layers of GEMM work.
  CHECK(H / (A / 32) == Approx(2.41).epsilon(0.01));
  CHECK(last > 1.1);
  CHECK(t.bubble.value == Approx((3.0 / 32 + last - 1) * t.compute.value));
  double exposed = 0;
  for (const auto& l : t.exposed) exposed += l.value;
  CHECK(t.step.value == Approx(t.compute.value + t.bubble.value + t.optimizer.value + exposed));
  // GEMM rate 1000 TFLOP/s x 0.8 (the default tensor efficiency).
  CHECK(t.rate.value == Approx(800e12));
  CHECK(t.mfu.value == Approx(t.model_flops.value / (t.step.value * 64 * 1000e12)));
  // TP groups of 8 inside a node, PP stages on other nodes: NVLink for TP, NIC for PP.
  CHECK(rows.front().dimension == "TP");
  CHECK(rows.front().link == LinkClass::scale_up);
  for (const auto& r : rows) {
    if (r.dimension == "PP") CHECK(r.link == LinkClass::scale_out);
  }
}

TEST_CASE("serving roofline: prefill compute-bound, decode reads the weights and the KV", "[explain]") {
  workloads::inference::ServingConfig s;
  s.model = llama2_70b();
  s.parallel.tp = 8;
  s.requests.arrival = workloads::inference::ArrivalKind::burst;
  s.requests.count = 4;
  s.requests.prompt.value = 1000;
  s.requests.output.value = 200;
  models::gpu::GpuSpec g = round_gpu();
  g.hbm_capacity = sim::Bytes(80'000'000'000);
  LinkRates links;
  links.scale_up_bytes_per_s = 450e9;
  const InferenceEstimate e = estimate_inference(s, g, links);
  // A burst of 4 requests all decode together.
  CHECK(e.batch.value == 4);
  // Decode: (weights per GPU + 4 x (1000 + 100) tokens x 40 KiB) / (3000 GB/s x 0.9)
  // plus 2 x 80 all-reduces of 4 x 8192 x 2 B over 8 GPUs at 450 GB/s.
  const double hbm = 3000e9 * 0.9;
  const double ar = 2.0 * 7 / 8 * 4 * 8192 * 2 / 450e9;
  CHECK(e.decode_step.value == Approx((e.kv.weights.value + 4 * 1100 * 40960.0) / hbm + 160 * ar));
  // Prefill: 2 x 68.7B active weight FLOPs (no head) + causal attention
  // over 500 keys on average, on 8 GPUs at 1000 x 0.8 TFLOP/s.
  const double attention = 2.0 * 80 * 500 * (8192 + 8192);
  CHECK(e.prefill_per_token.value == Approx((2.0 * 68.45e9 + attention) / (8 * 800e12)).epsilon(0.01));
  // TPOT = decode step + the prefills that share the steps: 4 x 1000/200 tokens each step.
  CHECK(e.tpot.value == Approx(e.decode_step.value + 4 * 1000.0 / 200 * e.prefill_per_token.value));
}

TEST_CASE("worksheet units: sizes binary, rates decimal, a FLOP rate per second", "[estimate]") {
  // One convention in every report (README, Units): memory and message
  // sizes in KiB/MiB/GiB, bandwidth in GB/s, compute rates in FLOP/s.
  CHECK(format_value(20.78e9, Unit::bytes) == "19.35 GiB");  // 20.78e9 / 2^30
  CHECK(format_value(48.0 * 1048576, Unit::bytes) == "48 MiB");
  CHECK(format_value(512, Unit::bytes) == "512 B");
  CHECK(format_value(450e9, Unit::bytes_per_s) == "450 GB/s");
  CHECK(format_value(312e12 * 0.7464, Unit::flops_per_s) == "232.9 TFLOP/s");
  CHECK(format_value(2.15e15, Unit::flops) == "2.15 PFLOP");
}
