#include "sim/cli/list_command.h"

#include <cstdio>
#include <memory>
#include <ostream>

#include "sim/scenario/gpu_spec_loader.h"
#include "sim/scenario/model_spec_loader.h"
#include "workloads/models/model_formulas.h"
#include "sim/scenario/presets.h"
#include "sim/scenario/scenario.h"
#include "sim/config/did_you_mean.h"
#include "topologies/clos_sizing.h"
#include "topologies/topology_spec.h"

namespace gcsim::cli {

namespace {

void list_gpus(std::ostream& out) {
  out << "GPU presets (configs/hardware/):\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-14s %5s %12s %12s %8s %10s %11s\n", "name", "SMs",
                "bf16 TFLOP/s", "fp8 TFLOP/s", "HBM GiB", "HBM GB/s", "NVLink GB/s");
  out << line;
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  for (const auto& name : preset_names("hardware")) {
    auto spec = load_gpu_preset(name, nowhere, "gpu");
    const double fp8 = spec.tensor_peak_for(models::gpu::Dtype::fp8).tflops();
    std::snprintf(line, sizeof line, "  %-14s %5d %12.0f %12s %8.1f %10.0f %11.0f\n", name.c_str(),
                  spec.sm_count, spec.tensor_peak_for(models::gpu::Dtype::bf16).tflops(),
                  fp8 > 0 ? std::to_string(static_cast<int>(fp8 + 0.5)).c_str() : "-",
                  spec.hbm_capacity.as_double() / (1 << 30), spec.hbm_bandwidth.gb_per_s(),
                  spec.nvlink_bandwidth.gb_per_s());
    out << line;
  }
}

// Each model preset with its size (workloads/models/model_formulas.h).
void list_models(std::ostream& out, const std::vector<std::string>& names) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-14s %8s %8s %6s %6s %6s %7s %7s  %s\n", "name", "params",
                "active", "layers", "hidden", "heads", "kv", "seq", "attention / MLP");
  out << line;
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  for (const auto& name : names) {
    const auto m = load_model_preset(name, nowhere, "model");
    const auto p = workloads::models::count_params(m);
    std::string arch = std::string(workloads::models::attention_name(m.attention)) + " / " +
                       workloads::models::mlp_name(m.mlp);
    if (m.is_moe()) {
      arch += ", " + std::to_string(m.moe.experts) + " experts top-" + std::to_string(m.moe.top_k);
    }
    std::snprintf(line, sizeof line, "  %-14s %7.1fB %7.1fB %6d %6lld %6d %7d %7lld  %s\n",
                  name.c_str(), p.total * 1e-9, p.active * 1e-9, m.layers,
                  static_cast<long long>(m.hidden), m.heads, m.kv_heads,
                  static_cast<long long>(m.seq_len), arch.c_str());
    out << line;
  }
}

void list_registered(std::ostream& out, const char* title, const std::vector<Registered>& items) {
  out << title << ":\n";
  for (const auto& r : items) out << "  " << r.name << " — " << r.description << "\n";
}

void list_topologies(std::ostream& out) {
  out << "Scale-out topologies (cluster.scale_out.topology):\n";
  for (const auto& t : topologies::topology_catalog()) {
    char name[32];
    std::snprintf(name, sizeof name, "  %-15s", std::string(topologies::topology_name(t.topology)).c_str());
    out << name << " — " << t.description << "\n";
  }
  // Capacities from the builders' own sizing (topologies/clos_sizing.h).
  const int k = 64;
  const int d = topologies::split_ports(k, 1.0).down;
  out << "  At radix " << k << ", non-blocking, a fat-tree holds " << k * d << " NICs with 2 tiers "
      << "and " << k * d * d << " with 3 (one NIC per GPU).\n"
      << "  Scale-up (cluster.scale_up.kind): nvswitch (bandwidth and latency from the GPU "
         "preset), pcie, none.\n"
      << "  Transfers run on the built fabric under network.model (analytical, flow, packet);\n"
      << "  `gcsim check` validates the topology and its faults.\n";
}

}  // namespace

int list_command(const std::string& what, std::ostream& out) {
  const std::vector<std::string> topics{"gpus", "models", "topologies", "workloads", "networks"};
  if (!what.empty() && std::find(topics.begin(), topics.end(), what) == topics.end()) {
    out.flush();
    std::fprintf(stderr, "gcsim list: unknown topic '%s'%s (topics: gpus, models, topologies, "
                         "workloads, networks)\n",
                 what.c_str(), sim::config::did_you_mean(what, topics).c_str());
    return 2;
  }
  if (what.empty() || what == "gpus") list_gpus(out);
  if (what.empty() || what == "models") {
    auto names = preset_names("models");
    out << "Model presets (configs/models/):" << (names.empty() ? " none yet\n" : "\n");
    if (!names.empty()) list_models(out, names);
  }
  if (what.empty() || what == "topologies") list_topologies(out);
  if (what.empty() || what == "workloads") list_registered(out, "Workload kinds", workload_kinds());
  if (what.empty() || what == "networks") list_registered(out, "Network models", network_models());
  return 0;
}

}  // namespace gcsim::cli
