// The training generator end to end on the cluster model: the programs are
// valid IR, the mirrored shortcut gives the full per-rank simulation's
// result to the picosecond, and with free communication the simulated
// bubble matches the schedules' closed forms.
#include <memory>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/cluster/cluster_model.h"
#include "sim/cli/model_spec_loader.h"
#include "sim/recorder.h"
#include "sim/replayer.h"
#include "workloads/training/step_breakdown.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

workloads::models::ModelSpec small_llama(int layers) {
  workloads::models::ModelSpec m;
  m.name = "test";
  m.layers = layers;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn_hidden = 5632;
  m.vocab = 32000;
  m.seq_len = 2048;
  m.attention = workloads::models::AttentionKind::gqa;
  m.mlp = workloads::models::MlpKind::swiglu;
  m.norm = workloads::models::NormKind::rms_norm;
  m.position = workloads::models::PositionKind::rotary;
  return m;
}

struct Run {
  TrainingWorkload w;
  std::vector<sim::OpRecord> records;
  sim::Time end;
  BreakdownResult breakdown;
};

// Replays the step on `nodes` x 8 H100-like GPUs. `free_comm`: zero
// latency and unbounded bandwidth, collectives hold no SMs.
Run run(const TrainingConfig& c, bool mirror, bool free_comm = false, int gpus_per_node = 8) {
  Run out;
  GeneratorOptions o;
  o.mirror = mirror;
  o.gpus_per_node = gpus_per_node;
  out.w = generate_training(c, o);
  REQUIRE(workloads::validate(*out.w.graph).empty());
  sim::Simulator simulator(1);
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = c.gpus();
  cfg.fabric.gpus_per_node = gpus_per_node;
  cfg.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(free_comm ? 1e12 : 450);
  cfg.fabric.scale_up_latency = free_comm ? sim::Duration::zero() : sim::ns(int64_t{600});
  cfg.fabric.scale_out_bandwidth = sim::Bandwidth::gb_per_s(free_comm ? 1e12 : 50);
  cfg.fabric.scale_out_latency = free_comm ? sim::Duration::zero() : sim::us(int64_t{2});
  cfg.collective_sms = free_comm ? 0 : 16;
  models::cluster::ClusterModel cluster(simulator, cfg);
  SymmetricExecutor executor(cluster, out.w);
  sim::Recorder recorder(*out.w.graph, "", "test");
  sim::Replayer replayer(simulator, *out.w.graph, executor, recorder);
  replayer.start();
  simulator.run();
  const auto outcome = replayer.outcome();
  INFO(outcome.stuck);
  REQUIRE(outcome.complete);
  out.records = recorder.sorted_records();
  out.end = outcome.makespan;
  std::vector<int> observed;
  for (int r : out.w.simulated) {
    if (!out.w.graph->program(r).ops.empty()) observed.push_back(r);
  }
  // The ranks the mirrored run keeps are the representatives either way.
  GeneratorOptions mo;
  mo.gpus_per_node = gpus_per_node;
  std::vector<int> reps = generate_training(c, mo).simulated;
  out.breakdown = step_breakdown(*out.w.graph, out.w, out.records, reps, out.end,
                                  cfg.gpu.kernel_launch_latency);
  return out;
}

}  // namespace

TEST_CASE("training: mirrored ranks give the full simulation's step exactly",
          "[training][generator]") {
  // 16 GPUs on 2 nodes: TP 2 x CP 2 x PP 2 x DP 2, SP, ZeRO-1, 1F1B.
  TrainingConfig c;
  c.model = small_llama(4);
  c.parallel.tp = 2;
  c.parallel.cp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 2;
  c.parallel.sequence_parallel = true;
  c.batch = {8, 1};
  c.optimizer.zero_stage = 1;
  REQUIRE(!check_strategy(c, 16));
  const Run mirrored = run(c, true);
  const Run full = run(c, false);
  CHECK(mirrored.w.mirrored);
  CHECK(mirrored.w.simulated.size() == 2);
  CHECK(full.w.simulated.size() == 16);
  CHECK(mirrored.end == full.end);
  // Every op of the representatives ran at the same picoseconds.
  std::map<std::pair<int, uint32_t>, std::pair<sim::Time, sim::Time>> want;
  for (const auto& r : full.records) want[{r.rank, r.op}] = {r.start, r.end};
  size_t compared = 0;
  for (const auto& r : mirrored.records) {
    auto it = want.find({r.rank, r.op});
    REQUIRE(it != want.end());
    CHECK(it->second.first == r.start);
    CHECK(it->second.second == r.end);
    ++compared;
  }
  CHECK(compared > 500);
  for (size_t k = 0; k < kCategories; ++k) {
    CHECK(mirrored.breakdown.mean.seconds[k] == Approx(full.breakdown.mean.seconds[k]));
  }
}
