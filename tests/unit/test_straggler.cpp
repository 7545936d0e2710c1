// A straggler: one GPU of a training step throttled (gpu::throttled()), the
// step simulated with it in place. The slowdown must be what the pipeline
// schedule implies: the slow GPU's TP peers wait for it at every TP
// all-reduce, so its whole pipeline stage runs at its pace; the other
// stages wait for that stage's activations and gradients; and the data-
// parallel replicas wait for it at the gradient all-reduce before their
// optimizer step, so a slow DP rank slows everyone.
#include <algorithm>
#include <map>
#include <string>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/cluster/cluster_model.h"
#include "models/gpu/gpu_throttle.h"
#include "models/gpu/kernel_cost_model.h"
#include "training_replay.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;
using models::gpu::GpuSpec;
using models::gpu::Throttle;

TEST_CASE("straggler: a throttled spec scales the SM rates, not HBM unless asked",
          "[straggler]") {
  const GpuSpec h100 = test::h100_datasheet();
  using models::gpu::Dtype;
  // Half the SM clock: 989 -> 494.5 TF/s bf16, 67 -> 33.5 TF/s FP32 (peak
  // = SMs x FLOP/clock x clock); the 1 us per-wave overhead takes 2 us;
  // HBM stays at 3350 GB/s (its own clock domain).
  const GpuSpec slow = models::gpu::throttled(h100, Throttle{0.5, 1.0});
  CHECK(slow.tensor_peak_for(Dtype::bf16).flops_per_s() == Approx(494.5e12));
  CHECK(slow.tensor_peak_for(Dtype::fp8).flops_per_s() == Approx(989.5e12));
  CHECK(slow.vector_fp32_peak.flops_per_s() == Approx(33.5e12));
  CHECK(slow.efficiency.tile_overhead == sim::us(int64_t{2}));
  CHECK(slow.hbm_bandwidth.bytes_per_s() == Approx(3350e9));
  CHECK(slow.kernel_launch_latency == h100.kernel_launch_latency);
  CHECK(slow.sm_count == 132);
  // HBM at 60%: 2010 GB/s; the SM rates untouched.
  const GpuSpec mem = models::gpu::throttled(h100, Throttle{1.0, 0.6});
  CHECK(mem.hbm_bandwidth.bytes_per_s() == Approx(2010e9));
  CHECK(mem.tensor_peak_for(Dtype::bf16).flops_per_s() == Approx(989e12));
  CHECK_THROWS_AS(models::gpu::throttled(h100, Throttle{0.0, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS(models::gpu::throttled(h100, Throttle{1.0, 1.5}), std::invalid_argument);

  // A compute-bound 8192^3 bf16 GEMM costed on both: its waves take twice
  // as long, the launch latency (host and front end) does not.
  const auto k = models::gpu::gemm_kernel(h100, {8192, 8192, 8192, 1, Dtype::bf16});
  const double fast = (models::gpu::isolated_time(h100, k, 132) - h100.kernel_launch_latency).seconds();
  const double half = (models::gpu::isolated_time(slow, k, 132) - h100.kernel_launch_latency).seconds();
  // Not exactly twice: the tiles' bytes (a tenth of their arithmetic on 132
  // SMs) do not stretch, and through the p = 4 overlap of
  // kernel_cost_model.h they add ~(1/10)^4 / 4 = 2.5e-5 of a wave at full
  // clock and 16x less at half: held to 1e-4.
  CHECK(half == Approx(2 * fast).epsilon(1e-4));
  CHECK(half < 2 * fast);
  // A streaming copy (memory-bound) hardly moves with the SM clock: only
  // its per-wave SM overhead doubles.
  models::gpu::MemoryOpShape add;
  add.elements = int64_t{1} << 28;  // a residual add over 256M bf16 elements
  add.inputs = 2;
  const auto copy = models::gpu::memory_kernel(h100, add);
  const double c_fast = models::gpu::isolated_time(h100, copy, 132).seconds();
  const double c_half = models::gpu::isolated_time(slow, copy, 132).seconds();
  CHECK(c_half > c_fast);
  CHECK(c_half < 1.05 * c_fast);
  // Exactly: every wave stays HBM-bound and pays its SM overhead twice.
  const double waves = models::gpu::wave_count(h100, copy, 132);
  CHECK(c_half - c_fast == Approx(waves * h100.efficiency.tile_overhead.seconds()).epsilon(1e-9));
}

namespace {

// 8 GPUs of one node: TP 2 x PP 2 x DP 2 (ranks tp + 2 dp + 4 pp), GPipe,
// 4 micro-batches per replica. Two 4096-wide layers per stage and a
// vocabulary of 8, so that the embedding and head add little and the two
// stages cost nearly the same.
TrainingConfig small_step() {
  TrainingConfig c;
  auto& m = c.model;
  m.name = "test";
  m.layers = 4;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden = 11008;
  m.vocab = 8;
  m.seq_len = 2048;
  m.attention = workloads::models::AttentionKind::gqa;
  m.mlp = workloads::models::MlpKind::swiglu;
  m.norm = workloads::models::NormKind::rms_norm;
  m.position = workloads::models::PositionKind::rotary;
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 2;
  c.parallel.schedule = Schedule::gpipe;
  c.batch = {8, 1};
  REQUIRE(!check_strategy(c, 8));
  REQUIRE(c.micro_batches() == 4);
  return c;
}

using Step = test::TrainingStep;

// Every rank simulated (no mirroring), communication free (zero latency,
// unbounded bandwidth, no SMs held), so that the step is compute and the
// schedule alone. `slow` maps ranks to their throttled spec.
Step run_step(const TrainingConfig& c, const GpuSpec& gpu, const std::map<int, GpuSpec>& slow) {
  Step out;
  GeneratorOptions o;
  o.mirror = false;
  out.w = generate_training(c, o);
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = gpu;
  cfg.rank_gpu = slow;
  cfg.num_ranks = c.gpus();
  cfg.fabric.gpus_per_node = 8;
  cfg.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(1e12);
  cfg.fabric.scale_up_latency = sim::Duration::zero();
  cfg.fabric.scale_out_bandwidth = sim::Bandwidth::gb_per_s(1e12);
  cfg.fabric.scale_out_latency = sim::Duration::zero();
  cfg.collective_sms = 0;
  test::replay_training(out, cfg);
  return out;
}

// Cost-model time (s) of `rank`'s compute ops whose name starts with
// `prefix` ("F m0 ", "B m0 ") or, for an empty prefix, of its optimizer
// ops, each kernel alone on `spec` with its launch latency: the pass as the
// GPU runs it back to back when communication is free.
double pass_time(const Step& s, int rank, const std::string& prefix, const GpuSpec& spec) {
  const auto& prog = s.w.graph->program(rank);
  const auto& cats = s.w.categories[s.w.graph->program_id(rank)];
  double t = 0;
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    const auto& op = prog.ops[i];
    if (op.kind != workloads::OpKind::compute) continue;
    const std::string& name = s.w.graph->name(op.name);
    const bool match = prefix.empty() ? cats[i] == OpCategory::optimizer
                                      : name.rfind(prefix, 0) == 0;
    if (!match) continue;
    const auto k = models::cluster::kernel_for(spec, std::get<workloads::ComputeOp>(op.payload));
    t += models::gpu::isolated_time(spec, k, spec.sm_count).seconds();
  }
  return t;
}

// GPipe on two stages with per-micro-batch pass costs F_s, B_s, free
// communication: stage 0 runs its m forwards back to back, stage 1 each
// forward once its input is there, then both run the m backwards in
// micro-batch order, stage 0 each one once stage 1 has sent its gradient.
// Returns when stage 0's last backward ends (the schedule's makespan).
double gpipe_two_stages(int m, double f0, double b0, double f1, double b1) {
  double f0_end = 0, f1_end = 0;
  for (int i = 0; i < m; ++i) {
    f0_end += f0;
    f1_end = std::max(f0_end, f1_end) + f1;
  }
  double b1_end = f1_end, b0_end = f0_end;
  for (int i = 0; i < m; ++i) {
    b1_end += b1;
    b0_end = std::max(b0_end, b1_end) + b0;
  }
  return b0_end;
}

double last_end(const Step& s, int rank) {
  double t = 0;
  for (const auto& r : s.records) {
    if (r.rank == rank) t = std::max(t, r.end.seconds());
  }
  return t;
}

// [first start, last end] of `rank`'s compute ops named `prefix`...
std::pair<double, double> span(const Step& s, int rank, const std::string& prefix) {
  double a = 1e30, b = 0;
  for (const auto& r : s.records) {
    if (r.rank != rank) continue;
    const auto& op = s.w.graph->program(rank).ops[r.op];
    if (op.kind != workloads::OpKind::compute) continue;
    if (s.w.graph->name(op.name).rfind(prefix, 0) != 0) continue;
    a = std::min(a, r.start.seconds());
    b = std::max(b, r.end.seconds());
  }
  return {a, b};
}

}  // namespace

TEST_CASE("straggler: 50% speed in one TP group slows the step as the schedule implies",
          "[straggler][training]") {
  const TrainingConfig c = small_step();
  const int m = 4;
  const int straggler = 0;  // stage 0, replica 0; TP peer 1; DP peer 2
  const int stage1 = 4;     // a rank of stage 1 (same replica)
  GpuSpec gpu = test::h100_datasheet();
  const Step base = run_step(c, gpu, {});

  // Pass costs of the nominal GPU, from the cost model.
  const double f0 = pass_time(base, straggler, "F m0 ", gpu);
  const double b0 = pass_time(base, straggler, "B m0 ", gpu);
  const double f1 = pass_time(base, stage1, "F m0 ", gpu);
  const double b1 = pass_time(base, stage1, "B m0 ", gpu);
  const double opt0 = pass_time(base, straggler, "", gpu);
  REQUIRE(f0 > 0);
  REQUIRE(b0 > f0);
  REQUIRE(opt0 > 0);
  // Without a straggler the step is GPipe's (m + p - 1)-pass makespan plus
  // the optimizer: with F0 ~ F1 and B0 ~ B1, (m + 1)(F + B) + O.
  const double t_base = gpipe_two_stages(m, f0, b0, f1, b1) + opt0;
  CHECK(base.end.seconds() == Approx(t_base).epsilon(1e-4));

  SECTION("the whole GPU at half speed (SM clock and HBM): every pass takes twice as long") {
    // Launch latency 0, so that every kernel's time is waves only and all
    // of it halves with the GPU's rates. Hand figure: stage 0 now takes
    // 2F0 and 2B0 per micro-batch and, being the slower stage, never
    // waits once started: it runs m forwards (2 m F0), then waits for
    // stage 1's first backward (F1 + B1 after its last forward), then its
    // m backwards back to back (2 m B0), then its optimizer step (2 O):
    //   T = 2m (F0 + B0) + F1 + B1 + 2 O    (vs (m+1)(F + B) + O)
    gpu.kernel_launch_latency = sim::Duration::zero();
    const Step nominal = run_step(c, gpu, {});
    const Step slow = run_step(c, gpu, {{straggler, models::gpu::throttled(gpu, {0.5, 0.5})}});
    const double F0 = pass_time(nominal, straggler, "F m0 ", gpu);
    const double B0 = pass_time(nominal, straggler, "B m0 ", gpu);
    const double F1 = pass_time(nominal, stage1, "F m0 ", gpu);
    const double B1 = pass_time(nominal, stage1, "B m0 ", gpu);
    const double O = pass_time(nominal, straggler, "", gpu);
    const double hand = 2 * m * (F0 + B0) + F1 + B1 + 2 * O;
    INFO("F0 " << F0 << " B0 " << B0 << " F1 " << F1 << " B1 " << B1 << " O " << O);
    INFO("nominal " << nominal.end.seconds() << " s, straggler " << slow.end.seconds()
                    << " s, hand " << hand << " s");
    CHECK(slow.end.seconds() == Approx(hand).epsilon(1e-4));
    // With equal stages that is (2m + 1)/(m + 1) = 1.8 x the step's pipeline part.
    CHECK((slow.end.seconds() - 2 * O) / (nominal.end.seconds() - O) ==
          Approx((2.0 * m + 1) / (m + 1)).epsilon(0.02));
  }

  SECTION("half the SM clock: compute-bound kernels twice as long, memory-bound ones not") {
    const GpuSpec half = models::gpu::throttled(gpu, {0.5, 1.0});
    const Step slow = run_step(c, gpu, {{straggler, half}});
    // The straggler's passes as the cost model prices them on its spec;
    // stage 0 is then the slower stage, and the schedule gives the step.
    const double F0 = pass_time(slow, straggler, "F m0 ", half);
    const double B0 = pass_time(slow, straggler, "B m0 ", half);
    const double O = pass_time(slow, straggler, "", half);
    REQUIRE(F0 > f1);
    REQUIRE(B0 > b1);
    // Mostly GEMMs and flash attention: near, but below, twice the time.
    CHECK(F0 / f0 > 1.7);
    CHECK(F0 / f0 < 2.0);
    const double pipe = gpipe_two_stages(m, F0, B0, f1, b1);
    const double hand = pipe + O;
    INFO("F0 " << f0 << " -> " << F0 << ", B0 " << b0 << " -> " << B0 << ", O " << opt0 << " -> "
               << O);
    INFO("base " << base.end.seconds() << " s, straggler " << slow.end.seconds() << " s, hand "
                 << hand << " s");
    CHECK(slow.end.seconds() == Approx(hand).epsilon(1e-4));
    CHECK(slow.end.seconds() > 1.5 * base.end.seconds());

    // Its TP peer waits for it at every all-reduce: rank 1's forward of
    // micro-batch 0 spans what rank 0's does (to the last kernel after the
    // last all-reduce, which rank 1 runs at full speed).
    const auto s0 = span(slow, straggler, "F m0 ");
    const auto s1 = span(slow, 1, "F m0 ");
    CHECK(s1.second - s1.first == Approx(s0.second - s0.first).epsilon(0.05));
    CHECK(s1.second - s1.first > 1.5 * (span(base, 1, "F m0 ").second - span(base, 1, "F m0 ").first));

    // A slow DP rank slows everyone. Stage 0 of replica 1 (ranks 2, 3)
    // holds no slow GPU, yet ends only after the slow stage's last
    // backward: the gradient all-reduce before the optimizer waits for
    // rank 0. Stage 1 of replica 0 (ranks 4, 5) gets each activation at
    // the slow stage's pace, so its last backward ends at m F0' + F1 + m B1,
    // and stage 1 of replica 1 (ranks 6, 7) waits for it at its own
    // gradient all-reduce. Every rank ends at least 1.15x later (ranks 6
    // and 7: 1.198x, their base step already paying the causal attention
    // grid's tail, attention_grid_tail.h).
    const double stage1_done = m * F0 + f1 + m * b1;
    for (int r = 0; r < 8; ++r) {
      INFO("rank " << r << ": " << last_end(base, r) << " s -> " << last_end(slow, r) << " s");
      CHECK(last_end(slow, r) >= (r < 4 ? pipe : stage1_done) - 1e-9);
      CHECK(last_end(slow, r) > 1.15 * last_end(base, r));
    }
  }
}

TEST_CASE("straggler: 1F1B with the slow GPU in the last stage", "[straggler][training]") {
  TrainingConfig c = small_step();
  c.parallel.schedule = Schedule::one_f_one_b;
  const int m = 4;
  const int straggler = 4;  // stage 1, replica 0
  const GpuSpec gpu = test::h100_datasheet();
  const GpuSpec half = models::gpu::throttled(gpu, {0.5, 1.0});
  const Step base = run_step(c, gpu, {});
  const Step slow = run_step(c, gpu, {{straggler, half}});
  const double f0 = pass_time(slow, 0, "F m0 ", gpu);
  const double b0 = pass_time(slow, 0, "B m0 ", gpu);
  const double o0 = pass_time(slow, 0, "", gpu);
  const double F1 = pass_time(slow, straggler, "F m0 ", half);
  const double B1 = pass_time(slow, straggler, "B m0 ", half);
  const double O1 = pass_time(slow, straggler, "", half);
  REQUIRE(F1 + B1 > f0 + b0);
  // 1F1B on two stages, stage 1 the slower: stage 0 runs F, F, then B, F
  // in turn, each of its forwards ready B0 + F0 after stage 1's previous
  // backward, while stage 1 needs it F1' + B1' after (its forward and
  // backward in turn), no sooner: stage 1 never waits once its first input
  // is there. So its last backward ends at F0 + m (F1' + B1'), stage 0's
  // at B0 later; stage 0's optimizer follows that, stage 1's its own:
  //   T = max(F0 + m (F1' + B1') + B0 + O0,  F0 + m (F1' + B1') + O1')
  const double pipe = f0 + m * (F1 + B1);
  const double hand = std::max(pipe + b0 + o0, pipe + O1);
  INFO("F0 " << f0 << " B0 " << b0 << " O0 " << o0 << "; F1' " << F1 << " B1' " << B1 << " O1' "
             << O1);
  INFO("base " << base.end.seconds() << " s, straggler " << slow.end.seconds() << " s, hand "
               << hand << " s");
  CHECK(slow.end.seconds() == Approx(hand).epsilon(1e-4));
  CHECK(slow.end.seconds() > 1.5 * base.end.seconds());
}

TEST_CASE("straggler: speed 1 is the nominal GPU, op for op", "[straggler]") {
  const TrainingConfig c = small_step();
  const GpuSpec gpu = test::h100_datasheet();
  const Step base = run_step(c, gpu, {});
  const Step same = run_step(c, gpu, {{3, models::gpu::throttled(gpu, {1.0, 1.0})}});
  CHECK(same.end == base.end);
  REQUIRE(same.records.size() == base.records.size());
  for (size_t i = 0; i < base.records.size(); ++i) {
    CHECK(same.records[i].rank == base.records[i].rank);
    CHECK(same.records[i].op == base.records[i].op);
    CHECK(same.records[i].start == base.records[i].start);
    CHECK(same.records[i].end == base.records[i].end);
  }
}

TEST_CASE("straggler: the cluster model costs each rank's kernels on its own spec",
          "[straggler]") {
  // One GEMM program on two ranks, rank 1 at half SM clock: the kernel is
  // costed once per spec, so rank 0 keeps the nominal time and rank 1
  // takes 2x its waves (a compute-bound 8192^3 bf16 GEMM).
  workloads::WorkloadGraph g(2);
  workloads::RankProgram p;
  workloads::Op op;
  op.name = g.intern_name("gemm");
  op.kind = workloads::OpKind::compute;
  op.stream = g.intern_stream("compute");
  workloads::ComputeOp gemm;
  gemm.shape = models::gpu::GemmShape{8192, 8192, 8192, 1, models::gpu::Dtype::bf16};
  op.payload = gemm;
  p.ops.push_back(op);
  const uint32_t id = g.add_program(std::move(p));
  g.assign(0, id, {});
  g.assign(1, id, {});
  const GpuSpec gpu = test::h100_datasheet();
  sim::Simulator simulator(1);
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = gpu;
  cfg.num_ranks = 2;
  cfg.rank_gpu[1] = models::gpu::throttled(gpu, {0.5, 1.0});
  models::cluster::ClusterModel cluster(simulator, cfg);
  sim::Recorder recorder(g, "", "test");
  sim::Replayer replayer(simulator, g, cluster, recorder);
  replayer.start();
  simulator.run();
  REQUIRE(replayer.outcome().complete);
  const auto recs = recorder.sorted_records();
  REQUIRE(recs.size() == 2);
  const auto k = models::gpu::gemm_kernel(gpu, {8192, 8192, 8192, 1, models::gpu::Dtype::bf16});
  // A record starts at the kernel's first tile (after its launch latency).
  const double launch = gpu.kernel_launch_latency.seconds();
  const double nominal = models::gpu::isolated_time(gpu, k, 132).seconds() - launch;
  for (const auto& r : recs) {
    const double waves = (r.end - r.start).seconds();
    CHECK(waves == Approx(r.rank == 0 ? nominal : 2 * nominal).epsilon(1e-4));
  }
  CHECK(cluster.describe(g.program(1).ops[0], 1) != cluster.describe(g.program(0).ops[0], 0));
}
