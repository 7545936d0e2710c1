// What fails in a training cluster, how often, and how many of each there
// are. Seven component classes (GPU, HBM, NIC, link, switch, node host,
// software); each has a per-component rate (failures per hour per
// component) and a lifetime distribution (exponential, or Weibull with a
// shape parameter and the same mean). The `llama3` preset derives the
// per-component rates from the Llama 3 interruption taxonomy (Dubey et al.
// 2024, Table 5; ../shared/REFERENCE.md "Reliability").
#pragma once

#include <array>
#include <optional>
#include <string>

namespace gcsim::workloads::failures {

enum class ComponentClass { gpu, hbm, nic, link, switch_, node, software };
inline constexpr int kComponentClasses = 7;
inline constexpr std::array<ComponentClass, kComponentClasses> kAllComponentClasses{
    ComponentClass::gpu,     ComponentClass::hbm,  ComponentClass::nic,     ComponentClass::link,
    ComponentClass::switch_, ComponentClass::node, ComponentClass::software};

const char* component_class_name(ComponentClass c);
std::optional<ComponentClass> parse_component_class(const std::string& name);

// One value per class, indexed by the enum.
template <typename T>
struct PerClass {
  std::array<T, kComponentClasses> v{};
  T& operator[](ComponentClass c) { return v[static_cast<int>(c)]; }
  const T& operator[](ComponentClass c) const { return v[static_cast<int>(c)]; }
};

enum class Lifetime { exponential, weibull };

struct FailureRates {
  PerClass<double> per_hour;  // failures per hour per component of the class
  Lifetime lifetime = Lifetime::exponential;
  double weibull_shape = 1.0;  // k < 1: infant mortality, k > 1: wear-out
};

// How many components of each class a cluster has. Counting rules, for a
// cluster of N GPUs on `nodes` hosts with one NIC per GPU (rail) and a
// `tiers`-tier fat-tree of radix-R switches at full bisection:
//   gpu = hbm = N (HBM counted as one stack set per GPU), nic = N,
//   link = N x tiers (each NIC cable plus one uplink per tier above the leaf),
//   switch = (tiers - 1) x N / (R/2) + N / R (lower tiers use half their
//   ports down, the top tier all of them), node = software = nodes (one host
//   OS and one training process group per node).
// Without a scale-out network nic, link and switch are 0.
struct ComponentCounts {
  PerClass<int64_t> count;
  int links_per_switch = 0;  // links a switch failure takes down with it (its rail's ports)
  double total_rate_per_hour(const FailureRates& r) const;
};
ComponentCounts cluster_component_counts(int nodes, int gpus_per_node, int tiers,
                                         bool has_scale_out, int switch_radix = 64);

// Llama 3 405B pre-training (Dubey et al. 2024, Table 5): 419 unexpected
// interruptions in 54 days on 16,384 H100 in 2,048 nodes of 8, a 3-tier
// RoCE fabric. Categories to classes (counts of interruptions):
//   gpu      196 = faulty GPU 148 + GPU SRAM 19 + GPU system processor 17
//                  + silent data corruption 6 + thermal interface/sensor 6
//   hbm       72 = HBM3 memory
//   software  61 = software bug 54 + NCCL watchdog timeout 7
//   link      35 = network switch/cable (cables and optics dominate; the
//                  taxonomy does not split them, so switches get 0 and a
//                  user sets `switch:` to model correlated switch failures)
//   node      48 = host maintenance 32 + the 16 remaining "others" (<= 3 each)
//   nic        7 = network interface
// Per-component rate = count / (1296 h x that class's count in the Llama 3
// cluster under the counting rules above), so a cluster of the same shape
// sees 419 / 1296 h = one interruption every 3.09 h.
FailureRates llama3_rates();
inline constexpr double kLlama3Hours = 54.0 * 24.0;
inline constexpr double kLlama3Interruptions = 419.0;

}  // namespace gcsim::workloads::failures
