#include "workloads/failures/component_failures.h"

namespace gcsim::workloads::failures {

namespace {
constexpr std::array<const char*, kComponentClasses> kNames{"gpu",    "hbm",  "nic",     "link",
                                                            "switch", "node", "software"};
}  // namespace

const char* component_class_name(ComponentClass c) { return kNames[static_cast<int>(c)]; }

std::optional<ComponentClass> parse_component_class(const std::string& name) {
  for (ComponentClass c : kAllComponentClasses) {
    if (name == component_class_name(c)) return c;
  }
  return std::nullopt;
}

double ComponentCounts::total_rate_per_hour(const FailureRates& r) const {
  double total = 0;
  for (ComponentClass c : kAllComponentClasses) {
    total += static_cast<double>(count[c]) * r.per_hour[c];
  }
  return total;
}

ComponentCounts cluster_component_counts(int nodes, int gpus_per_node, int tiers,
                                         bool has_scale_out, int switch_radix) {
  ComponentCounts k;
  const int64_t gpus = static_cast<int64_t>(nodes) * gpus_per_node;
  k.count[ComponentClass::gpu] = gpus;
  k.count[ComponentClass::hbm] = gpus;
  k.count[ComponentClass::node] = nodes;
  k.count[ComponentClass::software] = nodes;
  if (has_scale_out && tiers >= 1) {
    const int64_t half = switch_radix / 2;
    k.count[ComponentClass::nic] = gpus;
    k.count[ComponentClass::link] = gpus * tiers;
    // Rounded up: a partly used switch still fails.
    k.count[ComponentClass::switch_] =
        (tiers - 1) * ((gpus + half - 1) / half) + (gpus + switch_radix - 1) / switch_radix;
    k.links_per_switch = switch_radix;
  }
  return k;
}

FailureRates llama3_rates() {
  // The Llama 3 cluster under the counting rules: 2,048 nodes x 8, 3 tiers.
  const ComponentCounts llama = cluster_component_counts(2048, 8, 3, true);
  PerClass<double> interruptions;
  interruptions[ComponentClass::gpu] = 148 + 19 + 17 + 6 + 6;
  interruptions[ComponentClass::hbm] = 72;
  interruptions[ComponentClass::software] = 54 + 7;
  interruptions[ComponentClass::link] = 35;
  interruptions[ComponentClass::node] = 32 + 16;
  interruptions[ComponentClass::nic] = 7;
  interruptions[ComponentClass::switch_] = 0;
  FailureRates r;
  for (ComponentClass c : kAllComponentClasses) {
    const double n = static_cast<double>(llama.count[c]);
    r.per_hour[c] = n > 0 ? interruptions[c] / (kLlama3Hours * n) : 0.0;
  }
  return r;
}

}  // namespace gcsim::workloads::failures
