// Data-parallel gradient buckets (workloads/training/grad_buckets.h): the
// filling rules of PyTorch DDP and Megatron-LM, and the buckets the training
// generator emits for the 4-GPU strategy bench's Llama against the
// all-reduces torch.profiler counted in the real steps
// (calibration/measurements/h100-x4/strategy_step_2026-11-26: 34 per DP4
// step; PP2xDP2 18 on stage 0 and 19 eager / 18 compiled on stage 1, one
// of them the clip's norm all-reduce over the pipeline group).
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "workloads/training/grad_buckets.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// calibration/microbench/strategy_step_bench.py's model and batch: AMP over
// fp32 parameters, fp32 gradients.
TrainingConfig bench(Framework f, int tp, int pp, int dp) {
  TrainingConfig c;
  c.model.name = "llama_h4096_L8_s4096";
  c.model.layers = 8;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.kv_heads = 32;
  c.model.head_dim = 128;
  c.model.ffn_hidden = 11008;
  c.model.vocab = 32000;
  c.model.seq_len = 4096;
  c.model.mlp = workloads::models::MlpKind::swiglu;
  c.model.norm = workloads::models::NormKind::rms_norm;
  c.model.position = workloads::models::PositionKind::rotary;
  c.model.tied_embeddings = false;
  c.model.linear_bias = false;
  c.model.dropout = 0.0;
  c.framework = f;
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = dp;
  c.batch = {8, pp > 1 ? 1 : 8 / dp};
  c.optimizer.grad_bytes = 4.0;
  return c;
}

// The DP gradient reduces each simulated program emits, in program order:
// bytes per program id.
std::vector<std::vector<double>> dp_buckets(const TrainingConfig& c) {
  REQUIRE(!check_strategy(c, c.gpus()));
  GeneratorOptions go;
  const TrainingWorkload w = generate_training(c, go);
  std::vector<std::vector<double>> out;
  for (int r : w.simulated) {
    const uint32_t id = w.graph->program_id(r);
    if (id >= out.size()) out.resize(id + 1);
    if (!out[id].empty()) continue;
    const auto& ops = w.graph->program(r).ops;
    const auto& cats = w.categories.at(id);
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto* coll = std::get_if<workloads::CollectiveOp>(&ops[i].payload);
      if (cats[i] == OpCategory::dp && coll && coll->comm == kSlotDp) {
        out[id].push_back(static_cast<double>(coll->bytes.count()));
      }
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const auto& v) { return v.empty(); }),
            out.end());
  return out;
}

// DDP's own list of its rebuilt buckets (bytes, in launch order) on rank 0
// of a point of calibration/microbench/ddp_bucket_timeline.py's run.
std::vector<double> ddp_rebuilt(const std::string& strategy, const std::string& build) {
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) +
                   "/calibration/measurements/h100-x4/ddp_bucket_timeline_2026-11-26/"
                   "ddp_bucket_timeline.json");
  REQUIRE(in);
  const auto doc = nlohmann::json::parse(in);
  for (const auto& r : doc["results"]) {
    if (r["strategy"] != strategy || r["build"] != build || !r["sync"].get<bool>()) continue;
    std::stringstream list(r["ranks"][0]["ddp_logging"]["rebuilt_bucket_sizes"].get<std::string>());
    std::vector<double> out;
    for (std::string item; std::getline(list, item, ',');) out.push_back(std::stod(item));
    return out;
  }
  FAIL("no " << strategy << " " << build << " point");
  return {};
}

// Bytes of fp32 gradient of the bench model's tensors (TP 1).
constexpr double kHead = 32000.0 * 4096 * 4, kNorm = 4096.0 * 4, kQkv = 3 * 4096.0 * 4096 * 4,
                 kProj = 4096.0 * 4096 * 4, kFc1 = 2 * 11008.0 * 4096 * 4, kFc2 = 11008.0 * 4096 * 4;

}  // namespace

TEST_CASE("grad buckets: DDP's 1 MiB first bucket, then 25 MiB; a bucket closes at its limit",
          "[training][dp][buckets]") {
  TrainingConfig c = bench(Framework::pytorch_eager, 1, 1, 4);
  const GradBucketRule r = grad_bucket_rule(c, 0, 0, 0);
  CHECK(r.first_bytes == 1 * kMiB);
  CHECK(r.bytes == 25 * kMiB);
  CHECK_FALSE(r.whole_stage);
  GradBucketFiller f(r, 4.0);  // fp32 gradients: 4 B per parameter
  // 0.2 MiB + 0.8 MiB reach the first limit exactly (>=, as DDP's
  // compute_bucket_assignment_by_size).
  CHECK(f.add(0.2 * kMiB / 4, 0).dense == 0);
  CHECK(f.add(0.8 * kMiB / 4, 0).dense == Approx(kMiB / 4));
  // Then 25 MiB: 24 MiB stays open, 2 MiB more closes 26 MiB.
  CHECK(f.add(24 * kMiB / 4, 0).dense == 0);
  CHECK(f.add(2 * kMiB / 4, 0).dense == Approx(26 * kMiB / 4));
  // A gradient above the limit is a bucket of its own.
  CHECK(f.add(100 * kMiB / 4, 0).dense == Approx(100 * kMiB / 4));
  CHECK(f.add(3 * kMiB / 4, 0).dense == 0);
  CHECK(f.flush().dense == Approx(3 * kMiB / 4));
  CHECK(f.flush().dense == 0);

  // A cap the user sets is every bucket's, the first's too (distributed.py).
  c.parallel.dp_bucket_bytes = static_cast<int64_t>(50 * kMiB);
  const GradBucketRule set = grad_bucket_rule(c, 0, 0, 0);
  CHECK(set.first_bytes == 50 * kMiB);
  CHECK(set.bytes == 50 * kMiB);
  CHECK(grad_bucket_bytes(c) == 50 * kMiB);
}

TEST_CASE("grad buckets: Megatron's max(40M, 1M x dp) parameters, pipeline rank 0's first chunk only",
          "[training][dp][buckets]") {
  CHECK(megatron_bucket_params(8) == 40e6);
  CHECK(megatron_bucket_params(64) == 64e6);
  TrainingConfig c = bench(Framework::megatron, 1, 1, 64);
  c.optimizer.grad_bytes = 2.0;
  CHECK(grad_bucket_bytes(c) == 128e6);  // 64M bf16 gradients
  const GradBucketRule r = grad_bucket_rule(c, 0, 0, 0);
  CHECK(r.first_bytes == 128e6);
  CHECK_FALSE(r.whole_stage);
  CHECK(grad_bucket_rule(c, 1, 1, 1).whole_stage);  // pipeline rank > 0
  CHECK(grad_bucket_rule(c, 0, 4, 0).whole_stage);  // a later model chunk (interleaved)
  // Dense and expert buffers fill apart; one bucket per stage holds all.
  GradBucketFiller f(r, 2.0);
  const GradBucket a = f.add(30e6, 70e6);
  CHECK(a.dense == 0);
  CHECK(a.expert == 70e6);  // 140 MB of bf16 closes the expert bucket
  CHECK(f.add(40e6, 0).dense == 70e6);
  GradBucketFiller whole(grad_bucket_rule(c, 1, 1, 1), 2.0);
  CHECK(whole.add(500e6, 0).dense == 0);
  CHECK(whole.add(500e6, 0).dense == 0);
  CHECK(whole.flush().dense == 1000e6);
}

TEST_CASE("grad buckets: the DP4 bench step's 34 DDP buckets, as measured", "[training][dp][buckets]") {
  // Eager: each weight's gradient is ready after its wgrad GEMM (and the
  // cast to fp32), in backward order: the head alone (the 1 MiB first
  // bucket), then per layer {previous norm + fc2}, {fc1}, {norm2 + proj},
  // {qkv}; the last layer's norm1 joins the embedding. 1 + 4 x 8 + 1 = 34,
  // torch.profiler's count of ncclDevKernel_AllReduce per DP4 step.
  const auto eager = dp_buckets(bench(Framework::pytorch_eager, 1, 1, 4));
  REQUIRE(eager.size() == 1);
  const std::vector<double>& e = eager[0];
  REQUIRE(e.size() == 34);
  CHECK(e[0] == kHead);
  CHECK(e[1] == kNorm + kFc2);
  CHECK(e[2] == kFc1);
  CHECK(e[3] == kNorm + kProj);
  CHECK(e[4] == kQkv);
  CHECK(e[5] == kNorm + kFc2);
  CHECK(e[33] == kNorm + kHead);  // L0's norm1 and the embedding (as large as the head)
  double sum = 0;
  for (double b : e) sum += b;
  CHECK(sum == 1881214976.0 * 4);  // every parameter of the model once (the bench's count)

  // torch.compile: a compiled layer's backward hands out all its gradients
  // at its end, in autograd's ready-queue order: {final norm + head}, then
  // per layer {norm1 + qkv}, {fc1}, {fc2}, {norm2 + proj}; the embedding
  // alone. 34 too.
  const auto compiled = dp_buckets(bench(Framework::torch_compile, 1, 1, 4));
  REQUIRE(compiled.size() == 1);
  const std::vector<double>& k = compiled[0];
  REQUIRE(k.size() == 34);
  CHECK(k[0] == kNorm + kHead);
  CHECK(k[1] == kNorm + kQkv);
  CHECK(k[2] == kFc1);
  CHECK(k[3] == kFc2);
  CHECK(k[4] == kNorm + kProj);
  CHECK(k[33] == kHead);
}

TEST_CASE("grad buckets: autograd's order for a compiled region's gradients", "[training][dp][buckets]") {
  // A binary max-heap (std::priority_queue) of equal keys after one lower
  // one: norm1, qkv, proj, norm2, fc1, fc2 (forward use order) pop as
  // norm1, qkv, fc1, fc2, norm2, proj, DDP's rebuilt order measured.
  CHECK(autograd_ready_order(6) == std::vector<size_t>{0, 1, 4, 5, 3, 2});
  CHECK(autograd_ready_order(2) == std::vector<size_t>{0, 1});  // final norm, head
  CHECK(autograd_ready_order(1) == std::vector<size_t>{0});
  CHECK(autograd_ready_order(0).empty());
}

TEST_CASE("grad buckets: PP2xDP2's per-stage DDP buckets, as measured", "[training][dp][buckets]") {
  // Measured all-reduces per step, less the clip's one over the pipeline
  // group: stage 0 17 (eager and compiled); stage 1 18 eager (its last
  // layer's norm1 alone at the end) and 17 compiled ({final norm + head}
  // first, every layer's norm1 inside its first bucket).
  const auto eager = dp_buckets(bench(Framework::pytorch_eager, 1, 2, 2));
  REQUIRE(eager.size() == 2);
  CHECK(eager[0].size() == 17);
  CHECK(eager[1].size() == 18);
  CHECK(eager[1].back() == kNorm);
  const auto compiled = dp_buckets(bench(Framework::torch_compile, 1, 2, 2));
  REQUIRE(compiled.size() == 2);
  CHECK(compiled[0].size() == 17);
  CHECK(compiled[1].size() == 17);
  // TP2xDP2: the same 34 of half the size (TP2xDP2's 56 fp32 all-reduces
  // less TP4's 22 TP ones).
  const auto tp2 = dp_buckets(bench(Framework::pytorch_eager, 2, 1, 2));
  REQUIRE(tp2.size() == 1);
  CHECK(tp2[0].size() == 34);
  CHECK(tp2[0][0] == kHead / 2);
}

TEST_CASE("grad buckets: Megatron buckets pipeline rank 0 only; later ranks reduce once",
          "[training][dp][buckets]") {
  TrainingConfig c = bench(Framework::megatron, 1, 2, 2);
  c.optimizer.grad_bytes = 2.0;  // bf16 gradients: 40M parameters = 80 MB per bucket
  const auto b = dp_buckets(c);
  REQUIRE(b.size() == 2);
  // Stage 0 (4 layers and the embedding), in backward order: fc2 (45.1M
  // parameters) and fc1 (90.2M) each close a bucket, norm2 + proj (16.8M)
  // + qkv (50.3M) a third, norm1 joins the next layer's fc2; L0's norm1
  // the embedding (131.1M): 3 x 4 + 1 = 13, every one at least 40M.
  REQUIRE(b[0].size() == 13);
  for (double bytes : b[0]) CHECK(bytes >= 80e6);
  CHECK(b[0][0] == kFc2 / 2);
  CHECK(b[0][2] == (kNorm + kProj + kQkv) / 2);
  // Stage 1: one bucket, every parameter of the stage.
  REQUIRE(b[1].size() == 1);
  const double stage1 = 4 * (kQkv + kProj + kFc1 + kFc2 + 2 * kNorm) / 2 + (kHead + kNorm) / 2;
  CHECK(b[1][0] == stage1);
}

TEST_CASE("grad buckets: every bucket as DDP rebuilt it on 4 H100s", "[training][dp][buckets]") {
  // calibration/measurements/h100-x4/ddp_bucket_timeline_2026-11-26: DDP's
  // logging data after its rebuild (rebuilt_bucket_sizes), the same 34
  // all-reduces per step torch.profiler counted. Exact, byte for byte.
  const auto dp4 = dp_buckets(bench(Framework::pytorch_eager, 1, 1, 4));
  CHECK(dp4.at(0) == ddp_rebuilt("DP4", "eager"));
  const auto dp4c = dp_buckets(bench(Framework::torch_compile, 1, 1, 4));
  CHECK(dp4c.at(0) == ddp_rebuilt("DP4", "compile"));
  const auto tp2 = dp_buckets(bench(Framework::pytorch_eager, 2, 1, 2));
  CHECK(tp2.at(0) == ddp_rebuilt("TP2xDP2", "eager"));
}
