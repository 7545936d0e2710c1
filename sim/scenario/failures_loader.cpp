#include "sim/scenario/failures_loader.h"

#include <algorithm>
#include <cmath>

#include "sim/report/format.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/training_workload_loader.h"
#include "sim/config/unit_parse.h"
#include "workloads/failures/failure_study.h"
#include "workloads/models/model_formulas.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
namespace wf = workloads::failures;

namespace {

void trim(std::string& s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

sim::Duration read_positive_duration(ConfigReader& c, const std::string& key,
                                     std::optional<std::string> fallback, const char* doc) {
  const std::string text = c.get_string(key, fallback, doc);
  std::string err;
  const auto d = sim::parse_duration(text, &err);
  if (!d) c.fail(key, err);
  if (*d <= sim::Duration::zero()) c.fail(key, "must be positive, got '" + text + "'");
  return *d;
}

sim::Duration read_nonnegative_duration(ConfigReader& c, const std::string& key,
                                        const std::string& fallback, const char* doc) {
  const std::string text = c.get_string(key, fallback, doc);
  std::string err;
  const auto d = sim::parse_duration(text, &err);
  if (!d) c.fail(key, err);
  if (*d < sim::Duration::zero()) c.fail(key, "must not be negative, got '" + text + "'");
  return *d;
}

void read_rates(ConfigReader& r, FailuresSetup& f) {
  f.preset = r.get_choice("preset", {"llama3", "none"}, std::string("none"),
                          "llama3: per-class rates from Llama 3's 419 interruptions in 54 days "
                          "on 16,384 H100 (Dubey et al. 2024, Table 5)");
  if (f.preset == "llama3") {
    f.rates = wf::llama3_rates();
  } else {
    f.preset.clear();
  }
  for (wf::ComponentClass c : wf::kAllComponentClasses) {
    const std::string name = wf::component_class_name(c);
    r.allow(name);  // known even when absent, so a misspelling gets a suggestion
    if (!r.has(name)) continue;
    const std::string text =
        r.get_string(name, std::nullopt,
                     "failures per component, as COUNT/DURATION (1/3692h: one per 3,692 h)");
    std::string err;
    const auto rate = parse_failure_rate(text, &err);
    if (!rate) r.fail(name, err);
    f.rates.per_hour[c] = *rate;
  }
  const std::string lifetime = r.get_choice("lifetime", {"exponential", "weibull"},
                                            std::string("exponential"),
                                            "lifetime distribution of every component");
  f.rates.lifetime = lifetime == "weibull" ? wf::Lifetime::weibull : wf::Lifetime::exponential;
  f.rates.weibull_shape = r.get_double("weibull_shape", 1.0,
                                       "Weibull shape k in [0.1, 10] (same mean as the rate): "
                                       "<1 infant mortality, >1 wear-out");
  // Below 0.1 the scale 1 / Gamma(1 + 1/k) underflows toward 0 (k = 1e-9
  // printed "-nan ps"); measured fleets lie in 0.5-1.5 (Schroeder & Gibson).
  if (!(f.rates.weibull_shape >= kMinWeibullShape && f.rates.weibull_shape <= kMaxWeibullShape)) {
    r.fail("weibull_shape", "must lie in [0.1, 10], got " + fmt("%g", f.rates.weibull_shape));
  }
}

void read_recovery(ConfigReader& f_cfg, FailuresSetup& f) {
  f.recovery.detection = read_nonnegative_duration(
      f_cfg, "detection", "2min", "from a failure until the job notices (NCCL timeout, health check)");
  ConfigReader r = f_cfg.child("recovery", "what the job does after a failure");
  const std::string policy = r.get_choice(
      "policy", {"restart", "replace", "resubmit"}, std::string("restart"),
      "restart: same nodes; replace: swap in a spare node; resubmit: requeue the whole job");
  wf::parse_recovery_policy(policy, f.recovery.policy);
  f.recovery.restart = read_nonnegative_duration(r, "restart", "10min",
                                                 "relaunch: process start, NCCL init, warm-up");
  f.recovery.queue_wait = read_nonnegative_duration(r, "queue_wait", "30min",
                                                    "resubmit: time in the scheduler's queue");
  f.recovery.repair = read_nonnegative_duration(
      r, "repair", "72h", "replace: a failed node's time away before it rejoins the spare pool");
  const int64_t spares = r.get_int("spares", 16, "replace: spare nodes in the pool");
  if (spares < 0) r.fail("spares", "must not be negative");
  if (spares > 1'000'000) r.fail("spares", "more than a million spare nodes is not a cluster");
  f.recovery.spares = static_cast<int>(spares);
  r.finish();
}

// A checkpoint's stages (snapshot to host, write to storage, copy to peers)
// must each fit the simulator's clock: a bandwidth typed in the wrong unit
// (1B/s) is named here, with the bandwidth it would need, rather than
// surfacing as a time overflow blamed on simulation.duration.
void check_checkpoint_stages(ConfigReader& st, const FailuresSetup& f) {
  const double limit_s = kMaxSimulatedDays * 86400.0;
  const auto& cfg = f.storage;
  const double clients = cfg.per_node.bytes_per_s() * std::max(f.shape.nodes, 1);
  struct Stage {
    const char* key;
    const char* what;
    double bytes;
    double bytes_per_s;
  };
  std::vector<Stage> stages{
      {"device_to_host", "each GPU's shard to host memory", f.shape.bytes_per_gpu,
       cfg.device_to_host.bytes_per_s()},
      {cfg.aggregate.bytes_per_s() <= clients ? "bandwidth" : "per_node",
       "the whole checkpoint to storage", f.shape.total_bytes(),
       std::min(cfg.aggregate.bytes_per_s(), clients)}};
  if (f.mode == models::storage::CheckpointMode::in_memory) {
    stages.push_back({"peer_network", "a node's shard to its peers",
                      f.shape.bytes_per_node() * cfg.replicas, cfg.peer_network.bytes_per_s()});
  }
  double total_s = 0;
  const Stage* slowest = nullptr;
  for (const Stage& s : stages) {
    const double t = s.bytes / s.bytes_per_s;
    total_s += t;
    if (!slowest || t > slowest->bytes / slowest->bytes_per_s) slowest = &s;
  }
  if (total_s < limit_s) return;
  const double t = slowest->bytes / slowest->bytes_per_s;
  st.fail(slowest->key,
          std::string("moving ") + slowest->what + " (" + human_bytes(slowest->bytes) + ") at " +
              human_bandwidth(slowest->bytes_per_s) +
              " takes " + fmt("%.3g days", t / 86400.0) +
              ", beyond the simulator's 106-day clock; it needs at least " +
              human_bandwidth(slowest->bytes / limit_s) +
              " (a bandwidth in the wrong unit? GB/s is bytes, Gbps bits)");
}

void read_checkpoint(ConfigReader& top, const ClusterConfig& cluster, const TrainingRun* training,
                     FailuresSetup& f) {
  ConfigReader c = top.child("checkpoint", "how often and how the training state is saved");
  const std::string interval = c.get_string(
      "interval", std::string("30min"),
      "training time between checkpoints, or `search` for the interval that maximises effective "
      "training time");
  if (interval == "search" || interval == "auto") {
    f.interval.reset();
  } else {
    std::string err;
    const auto d = sim::parse_duration(interval, &err);
    if (!d) c.fail("interval", err + " (or `search`)");
    if (*d <= sim::Duration::zero()) c.fail("interval", "must be positive, got '" + interval + "'");
    f.interval = *d;
  }
  const std::string mode = c.get_choice(
      "mode", {"sync", "async", "in-memory"}, std::string("async"),
      "sync: GPU->host->storage blocks; async: only the host snapshot blocks; in-memory: copy "
      "to peers' host memory (Gemini)");
  models::storage::parse_checkpoint_mode(mode, f.mode);

  ConfigReader st = c.child("storage", "the checkpoint store");
  f.storage.aggregate = st.get_bandwidth("bandwidth", sim::Bandwidth::gb_per_s(2000),
                                         "aggregate bandwidth of the file system");
  f.storage.per_node = st.get_bandwidth("per_node", sim::Bandwidth::gb_per_s(50),
                                        "one node's client bandwidth to storage");
  f.storage.device_to_host = st.get_bandwidth(
      "device_to_host", sim::Bandwidth::gb_per_s(25), "per GPU, pinned PCIe copy to host memory");
  const sim::Bandwidth nic = cluster.scale_out.topology == "none"
                                 ? sim::Bandwidth::gb_per_s(50)
                                 : cluster.scale_out.nic_bandwidth.scaled(cluster.gpus_per_node);
  f.storage.peer_network = st.get_bandwidth(
      "peer_network", nic, "in-memory: per node to peers (default: the node's NICs together)");
  f.storage.replicas = static_cast<int>(
      st.get_int_in("replicas", 1, "in-memory: peers holding a copy of each node's shard", 1, 64));
  if (!(f.storage.aggregate.bytes_per_s() > 0)) st.fail("bandwidth", "must be positive");
  if (!(f.storage.per_node.bytes_per_s() > 0)) st.fail("per_node", "must be positive");
  if (!(f.storage.device_to_host.bytes_per_s() > 0)) st.fail("device_to_host", "must be positive");
  if (!(f.storage.peer_network.bytes_per_s() > 0)) st.fail("peer_network", "must be positive");
  st.finish();

  // The checkpoint holds one copy of the weights and the optimizer states
  // (fp32 master + Adam moments), sharded over every GPU (ZeRO / DCP style).
  f.shape.gpus_per_node = cluster.gpus_per_node;
  f.shape.nodes = cluster.nodes;
  if (training) {
    const double params = workloads::models::count_params(training->config.model).total;
    const double per_param =
        training->config.optimizer.weight_bytes + training->config.optimizer.state_bytes;
    f.shape.bytes_per_gpu = params * per_param / cluster.total_gpus();
  }
  check_checkpoint_stages(st, f);
  c.finish();
  f.checkpoint_at = c;
}

// The failure draw holds every failure of every seed: refuse rates that
// would make millions of them (1/10ms per node drew gigabytes), naming the
// class that contributes most and the expected count.
void check_expected_failures(ConfigReader& rates, const FailuresSetup& f) {
  const double hours = f.horizon.duration.seconds() / 3600.0;
  const double expected = f.counts.total_rate_per_hour(f.rates) * hours * f.horizon.seeds;
  if (expected <= wf::kMaxExpectedFailures) return;
  wf::ComponentClass worst = wf::ComponentClass::gpu;
  double most = -1;
  for (wf::ComponentClass c : wf::kAllComponentClasses) {
    const double n = static_cast<double>(f.counts.count[c]) * f.rates.per_hour[c];
    if (n > most) {
      most = n;
      worst = c;
    }
  }
  const std::string name = wf::component_class_name(worst);
  const std::string key = f.preset.empty() || rates.has(name) ? name : "preset";
  rates.fail(key, fmt("%.3g failures expected", expected) + " over simulation.duration (" +
                      fmt("%.4g h", hours) + ") x " + std::to_string(f.horizon.seeds) +
                      " seeds, " + fmt("%.3g", most * hours * f.horizon.seeds) + " of them from " +
                      std::to_string(f.counts.count[worst]) + " " + name +
                      " components; the failure model draws at most " +
                      fmt("%.0f", wf::kMaxExpectedFailures) +
                      " (all seeds): lower the rate or shorten simulation.duration");
}

}  // namespace

std::optional<double> parse_failure_rate(const std::string& text_in, std::string* error) {
  std::string text = text_in;
  trim(text);
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && v == 0.0) return 0.0;
    *error = "'" + text + "' is not a rate: write COUNT/DURATION, e.g. 1/3692h, or 0";
    return std::nullopt;
  }
  std::string count_text = text.substr(0, slash);
  std::string per_text = text.substr(slash + 1);
  trim(count_text);
  trim(per_text);
  char* end = nullptr;
  const double count = std::strtod(count_text.c_str(), &end);
  if (count_text.empty() || end != count_text.c_str() + count_text.size() ||
      !std::isfinite(count)) {
    *error = "'" + text + "': '" + count_text + "' is not a number";
    return std::nullopt;
  }
  if (count < 0) {
    *error = "'" + text + "': a failure rate must not be negative";
    return std::nullopt;
  }
  // A rate's period may exceed the time range (1/200000h), so read the
  // number and unit without building a Duration.
  double hours = 0;
  std::string err;
  if (!per_text.empty() && per_text.back() == 'd') {
    const std::string n = per_text.substr(0, per_text.size() - 1);
    const double days = std::strtod(n.c_str(), &end);
    if (n.empty() || end != n.c_str() + n.size()) {
      *error = "'" + text + "': '" + per_text + "' is not a duration";
      return std::nullopt;
    }
    hours = days * 24.0;
  } else if (!per_text.empty() && per_text.back() == 'h') {
    const std::string n = per_text.substr(0, per_text.size() - 1);
    hours = std::strtod(n.c_str(), &end);
    if (n.empty() || end != n.c_str() + n.size()) {
      *error = "'" + text + "': '" + per_text + "' is not a duration";
      return std::nullopt;
    }
  } else {
    const auto d = sim::parse_duration(per_text, &err);
    if (!d) {
      *error = "'" + text + "': " + err;
      return std::nullopt;
    }
    hours = d->seconds() / 3600.0;
  }
  if (!(hours > 0) || !std::isfinite(hours)) {
    *error = "'" + text + "': the period must be positive";
    return std::nullopt;
  }
  return count / hours;
}

FailureHorizon read_failure_horizon(ConfigReader& simulation) {
  FailureHorizon h;
  h.duration = read_positive_duration(
      simulation, "duration", std::string("14d"),
      "failures: simulated wall time of the training run (at most 106 days)");
  h.seeds = static_cast<int>(simulation.get_int_in(
      "seeds", 5, "failures: independent runs for the mean and 95% confidence interval", 1, 1000));
  return h;
}

std::shared_ptr<FailuresSetup> load_failures(ConfigReader& top, const ClusterConfig& cluster,
                                             const TrainingRun* training,
                                             const FailureHorizon& horizon, uint64_t seed) {
  auto f = std::make_shared<FailuresSetup>();
  f->horizon = horizon;
  f->seed = seed;
  const bool present = top.has("failures");
  ConfigReader fc = top.child("failures", "component failures, detection and recovery");
  f->enabled = fc.get_bool("enabled", present, "simulate failures over simulation.duration");
  ConfigReader rates = fc.child("rates", "per-class failure rates, or preset: llama3");
  read_rates(rates, *f);
  rates.finish();
  const int64_t radix = fc.get_int_in("switch_radix", 64,
                                      "ports per fabric switch, for counting switches and the "
                                      "links a switch failure takes down", 2, 1024);
  f->counts = wf::cluster_component_counts(cluster.nodes, cluster.gpus_per_node,
                                           cluster.scale_out.tiers,
                                           cluster.scale_out.topology != "none",
                                           static_cast<int>(radix));
  if (f->enabled) check_expected_failures(rates, *f);
  read_recovery(fc, *f);
  if (f->enabled && !training) {
    fc.fail("enabled", "failures need workload.kind: training (the step time comes from it)");
  }
  fc.finish();
  read_checkpoint(top, cluster, training, *f);
  return f;
}

}  // namespace gcsim::cli
