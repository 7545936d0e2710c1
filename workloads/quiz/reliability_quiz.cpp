// Reliability quiz: the mean time between failures of an N-GPU job from the
// Llama 3 interruption taxonomy (Dubey et al. 2024, Table 5: 419 unexpected
// interruptions in 54 days on 16,384 H100), the cost of one synchronous
// checkpoint, Young's and Daly's intervals (Young 1974, Daly 2006), and the
// useful fraction of wall time Daly's model predicts. The simulator checks
// them by running the job's failures over a week with several seeds.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/storage/checkpoint_storage.h"
#include "workloads/failures/checkpoint_interval.h"
#include "workloads/failures/component_failures.h"
#include "workloads/models/model_formulas.h"
#include "workloads/quiz/quiz.h"
#include "workloads/quiz/quiz_pick.h"

namespace gcsim::workloads::quiz {

namespace wf = workloads::failures;
namespace st = gcsim::models::storage;

Quiz make_reliability_quiz(uint64_t seed, const PresetBook& presets) {
  sim::RandomStream r = quiz_stream(seed, "reliability");
  // Dense models whose step runs quickly under the mirrored shortcut.
  const std::string model_name = pick(r, std::vector<std::string>{"llama3-8b", "llama3-70b"});
  const auto& model = presets.models.at(model_name);
  const int gpus = pick(r, std::vector<int>{1024, 2048, 4096, 8192, 16384});
  const double per_node_gbs = pick(r, std::vector<double>{5, 10, 25});
  const double aggregate_gbs = pick(r, std::vector<double>{100, 250, 1000});
  const int nodes = gpus / 8;
  // A radix-64 2-tier fat-tree reaches 64 x 32 = 2048 hosts; beyond, 3 tiers.
  const int tiers = gpus <= 2048 ? 2 : 3;
  constexpr double kDetection = 120, kRestart = 600;  // s: the failures defaults
  constexpr int kDays = 7, kSeeds = 8;

  // Job failure rate: every component class's count times its per-component
  // rate (workloads/failures/component_failures.h).
  const wf::FailureRates rates = wf::llama3_rates();
  const wf::ComponentCounts counts = wf::cluster_component_counts(nodes, 8, tiers, true);
  const double per_hour = counts.total_rate_per_hour(rates);
  const double mtbf_h = 1.0 / per_hour;
  const double M = mtbf_h * 3600.0;  // s

  // One checkpoint: weights (2 B) + fp32 master and Adam moments (12 B) per
  // parameter, sharded over every GPU, written synchronously.
  const double params = workloads::models::count_params(model).total;
  st::StorageConfig sc;
  sc.per_node = sim::Bandwidth::gb_per_s(per_node_gbs);
  sc.aggregate = sim::Bandwidth::gb_per_s(aggregate_gbs);
  const st::CheckpointShape shape{params * 14.0 / gpus, 8, nodes};
  const st::CheckpointCost cost = st::CheckpointStorage(sc).cost(shape, st::CheckpointMode::sync);
  const double delta = cost.blocking.seconds();
  const double R = kDetection + kRestart + cost.load.seconds();
  const double young = wf::young_interval(delta, M);
  const double daly = wf::daly_interval(delta, M);
  const double useful = wf::daly_useful_fraction(daly, delta, R, M);
  const double interruptions = kDays * 86400.0 / M;

  Quiz q;
  q.topic = Topic::reliability;
  q.seed = seed;
  q.title = "Checkpointing " + model_name + " on " + std::to_string(gpus) + " GPUs";
  q.question =
      "Train " + model_name + " (" + fmt("%.3g", params / 1e9) + "B parameters, mixed-precision "
      "Adam) on " + std::to_string(gpus) + " H100 in " + std::to_string(nodes) +
      " nodes of 8, a " + std::to_string(tiers) +
      "-tier fat-tree. Components fail at the rates of the Llama 3 405B run (419 unexpected "
      "interruptions in 54 days on 16,384 GPUs). Checkpoints are synchronous: each GPU copies "
      "its shard to host at 25 GB/s, then all nodes write to storage at " +
      fmt("%.0f GB/s", per_node_gbs) + " per node (" + fmt("%.0f GB/s", aggregate_gbs) + " for the whole file system). A "
      "failure costs 2 min detection + 10 min restart + reloading the checkpoint.\n\n"
      "(a) The job's mean time between failures, and interruptions in a week.\n"
      "(b) The time one checkpoint stops training.\n"
      "(c) Young's and Daly's checkpoint intervals.\n"
      "(d) The fraction of wall time spent on useful training at Daly's interval.\n";

  q.steps.push_back(
      "Failure rate scales with the hardware: Llama 3 saw 419 / 1296 h = 0.323 per hour on "
      "16,384 GPUs; per component class count x rate (GPU, HBM, NIC per GPU; links per GPU per "
      "tier; host and software per node) sums to " + fmt("%.4f", per_hour) +
      " per hour here, so M = " + fmt("%.2f h", mtbf_h) + " (about 3.09 h x 16384/" +
      std::to_string(gpus) + " = " + fmt("%.2f h", 3.09 * 16384.0 / gpus) + ").");
  q.steps.push_back("Interruptions in 7 days = 168 h / M = " + fmt("%.1f", interruptions) + ".");
  q.steps.push_back(
      "Checkpoint bytes per GPU = 14 P / N = 14 x " + num(params) + " / " + std::to_string(gpus) +
      " = " + fmt("%.3g GiB", shape.bytes_per_gpu / 1073741824.0) + "; delta = bytes/25 GB/s + 14 P / min(" +
      fmt("%.0f GB/s", aggregate_gbs) + ", nodes x " + fmt("%.0f GB/s", per_node_gbs) + ") = " + fmt("%.3g s", delta) + ".");
  q.steps.push_back("Young: tau = sqrt(2 delta M) = sqrt(2 x " + fmt("%.3g", delta) + " x " +
                    fmt("%.0f", M) + ") = " + fmt("%.0f s", young) + " = " +
                    fmt("%.1f min", young / 60) + ".");
  q.steps.push_back("Daly: tau = sqrt(2 delta M)[1 + sqrt(delta/2M)/3 + (delta/2M)/9] - delta = " +
                    fmt("%.0f s", daly) + " = " + fmt("%.1f min", daly / 60) + ".");
  q.steps.push_back(
      "Recovery R = 120 s + 600 s + load " + fmt("%.3g s", cost.load.seconds()) + " = " +
      fmt("%.0f s", R) + "; Daly's expected wall time per segment M e^(R/M)(e^((tau+delta)/M) - 1) "
      "gives useful fraction tau / that = " + fmt("%.4f", useful) + ".");

  q.verifications.push_back(
      {"failures",
       "cluster:\n  gpu: h100-sxm\n  nodes: " + std::to_string(nodes) +
           "\n  gpus_per_node: 8\n  scale_up: {kind: nvswitch}\n"
           "  scale_out: {topology: fat-tree, tiers: " + std::to_string(tiers) +
           ", nic_bandwidth: 400Gbps}\nnetwork: {model: analytical}\n"
           "workload:\n  kind: training\n  model: {preset: " + model_name + "}\n"
           "  batch: {global: " + std::to_string(gpus / 8) + ", micro: 1}\n"
           "  parallelism: {tp: 8, pp: 1, dp: " + std::to_string(gpus / 8) + "}\n"
           "  recompute: full\n  optimizer: {kind: adam, zero_stage: 1}\n"
           "failures:\n  enabled: true\n  rates: {preset: llama3}\n  detection: 2min\n"
           "  recovery: {policy: restart, restart: 10min}\n"
           "checkpoint:\n  interval: " + fmt("%.0f", daly) + "s\n  mode: sync\n"
           "  storage: {bandwidth: " + fmt("%.0f", aggregate_gbs) + "GB/s, per_node: " + fmt("%.0f", per_node_gbs) + "GB/s}\n"
           "simulation: {duration: " + std::to_string(kDays) + "d, seeds: " +
           std::to_string(kSeeds) + "}\n"});

  auto add = [&](const char* key, const char* what, const char* unit, double est, double tol,
                 const char* why, const char* ptr, double scale, double sim_tol) {
    add_quantity(q, key, what, unit, est, tol, why, 0, ptr, scale, sim_tol);
  };
  const char* why_mtbf =
      "10%: scaling Llama 3's 3.09 h by GPUs instead of counting components per tier differs by "
      "a few percent";
  // Poisson: the mean over kSeeds runs of a count with mean n has relative
  // standard deviation 1/sqrt(n kSeeds); three of them cover 99.7%.
  const double noise = std::max(0.15, 3.0 / std::sqrt(interruptions * kSeeds));
  add("job_mtbf_h", "job mean time between failures", "h", mtbf_h, 0.10, why_mtbf,
      "/failures/job_mtbf_s", 1.0 / 3600, 0.10);
  add("interruptions_per_week", "interruptions in 7 days", "count", interruptions, 0.10, why_mtbf,
      "/failures/interruptions", 1.0, noise);
  add("checkpoint_cost_s", "time one synchronous checkpoint blocks training", "s", delta, 0.10,
      "10%: two transfers of known size; only rounding and GB vs GiB are left",
      "/failures/checkpoint_cost_s", 1.0, 0.02);
  add("young_interval_min", "Young's checkpoint interval", "min", young / 60, 0.10,
      "10%: a square root halves the error of its inputs", "/failures/young_interval_s", 1.0 / 60,
      0.10);
  add("daly_interval_min", "Daly's checkpoint interval", "min", daly / 60, 0.10,
      "10%: as Young's, plus Daly's small correction terms", "/failures/daly_interval_s", 1.0 / 60,
      0.10);
  add("useful_fraction", "useful fraction of wall time at Daly's interval", "fraction", useful,
      0.02,
      "2% of the fraction: the overheads are a few percent, so a wider band would pass any guess",
      "/failures/effective_training_time_fraction/mean", 1.0, 0.03);
  return q;
}

}  // namespace gcsim::workloads::quiz
