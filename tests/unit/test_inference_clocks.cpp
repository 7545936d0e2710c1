// Serving steps at the power governor's clock (cluster.clocks: model;
// replica.h ReplicaClocks, IterationCost::cost(shape, clock)): a step at
// the rested clock is the rested step; below it the tensor-core work
// stretches by 1 / compute_speed and memory-bound kernels keep their time;
// the activity a step hands the governor is its FLOPs over the tensor peak
// and its bytes over the HBM peak; the replica's governor gives a step the
// clock its filters hold at the step's start and charges power x time.
#include <cmath>

#include "catch.h"
#include "models/gpu/power_model.h"
#include "test_inference_fixtures.h"
#include "workloads/inference/iteration_cost.h"
#include "workloads/inference/serving_system.h"
#include "workloads/models/model_formulas.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;
namespace g = gcsim::models::gpu;

namespace {

using test::h100;
using test::decode_batch;
using test::llama8b_on_h100;
using test::NoComm;

StepShape prefill(int64_t tokens) {
  StepShape s;
  s.tokens = tokens;
  s.prefills = {{tokens, tokens}};
  s.sampled = 1;
  return s;
}

}  // namespace

TEST_CASE("a serving step at the rested clock is the rested step; below it tensor work stretches",
          "[inference][clocks][serving]") {
  NoComm comm;
  IterationCost cost(llama8b_on_h100(), comm);
  const g::PowerParams& p = cost.config().gpu.power;
  REQUIRE(p.enabled());
  const StepShape s = prefill(2048);
  const StepCost rested = cost.cost(s);
  const StepCost at1 = cost.cost(s, 1.0);
  CHECK(at1.total == rested.total);
  CHECK(at1.classes.seconds == rested.classes.seconds);
  // 0.75 of f_max (1485 MHz): arithmetic at compute_speed = 1 / (0.371 /
  // 0.75 + 0.629) = 0.8899 of its rested rate (the preset's
  // clock_bound_share 0.371). The GEMMs are compute-bound waves plus
  // per-wave overheads the clock leaves alone: their class grows by a bit
  // less than 1 / 0.8899 = 1.1237, and by more than 1.10 (the overheads are
  // ~2% of a 2048-token GEMM's waves).
  const double r = 0.75;
  const double speed = 1.0 / (p.clock_bound_share / r + 1.0 - p.clock_bound_share);
  REQUIRE(g::compute_speed(p, r) == Approx(speed).epsilon(1e-12));
  const StepCost slow = cost.cost(s, r);
  using gcsim::workloads::training::KernelClass;
  const double gemm = slow.classes.of(KernelClass::gemm) / rested.classes.of(KernelClass::gemm);
  CHECK(gemm <= 1.0 / speed + 1e-9);
  CHECK(gemm > 1.10);
  CHECK(slow.clock == r);
  // The tensor SM-time is the arithmetic's time: stretched by exactly 1 / speed.
  CHECK(slow.activity_s.tensor == Approx(rested.activity_s.tensor / speed).epsilon(1e-9));
  // Bytes do not move with the clock.
  CHECK(slow.activity_s.hbm == Approx(rested.activity_s.hbm).epsilon(1e-12));
  // A decode step is HBM-bound: at 0.75 its waves stay bound by HBM (the
  // GEMMs' M = 16 arithmetic is far below their weights' read time), so it
  // keeps its time within 1%.
  const StepShape d = decode_batch(16, 1024);
  CHECK(cost.cost(d, r).total.seconds() == Approx(cost.cost(d).total.seconds()).epsilon(0.01));
  CHECK_THROWS(cost.cost(s, 0.0));
  CHECK_THROWS(cost.cost(s, 1.5));
}

TEST_CASE("a serving step's activity is its FLOPs over the tensor peak and bytes over HBM's",
          "[inference][clocks][serving]") {
  NoComm comm;
  IterationCost cost(llama8b_on_h100(), comm);
  const auto& m = cost.config().model;
  const auto params = workloads::models::count_params(m);
  // Prefill of 2048 tokens (test_inference_cost.cpp's bound): the layers'
  // matrices 2 x 6.98e9 x 2048 FLOPs at 989.4 TF/s x 0.81 (the preset's
  // bf16 GEMM efficiency) take 35.3 ms of tensor SM-time; causal attention
  // adds 1.1e12 FLOPs at the flash kernel's efficiency (> 0.81: at most
  // ~2 ms more) and tiles round the GEMMs up a little. So the tensor
  // activity-seconds lie within [35.3, 35.3 x 1.12] ms.
  const double linear = 2.0 * static_cast<double>(params.total - params.embedding - params.output_head) * 2048;
  const double gemm_s = linear / (989.4e12 * 0.81);
  const StepCost pre = cost.cost(prefill(2048));
  INFO("tensor activity-seconds " << pre.activity_s.tensor << ", GEMM bound " << gemm_s);
  CHECK(pre.activity_s.tensor > gemm_s);
  CHECK(pre.activity_s.tensor < gemm_s * 1.12);
  // Its mean tensor activity is a time fraction: below 1.
  CHECK(pre.activity_s.tensor / pre.total.seconds() < 1.0);
  // Decode of 16 at context 1024: every weight but the embedding table (a
  // gather of 16 rows: 15.0 GB) and the batch's KV (16 x 1025 x 131,072 B)
  // read once over the 3,350 GB/s peak, plus the activations' few MB: HBM
  // activity-seconds within 1.0x - 1.05x of that.
  const double bytes =
      static_cast<double>(params.total - params.embedding) * 2.0 + 16.0 * 1025.0 * 131072.0;
  const StepCost dec = cost.cost(decode_batch(16, 1024));
  INFO("HBM activity-seconds " << dec.activity_s.hbm << ", bytes / peak " << bytes / 3350e9);
  CHECK(dec.activity_s.hbm > bytes / 3350e9);
  CHECK(dec.activity_s.hbm < bytes / 3350e9 * 1.05);
}

TEST_CASE("a serving step's collectives add their algorithm's HBM bytes to its activity",
          "[inference][clocks][serving]") {
  // Llama 3 8B (hidden 4096, 32 layers, vocabulary 128,256) at TP 2 (and
  // TP 2 x PP 2), a 2048-token prefill, bf16. Each all-reduce of S = 2048
  // x 4096 x 2 B = 16,777,216 B moves 4 S on each GPU of a pair (ring: the
  // input read and the output written, S each, and 2(n-1)/n S = S received
  // into NCCL's staging and read back: collective_hbm.h); one after the
  // embedding and two a layer: 65 x 4 S = 4,362,076,160 B. The head's
  // all-gather of the sampled row's logits (1 x 64,128 x 2 ranks x 2 B =
  // 256,512 B) moves S + S/2 + 2 x S/2 = 2.5 S = 641,280 B.
  // Measured (h100-x4/phase_power_2026-11-27): back-to-back 128 MiB
  // all-reduces over 2 H100s draw 262-275 W, which the power model gives
  // from exactly these bytes (test_power_measured.cpp).
  NoComm comm;
  auto c = llama8b_on_h100();
  c.parallel = {2, 1, 1};
  c.ranks = {0, 1};
  IterationCost tp2(c, comm);
  const StepCost one = tp2.cost(prefill(2048));
  CHECK(one.collective_hbm_bytes == Approx(4'362'076'160.0 + 641'280.0));
  // They are part of the HBM activity the governor sees.
  CHECK(one.activity_s.hbm >= one.collective_hbm_bytes / c.gpu.hbm_bandwidth.bytes_per_s());
  // Two stages: 16 layers each (32 all-reduces), the embedding's on the
  // first, the head's on the last, and the send of the hidden states and
  // residual (2 x 2048 x 4096 x 2 B = S' = 33,554,432 B, 3 S' on the
  // receiving side: collective_hbm.h's send/recv); summed over the stages
  // and divided by pp = 2, as the activity is.
  c.parallel = {2, 2, 1};
  c.ranks = {0, 1, 2, 3};
  IterationCost pp2(c, comm);
  const StepCost two = pp2.cost(prefill(2048));
  CHECK(two.collective_hbm_bytes == Approx((4'362'076'160.0 + 641'280.0 + 3.0 * 33'554'432.0) / 2.0));
}

TEST_CASE("a replica's governor: rest gives f_max, the next step the clock its filters hold; energy = power x time",
          "[inference][clocks][serving]") {
  ServingConfig c;
  c.model = test::model_preset("llama3-8b");
  c.scheduler.mode = SchedulerMode::v0;
  c.scheduler.max_model_len = 8192;
  c.scheduler.max_num_batched_tokens = 8192;
  sim::Simulator sim(1);
  NoComm comm;
  ServingEnvironment env;
  env.sim = &sim;
  env.gpu = h100();
  env.comm = &comm;
  env.clocks.model = true;
  env.clocks.power = env.gpu.power;
  env.clocks.f_max_mhz = env.gpu.sm_clock_ghz * 1e3;
  const g::PowerParams& p = env.gpu.power;
  // Two 8000-token prompts, one output token each: the second arrives at
  // 0.2 s, some tens of ms after the first's step (~150 ms) ends.
  std::vector<Request> reqs = {test::request(0, 8000, 1), test::request(1, 8000, 1)};
  reqs[1].arrival = sim::Time::zero() + sim::ms(int64_t{200});
  ServingSystem system(c, {4000, 16 * 131072}, {}, env, 1);
  const ServingOutcome out = system.run(reqs);
  REQUIRE(out.steps.size() == 2);
  const StepRecord& a = out.steps[0];
  const StepRecord& b = out.steps[1];
  // From rest the filters hold nothing: the first step runs at f_max.
  CHECK(a.sm_clock_mhz == Approx(1980.0).epsilon(1e-12));
  const double t = (a.end - a.start).seconds();
  REQUIRE(b.start > a.end);
  // Its board energy: power x time, the power constant over the step at
  // f_max: idle + W_tensor a_t + W_vector a_v + W_mem (sigma a_hbm + (1 -
  // sigma) a_unshared) (phi(1) = 1; sigma = hbm_device_share, 0.31 on this
  // preset: the HBM traffic beside no arithmetic pays the whole memory path).
  REQUIRE(p.hbm_device_share < 1.0);
  // The prefill's norms and elementwise passes stream beside no arithmetic
  // of their own: the step carries their traffic (each kernel's, summed), not
  // the unshared traffic of its mean (zero: the GEMMs' arithmetic dwarfs it).
  CHECK(a.activity_s.hbm_unshared > 0.0);
  const double e = p.idle_w * t + p.tensor_w * a.activity_s.tensor + p.vector_w * a.activity_s.vector +
                   p.hbm_w * (p.hbm_device_share * a.activity_s.hbm +
                              (1.0 - p.hbm_device_share) * a.activity_s.hbm_unshared);
  CHECK(a.energy_j == Approx(e).epsilon(1e-9));
  // The second step's clock by hand: each loop averages the step's mean
  // activity A over its length t, held for activity_hold after it (0.1 ms),
  // then decays over the rest of the gap: A (1 - exp(-(t + hold) / tau))
  // exp(-(gap - hold) / tau). The clock is the lower of the two loops' cap
  // clocks.
  g::Activity mean;
  mean.tensor = a.activity_s.tensor / t;
  mean.vector = a.activity_s.vector / t;
  mean.hbm = a.activity_s.hbm / t;
  mean.hbm_unshared = a.activity_s.hbm_unshared / t;
  CHECK(g::unshared_hbm(mean) == 0.0);  // what the mean alone would give
  const double hold = p.activity_hold.seconds();
  const double gap = (b.start - a.end).seconds();
  const auto averaged = [&](double tau) {
    const double k = (1.0 - std::exp(-(t + hold) / tau)) * std::exp(-(gap - hold) / tau);
    g::Activity x;
    x.tensor = mean.tensor * k;
    x.vector = mean.vector * k;
    x.hbm = mean.hbm * k;
    x.hbm_unshared = mean.hbm_unshared * k;
    return x;
  };
  const double slow = g::cap_clock(p, averaged(p.time_constant.seconds()));
  const double fast = g::cap_clock(p, averaged(p.fast_time_constant.seconds()), p.fast_cap_w);
  INFO("first step " << t * 1e3 << " ms, mean tensor activity " << mean.tensor << ", gap " << gap * 1e3
                     << " ms; slow loop " << slow << ", fast loop " << fast);
  CHECK(b.sm_clock_mhz == Approx(std::min(slow, fast) * 1980.0).epsilon(1e-6));
  // A loaded GPU just off a long prefill: below f_max, above the back-to-back
  // GEMM clock the cap settles at (1349 MHz on this preset).
  CHECK(b.sm_clock_mhz < 1980.0);
  CHECK(b.sm_clock_mhz > 1349.0);
  // The run's energy: both steps and the idle gap (idle_w) between them.
  const double run_j = out.replicas.at(0).energy_j;
  CHECK(run_j > a.energy_j + b.energy_j);
  CHECK(run_j == Approx(a.energy_j + b.energy_j + p.idle_w * gap +
                        p.idle_w * (out.end - b.end).seconds())
                     .epsilon(1e-9));
}
