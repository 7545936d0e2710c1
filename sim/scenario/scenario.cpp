#include "sim/scenario/scenario.h"

#include <cmath>
#include <memory>

#include <nlohmann/json.hpp>

#include "models/gpu/power_spread.h"
#include "models/gpu/power_steady_state.h"
#include "models/gpu/sustained_clocks.h"
#include "sim/scenario/collective_workload_loader.h"
#ifndef GCSIM_NO_CHAKRA
#include "sim/scenario/chakra_workload_loader.h"
#endif
#include "sim/scenario/fabric_loader.h"
#include "sim/scenario/failures_loader.h"
#include "sim/report/format.h"
#include "sim/scenario/gpu_spec_loader.h"
#include "sim/scenario/graph_workload_loader.h"
#include "sim/scenario/host_profile_loader.h"
#include "sim/scenario/inference_workload_loader.h"
#include "sim/scenario/packet_config_loader.h"
#include "sim/scenario/straggler_loader.h"
#include "sim/scenario/training_workload_loader.h"
#include "sim/config/input_file.h"
#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using sim::config::ConfigSource;
using sim::config::Json;

const std::vector<Registered>& workload_kinds() {
  static const std::vector<Registered> kinds{
      {"graph", "ops written by hand: kernels, p2p, collectives, delays, allocations"},
      {"training", "one training step: model, batch, TP/SP, CP, EP, PP schedule, DP/ZeRO, recompute"},
#ifndef GCSIM_NO_CHAKRA
      {"chakra", "a Chakra execution trace (PREFIX.<rank>.et per GPU), as ASTRA-sim reads it"},
#endif
      {"collective", "one NCCL collective at one or more sizes, nccl-tests style (busbw table)"},
      {"inference", "LLM serving: vLLM V0/V1 scheduling, PagedAttention KV cache, replicas, disaggregation"},
  };
  return kinds;
}

const std::vector<Registered>& network_models() {
  static const std::vector<Registered> models{
      {"analytical", "alpha-beta over each transfer's path bottleneck (Hockney); no contention"},
      {"flow", "fluid max-min fair sharing of every link, incremental; ECMP collisions show"},
      {"packet", "store-and-forward packets, shared buffers, PFC, ECN/DCQCN, deadlock detection"},
  };
  return models;
}

namespace {

std::vector<std::string> names_of(const std::vector<Registered>& r) {
  std::vector<std::string> v;
  for (const auto& x : r) v.push_back(x.name);
  return v;
}

// One activity of a state file: [tensor, vector, hbm, hbm_unshared], time
// fractions of the whole GPU (power_model.h). Tensor and vector shares of
// SM-time lie in [0, 1]; HBM demand over the peak may exceed 1 (kernels and
// collectives beside each other ask for more than the peak), so it is only
// finite and non-negative, and the traffic beside no arithmetic is part of it.
models::gpu::Activity state_activity(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 4) {
    throw std::invalid_argument(where + ": expected [tensor, vector, hbm, hbm_unshared]");
  }
  double v[4];
  for (size_t i = 0; i < 4; ++i) {
    if (!j[i].is_number()) throw std::invalid_argument(where + "[" + std::to_string(i) + "]: expected a number");
    v[i] = j[i].get<double>();
    if (!std::isfinite(v[i]) || v[i] < 0.0) {
      throw std::invalid_argument(where + "[" + std::to_string(i) + "]: must be finite and non-negative");
    }
  }
  constexpr double kRound = 1e-9;  // sums of per-wave shares round a little above 1
  if (v[0] > 1.0 + kRound || v[1] > 1.0 + kRound) {
    throw std::invalid_argument(where + ": tensor and vector shares of SM-time lie in [0, 1]");
  }
  if (v[3] > v[2] * (1.0 + kRound) + kRound) {
    throw std::invalid_argument(where + ": hbm_unshared is part of hbm, so it cannot exceed it");
  }
  return models::gpu::Activity{v[0], v[1], v[2], v[3]};
}

// cluster.clock_start: auto | rest | steady, or the path of a state file
// written by gcsim export (clock_start_file()), one state per rank.
void read_clock_start(ClusterConfig& cluster, ConfigReader& c) {
  const char* doc =
      "where each GPU's power governor starts under cluster.clocks: model: rest, steady (the "
      "periodic steady state of the workload repeated back to back, found by warm-up passes "
      "before the run; for serving, each step's own, as it runs), auto (steady for training, rest "
      "otherwise), or the path of a state file written by gcsim export (the exported step's "
      "start; not for serving)";
  YAML::Node n = c.raw("clock_start", doc);
  cluster.clock_start_line = c.line_of("clock_start");
  if (!n.IsDefined() || n.IsNull() ||
      (n.IsScalar() && (n.Scalar() == "auto" || n.Scalar() == "rest" || n.Scalar() == "steady"))) {
    cluster.clock_start = c.get_choice("clock_start", {"auto", "rest", "steady"}, std::string("auto"), doc);
    return;
  }
  if (!n.IsScalar()) c.fail("clock_start", "expected auto, rest, steady or the path of a state file");
  const std::string file = c.get_path("clock_start", std::nullopt, doc);
  cluster.clock_start = file;
  std::string text, error;
  if (!sim::config::read_input_file(file, sim::config::kMaxDataBytes, "clock-state", text, error)) {
    c.fail("clock_start", "not auto, rest or steady, and not a readable state file '" + file + "': " + error);
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || !j.contains("ranks") || !j["ranks"].is_array()) {
      throw std::invalid_argument(file + ": expected an object with a list `ranks` (gcsim export writes it)");
    }
    if (j.contains("gpu") && j["gpu"] != cluster.gpu.name) {
      throw std::invalid_argument(file + ": recorded on " + j["gpu"].dump() + ", the cluster runs " +
                                  cluster.gpu.name);
    }
    const auto& ranks = j["ranks"];
    if (ranks.size() != static_cast<size_t>(cluster.total_gpus())) {
      throw std::invalid_argument(file + ": " + std::to_string(ranks.size()) + " ranks, the cluster has " +
                                  std::to_string(cluster.total_gpus()) + " GPUs");
    }
    for (size_t r = 0; r < ranks.size(); ++r) {
      const std::string where = file + ": ranks[" + std::to_string(r) + "]";
      if (!ranks[r].is_object() || !ranks[r].contains("slow") || !ranks[r].contains("fast")) {
        throw std::invalid_argument(where + ": expected {slow: [...], fast: [...]}");
      }
      cluster.clock_rank_start.push_back(models::gpu::GovernorState{
          state_activity(ranks[r]["slow"], where + ".slow"), state_activity(ranks[r]["fast"], where + ".fast")});
    }
  } catch (const nlohmann::json::exception& e) {
    c.fail("clock_start", file + ": not valid JSON: " + e.what());
  } catch (const std::invalid_argument& e) {
    c.fail("clock_start", e.what());
  }
}

ClusterConfig read_cluster(ConfigReader& c, std::vector<std::string>& notes,
                           topologies::TopologySpec& topology) {
  ClusterConfig cluster;
  cluster.gpu = read_gpu(c);
  constexpr int64_t kMaxGpus = 1'000'000;  // beyond this simulator's design
  const int64_t nodes = c.get_int_in("nodes", 1, "number of nodes", 1);
  const int64_t gpus_per_node = c.get_int_in("gpus_per_node", 8, "GPUs per node", 1);
  // Each bound first, so that the product cannot overflow.
  if (nodes > kMaxGpus || gpus_per_node > kMaxGpus || nodes * gpus_per_node > kMaxGpus) {
    c.fail(nodes > gpus_per_node ? "nodes" : "gpus_per_node",
           "more than a million GPUs is beyond this simulator's design");
  }
  cluster.nodes = static_cast<int>(nodes);
  cluster.gpus_per_node = static_cast<int>(gpus_per_node);
  // read_gpu applied the preset's default profile when this key is absent;
  // recording its name keeps `gcsim check`'s resolved config equal to the run.
  const std::string preset_profile =
      cluster.gpu.calibration_applied.empty() ? std::string() : cluster.gpu.calibration;
  cluster.calibration = c.get_string(
      "calibration", preset_profile,
      "calibration profile replacing the preset's efficiencies (default: the preset's own "
      "profile; none: the preset's rounded efficiencies)");
  if (!cluster.calibration.empty() && cluster.calibration != preset_profile) {
    apply_calibration_profile(cluster.calibration, cluster.gpu, c);
  }

  cluster.clocks = c.get_choice(
      "clocks", {"model", "sustained", "rested", "auto"}, std::string("auto"),
      "SM clocks: model (the power cap's governor sets each kernel's clock from the GPU's "
      "averaged activity), sustained (tensor efficiencies x the GPU's "
      "sustained_tensor_fraction), rested (isolated kernels), auto (sustained for training; "
      "the model, from rest, for every other workload, rested where the GPU has no power model)");
  read_clock_start(cluster, c);
  cluster.launch_queues = c.get_choice(
      "launch_queues", {"auto", "one", "many"}, std::string("auto"),
      "host-to-GPU launch queues: one (CUDA_DEVICE_MAX_CONNECTIONS=1: kernels and NCCL kernels "
      "take SMs in issue order), many (CUDA's default: a collective issued with kernels on "
      "other streams gets its SMs after theirs), auto (one for workload.framework: megatron "
      "training, which sets it; many otherwise)");
  topology = read_topology(c, cluster);
  cluster.stragglers = read_stragglers(c, cluster.nodes, cluster.gpus_per_node);
  cluster.power_spread = c.get_double(
      "power_spread", 0.0,
      "chip-to-chip spread of the GPUs' arithmetic power, sigma as a fraction (0..0.2; 0: "
      "identical GPUs): under the power cap each GPU settles at its own SM clock, and "
      "data-parallel ranks wait for the slowest (needs cluster.clocks: model; training only)");
  cluster.power_spread_line = c.line_of("power_spread");
  if (!(cluster.power_spread >= 0.0 && cluster.power_spread <= models::gpu::kMaxPowerSpread)) {
    c.fail("power_spread", "must be in [0, 0.2] (a fraction: 0.02 is a 2% spread of power between chips)");
  }
  cluster.host = read_host_profile(c);
  if (any_slow(cluster.stragglers)) {
    notes.push_back("stragglers: " + describe_stragglers(cluster.stragglers) +
                    "; their kernels run at that speed in the simulation, so the slowdown "
                    "follows the parallel strategy");
  }
  return cluster;
}

}  // namespace

namespace {

// Under `model` the governor moves the clock kernel by kernel. `auto`, the
// default, takes the model for every workload but training where the GPU
// has power parameters, the fixed sustained fraction for training (and
// rested clocks for the rest where it has none). Where the governors start (cluster.clock_start): a training step,
// one of many identical steps, from the periodic steady state of the step
// repeated back to back (warm-up passes before the run, sim/cli/
// clock_warmup.h; the first starts from back-to-back GEMMs' steady state);
// everything else from rest; a Chakra replay of an exported step from the
// states the export recorded. A start other than rest derates the
// efficiencies to the model's steady GEMM speed (as `sustained` does) and
// each kernel stretches from there, so a step and its replay build the
// same kernels.
void apply_clocks(Scenario& s) {
  ClusterConfig& c = s.cluster;
  const bool training = s.workload_kind == "training";
  const bool power = c.gpu.power.enabled();
  if (c.clocks == "model" && !power) {
    s.notes.push_back("cluster.clocks: model needs the GPU's power parameters (`power:` in the "
                      "preset); " + c.gpu.name + " has none, so clocks follow cluster.clocks: auto");
  }
  // `auto` keeps the fixed sustained fraction for training: under the model
  // (from the step's periodic state) two of the measured H200 steps miss
  // their bars (README, "Clocks from a power model").
  const bool model = (c.clocks == "model" || (c.clocks == "auto" && !training)) && power;
  if (c.power_spread > 0.0) {
    const char* key = "cluster.power_spread";
    if (!training) {
      throw sim::config::ConfigError(s.config_path, c.power_spread_line, key,
                                     "not modelled for " + s.workload_kind + " workloads (training only)");
    }
    if (!model) {
      throw sim::config::ConfigError(s.config_path, c.power_spread_line, key,
                                     "acts through the power cap's clock governor: set cluster.clocks: "
                                     "model (and a GPU preset with power parameters), or drop it");
    }
  }
  if (!model && c.clock_start != "auto" && c.clock_start != "rest") {
    s.notes.push_back("cluster.clock_start has no effect without the clock model (cluster.clocks: " +
                      c.clocks + (power ? "" : ", and " + c.gpu.name + " has no power parameters") + ")");
    c.clock_rank_start.clear();
  }
  if (model) {
    namespace g = models::gpu;
    const std::string start = c.clock_start == "auto" ? (training ? "steady" : "rest") : c.clock_start;
    const bool serving = s.workload_kind == "inference";
    if (serving && start != "rest" && start != "steady") {
      throw sim::config::ConfigError(s.config_path, c.clock_start_line, "cluster.clock_start",
                        "a state file holds an exported training step's start; serving's governors "
                        "start from rest or, steady, each step from its own periodic state: use rest, "
                        "steady or auto");
    }
    c.clock_model = true;
    const g::SteadyState gemm = g::steady_state(c.gpu, g::reference_gemm(c.gpu));
    c.gpu.sustained_tensor_fraction = gemm.speed;
    const std::string mhz = fmt("%.0f MHz", gemm.clock * c.gpu.sm_clock_ghz * 1e3);
    // Serving's steps stretch their kernels from the spec's rested
    // efficiencies (IterationCost::cost(shape, clock)): never derated.
    if (start != "rest" && !serving) c.gpu = g::at_sustained_clocks(c.gpu);
    if (start == "steady") {
      c.clock_model_start = g::GovernorState{gemm.activity, gemm.activity};
      c.clock_settle = !serving;  // serving finds each step's periodic state as it runs
    }
    const g::PowerParams& p = c.gpu.power;
    std::string fast;  // the fast loop, and its cap where it is not the board cap
    if (p.fast_loop()) {
      fast = fmt(" and %.0f ms", p.fast_time_constant.seconds() * 1e3);
      if (p.fast_cap_w != p.cap_w) fast += fmt(" (at %.0f W)", p.fast_cap_w);
    }
    const std::string from = start == "rest"     ? ", from rest"
                             : start == "steady" ? ", from the workload's periodic steady state"
                                                 : ", from the states recorded in " + start;
    if (serving) {
      s.notes.push_back("serving steps at SM clocks from the power model (cap " + fmt("%.0f W", p.cap_w) +
                        ", averaged over " + fmt("%.0f ms", p.time_constant.seconds() * 1e3) + fast +
                        "): one governor per replica gives each step its clock at the step's start, "
                        "sees the step's mean tensor / HBM activity for its length and nothing between "
                        "steps" + (start == "steady" ? std::string(", every step from its own periodic state "
                                                                   "(the step repeated back to back)")
                                                     : std::string(", from rest")) +
                        "; back-to-back bf16 GEMMs settle at " + mhz + ", x" + fmt("%.3f", gemm.speed) +
                        " of the rested rate (cluster.clocks: sustained | rested overrides)");
      return;
    }
    s.notes.push_back("SM clocks from the power model (cap " + fmt("%.0f W", p.cap_w) + ", averaged over " +
                      fmt("%.0f ms", p.time_constant.seconds() * 1e3) + fast +
                      "): back-to-back bf16 GEMMs settle at " + mhz + ", x" + fmt("%.3f", gemm.speed) +
                      " of the rested rate; each kernel runs at the clock its GPU's averaged "
                      "activity allows" + from + " (cluster.clocks: sustained | rested overrides)");
    return;
  }
  const bool sustained = c.clocks == "sustained" || (c.clocks != "rested" && training);
  if (!sustained || c.gpu.sustained_tensor_fraction == 1.0) return;
  c.gpu = models::gpu::at_sustained_clocks(c.gpu);
  s.notes.push_back("tensor-core work at sustained clocks: x" + fmt("%.3f", c.gpu.sustained_tensor_fraction) +
                    " of the rested rate (power cap; cluster.clocks: rested turns it off)");
}

// network.interference: on by default with the sensitivities fitted on
// 2x H200 (models/gpu/interference.h), each inside its physical range.
void read_interference(ConfigReader& r, models::gpu::InterferenceParams& p) {
  p.enabled = r.get_bool("enabled", true,
                         "an SM-holding collective streams HBM beside the kernels and both slow");
  auto sensitivity = [&r](const char* key, double fallback, const char* doc) {
    const double v = r.get_double(key, fallback, doc);
    if (!(v >= models::gpu::kMinSensitivity && v <= models::gpu::kMaxSensitivity)) {
      r.fail(key, "must lie in [0, 1] (1: a full load doubles the time), got " + std::to_string(v));
    }
    return v;
  };
  p.kernel_sensitivity = sensitivity(
      "kernel_sensitivity", p.kernel_sensitivity,
      "a compute tile's arithmetic grows by this x the collectives' share of HBM bandwidth");
  p.collective_sensitivity = sensitivity(
      "collective_sensitivity", p.collective_sensitivity,
      "a collective's data movement grows by this x the fraction of SMs running compute beside it");
  // 0.05 without the one case whose gcsim schedule phase-locks; 0 leaves
  // the SDPA kernels 1-3% fast (models/gpu/interference.h).
  p.attention_sensitivity = sensitivity(
      "attention_sensitivity", p.attention_sensitivity,
      "kernel_sensitivity for fused attention kernels (operands on chip)");
  p.memory_sensitivity = sensitivity(
      "memory_sensitivity", p.memory_sensitivity,
      "kernel_sensitivity for memory-bound kernels (elementwise, norms, copies)");
  p.staging_in_hbm = r.get_double(
      "staging_in_hbm", p.staging_in_hbm,
      "fraction of NCCL's staging traffic (FIFO written and read back) that reaches HBM, not L2");
  if (!(p.staging_in_hbm >= 0.0 && p.staging_in_hbm <= 1.0)) {
    r.fail("staging_in_hbm", "must lie in [0, 1], got " + std::to_string(p.staging_in_hbm));
  }
}

}  // namespace

Scenario load_scenario(const std::string& path, const LoadOptions& options) {
  Scenario s;
  s.config_path = path;
  s.source = std::make_shared<ConfigSource>();
  YAML::Node root = sim::config::load_yaml_file(path, options.overrides, *s.source);
  s.resolved = Json::object();
  ConfigReader top(root, "", s.source, &s.resolved);
  // A study given where a config goes: say which command reads it, rather
  // than "unknown key 'base'".
  if (!top.has("workload") && !top.has("cluster") && (top.has("axes") || top.has("base"))) {
    top.fail(top.has("base") ? "base" : "axes",
             "this is a study (base, axes), not a config: use `gcsim sweep " + path + "`");
  }

  ConfigReader cluster = top.child("cluster", "the machines", true);
  s.cluster = read_cluster(cluster, s.notes, s.topology);
  cluster.finish();

  ConfigReader net = top.child("network", "how communication is simulated");
  s.network.model = net.get_choice("model", names_of(network_models()), std::string("analytical"),
                                   "network model");
  s.network.collective_sms = static_cast<int>(
      net.get_int_in("collective_sms", 24,
                     "SMs a collective kernel holds per GPU (NCCL channels; 24 measured for NCCL "
                     "2.28 ring on 2x H200)",
                     0, s.cluster.gpu.sm_count - 1));
  s.network.holds_from_issue = net.get_bool(
      "holds_from_issue", true,
      "each rank's NCCL kernel holds its SMs from its own issue of the op (send/recv too), "
      "not from the meeting");
  const std::string routing = net.get_choice(
      "routing", {"ecmp", "spray", "adaptive"}, std::string("ecmp"),
      "path choice: ecmp (hash per flow), spray (per packet round robin), adaptive (least-loaded "
      "next hop)");
  s.network.routing = routing == "spray"      ? models::network::RoutingPolicy::spray
                      : routing == "adaptive" ? models::network::RoutingPolicy::adaptive
                                              : models::network::RoutingPolicy::ecmp;
  s.network.packet = read_packet_config(net);
  ConfigReader interference = net.child(
      "interference",
      "how an overlapped collective and the kernels beside it slow each other (its HBM traffic, "
      "memory-system contention; models/gpu/interference.h)");
  read_interference(interference, s.network.interference);
  interference.finish();
  s.faults = read_faults(net, s.topology);
  net.finish();

  ConfigReader sim_cfg = top.child("simulation", "engine settings");
  const int64_t seed = sim_cfg.get_int("seed", 1, "random seed (ECMP hashing, failures)");
  if (seed < 0) sim_cfg.fail("seed", "must not be negative");
  s.seed = options.seed.value_or(static_cast<uint64_t>(seed));
  s.resolved["simulation"]["seed"] = s.seed;
  // Long-horizon keys (duration, seeds) exist only with failures.
  FailureHorizon horizon;
  if (top.has("failures")) horizon = read_failure_horizon(sim_cfg);
  sim_cfg.finish();

  ConfigReader workload = top.child("workload", "what runs on the cluster", true);
  s.workload_kind =
      workload.get_choice("kind", names_of(workload_kinds()), std::nullopt, "workload kind");
  apply_clocks(s);
  if (s.workload_kind == "graph") {
    s.graph = load_graph_workload(workload, s.cluster.total_gpus(), s.cluster.gpu, options.limits,
                                  s.cluster.gpus_per_node, s.seed, &s.moe_layers, s.cluster.host);
  } else if (s.workload_kind == "training") {
    s.training = load_training_workload(
        workload, s.cluster.total_gpus(), s.cluster.gpus_per_node, s.cluster.gpu, s.notes,
        options.limits, any_slow(s.cluster.stragglers) ? describe_stragglers(s.cluster.stragglers) : "",
        slow_ranks(s.cluster.stragglers), options.strategy_searched, s.seed,
        options.balanced_routing, s.cluster.power_spread > 0.0);
    s.graph = std::move(s.training->workload.graph);
#ifndef GCSIM_NO_CHAKRA
  } else if (s.workload_kind == "chakra") {
    s.graph = load_chakra_workload(workload, s.cluster.total_gpus(), s.cluster.gpu, s.notes,
                                   options.limits);
#endif
  } else if (s.workload_kind == "inference") {
    if (any_slow(s.cluster.stragglers)) {
      cluster.fail("stragglers", "not modelled for inference workloads: the serving model costs "
                                 "every replica's steps on one GPU spec");
    }
    s.inference = load_inference_workload(workload, s.cluster, s.notes, options.limits);
    s.estimate = s.inference->estimate;
  } else if (s.workload_kind == "collective") {
    auto c = std::make_shared<CollectiveWorkload>();
    s.graph = load_collective_workload(workload, s.cluster.total_gpus(), s.cluster.gpus_per_node,
                                       s.cluster.gpu, *c);
    add_resolved(*c, s.resolved["workload"]);
    s.collective = std::move(c);
  }
  workload.finish();
  if (s.graph) {
    double stored = 0;
    for (size_t p = 0; p < s.graph->program_count(); ++p) {
      stored += static_cast<double>(s.graph->program_by_id(static_cast<uint32_t>(p)).ops.size());
    }
    s.estimate = ResourceEstimate::from_ops(stored, static_cast<double>(s.graph->total_ops()));
  }
  if (top.has("failures") || top.has("checkpoint")) {
    s.failures = load_failures(top, s.cluster, s.training.get(), horizon, s.seed);
  }
  top.finish();
  return s;
}

}  // namespace gcsim::cli
