// Network quiz: ring against tree all-reduce of S bytes over N GPUs in HGX
// nodes on a 2-tier fat-tree, and the odds that ECMP hashes flows onto the
// same uplink. Closed forms: the α-β ring (Thakur, Rabenseifner & Gropp
// 2005; nccl-tests' PERFORMANCE.md for busbw), NCCL's double binary tree
// (Sanders et al. 2009, as NCCL 2.4 uses it between nodes, a chain inside
// one), and balls-in-bins for the hash.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "models/collectives/collective.h"
#include "workloads/quiz/quiz.h"
#include "workloads/quiz/quiz_pick.h"

namespace gcsim::workloads::quiz {

namespace {

// Probability that k flows hashed uniformly onto m uplinks all land on
// different ones: m!/((m-k)! m^k) (the birthday problem).
double no_collision_probability(int k, int m) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= static_cast<double>(m - i) / m;
  return p;
}

// The same two figures by drawing hashes: what the closed form claims,
// checked without algebra. Fixed seed, so the quiz stays reproducible.
void monte_carlo(uint64_t seed, int k, int m, double& collision, double& shared) {
  sim::RandomStream r(seed, "quiz/network/ecmp");
  constexpr int kTrials = 100'000;
  int64_t any = 0, shared_flows = 0;
  std::vector<int> load(static_cast<size_t>(m));
  std::vector<int> chosen(static_cast<size_t>(k));
  for (int t = 0; t < kTrials; ++t) {
    std::fill(load.begin(), load.end(), 0);
    for (int f = 0; f < k; ++f) {
      chosen[static_cast<size_t>(f)] = static_cast<int>(r.uniform_int(static_cast<uint64_t>(m)));
      ++load[static_cast<size_t>(chosen[static_cast<size_t>(f)])];
    }
    bool hit = false;
    for (int f = 0; f < k; ++f) {
      if (load[static_cast<size_t>(chosen[static_cast<size_t>(f)])] > 1) {
        ++shared_flows;
        hit = true;
      }
    }
    any += hit ? 1 : 0;
  }
  collision = static_cast<double>(any) / kTrials;
  shared = static_cast<double>(shared_flows) / (static_cast<double>(kTrials) * k);
}

}  // namespace

Quiz make_network_quiz(uint64_t seed, const PresetBook& presets) {
  sim::RandomStream r = quiz_stream(seed, "network");
  std::vector<std::string> gpus;
  // GPUs of an NVLink/NVSwitch node (the question's scale-up domain).
  for (const auto& [name, spec] : presets.gpus) {
    if (spec.nvlink_bandwidth.bytes_per_s() > 0) gpus.push_back(name);
  }
  const std::string gpu_name = pick(r, gpus);
  const auto& gpu = presets.gpus.at(gpu_name);
  const int nodes = pick(r, std::vector<int>{2, 4});
  const int nic_gbps = pick(r, std::vector<int>{200, 400, 800});
  const double mib = pick(r, std::vector<double>{1, 64, 1024});
  const int k_flows = pick(r, std::vector<int>{4, 8, 16});
  const int m_uplinks = pick(r, std::vector<int>{8, 16, 32});

  constexpr int g = 8;            // GPUs (and rail NICs) per HGX node
  const int n = nodes * g;        // ranks
  const double S = mib * 1048576.0;  // bytes per rank (nccl-tests' size)
  const double b_nic = nic_gbps * 1e9 / 8.0;                 // B/s per NIC, each way
  const double b_nvl = gpu.nvlink_bandwidth.bytes_per_s();   // B/s per GPU, each way
  // NIC -> leaf -> spine -> leaf -> NIC: four links of 0.5 us (the
  // fabric's hop_latency), the worst case between two nodes.
  const double a_net = 4 * 0.5e-6;
  const double a_nvl = gpu.nvlink_latency.seconds();

  Quiz q;
  q.topic = Topic::network;
  q.seed = seed;
  const std::string size = mib >= 1024 ? fmt("%.0f GiB", mib / 1024) : fmt("%.0f MiB", mib);
  q.title = "All-reduce of " + size + " on " + std::to_string(n) + " " + gpu_name + " over " +
            std::to_string(nic_gbps) + "G NICs";
  q.question =
      std::to_string(nodes) + " HGX nodes of 8 " + gpu_name + " (NVLink " +
      fmt("%.0f GB/s", b_nvl / 1e9) + " per GPU each way, " + fmt("%.1f us", a_nvl * 1e6) +
      "), one " + std::to_string(nic_gbps) +
      " Gb/s NIC per GPU (rail), a 2-tier fat-tree with 0.5 us per link. Every GPU all-reduces " +
      size + ".\n\n"
      "(a) Time and nccl-tests bus bandwidth of NCCL's ring algorithm.\n"
      "(b) The same for NCCL's tree (double binary tree between nodes, a chain inside a node).\n"
      "(c) " + std::to_string(k_flows) + " flows leave one leaf switch over " +
      std::to_string(m_uplinks) +
      " equal-cost uplinks, each placed by a 5-tuple hash (ECMP): the probability that at least "
      "two share an uplink, and the expected fraction of flows that share theirs.\n";

  // (a) ring: every rank sends 2(n-1)/n S in 2(n-1) lock-step rounds. Each
  // node's crossing traffic goes out over its g rail NICs (NCCL puts each
  // channel's node boundary on a different rail), and every GPU moves the
  // same volume over NVLink, so the bus rate is min(NVLink, g x NIC).
  const double b_bus = std::min(b_nvl, g * b_nic);
  const double ring_lat = 2.0 * (n - 1) * a_net;
  // nccl-tests' all-reduce bus factor 2(n-1)/n: the share of S each rank sends.
  const double busbw_factor =
      models::collectives::bus_bandwidth_factor(models::collectives::CollectiveOp::all_reduce, n);
  const double ring_bw = busbw_factor * S / b_bus;
  const double t_ring = ring_lat + ring_bw;
  q.steps.push_back("Bus rate per GPU: min(NVLink, 8 x NIC) = min(" + fmt("%.0f", b_nvl / 1e9) +
                    ", 8 x " + fmt("%.0f", b_nic / 1e9) + ") = " + fmt("%.0f GB/s", b_bus / 1e9) +
                    " (each node's ring crossings spread over its 8 rails).");
  q.steps.push_back("Ring: t = 2(n-1) a + 2(n-1)/n S/B = 2 x " + std::to_string(n - 1) + " x " +
                    fmt("%.1f us", a_net * 1e6) + " + 2 x " + std::to_string(n - 1) + "/" +
                    std::to_string(n) + " x " + num(S) + " B / " + fmt("%.0f GB/s", b_bus / 1e9) +
                    " = " + fmt("%.1f us", ring_lat * 1e6) + " + " +
                    fmt("%.1f us", ring_bw * 1e6) + " = " + fmt("%.4g ms", t_ring * 1e3) + ".");
  q.steps.push_back("Ring busbw = S/t x 2(n-1)/n = " +
                    fmt("%.1f GB/s", S / t_ring * busbw_factor / 1e9) + ".");
  // (b) tree: a node is interior in one tree and a leaf in the other, so it
  // sends S (reduce) + S (broadcast) in all over its rails; the chain inside
  // the node moves 2S per GPU over NVLink. Latency: up and down the tree
  // depth ceil(log2 nodes) hops between nodes, (g-1) NVLink hops in the chain.
  const double depth = std::ceil(std::log2(static_cast<double>(nodes)));
  const double tree_lat = 2.0 * (depth * a_net + (g - 1) * a_nvl);
  const double tree_bw = 2.0 * S / b_bus;
  const double t_tree = tree_lat + tree_bw;
  q.steps.push_back("Tree: t = 2(ceil(log2 nodes) a_net + (g-1) a_nvl) + 2S/B = 2 x (" +
                    fmt("%.0f", depth) + " x " + fmt("%.1f us", a_net * 1e6) + " + 7 x " +
                    fmt("%.1f us", a_nvl * 1e6) + ") + 2 x " + num(S) + " B / " +
                    fmt("%.0f GB/s", b_bus / 1e9) + " = " + fmt("%.1f us", tree_lat * 1e6) +
                    " + " + fmt("%.1f us", tree_bw * 1e6) + " = " + fmt("%.4g ms", t_tree * 1e3) +
                    "; busbw " + fmt("%.1f GB/s", S / t_tree * busbw_factor / 1e9) +
                    ". Tree wins when the ring's 2(n-1) latency terms dominate (small S).");
  // (c) balls in bins.
  const double p_collide = 1.0 - no_collision_probability(k_flows, m_uplinks);
  const double shared = 1.0 - std::pow(1.0 - 1.0 / m_uplinks, k_flows - 1);
  q.steps.push_back("ECMP, k = " + std::to_string(k_flows) + " flows on m = " +
                    std::to_string(m_uplinks) + " uplinks: P(some collision) = 1 - m!/((m-k)! m^k) = " +
                    fmt("%.4f", p_collide) + "; a given flow shares its uplink with probability "
                    "1 - (1 - 1/m)^(k-1) = " + fmt("%.4f", shared) +
                    ". A shared uplink halves (or worse) those flows' rate: a collective ends "
                    "with its slowest flow.");

  q.sim_note =
      "The simulator runs NCCL's algorithms as flows on the fabric with NCCL's per-algorithm "
      "base latencies, protocol ceilings (LL and LL128 cap a GPU's rate, lower across nodes), "
      "channel counts and pipeline fill; the closed form has none of these, so small messages "
      "(latency-bound) and the tree (a chain of 8 GPUs in each node) differ most.";
  const std::string cluster = "cluster:\n  gpu: " + gpu_name + "\n  nodes: " +
                              std::to_string(nodes) +
                              "\n  gpus_per_node: 8\n  scale_up: {kind: nvswitch}\n"
                              "  scale_out: {topology: fat-tree, tiers: 2, nic_bandwidth: " +
                              std::to_string(nic_gbps) + "Gbps}\nnetwork: {model: flow}\n";
  for (const char* algo : {"ring", "tree"}) {
    q.verifications.push_back(
        {algo, cluster + "workload: {kind: collective, op: all_reduce, bytes: " +
                   fmt("%.0f", S) + "B, ranks: all, algorithm: " + algo + "}\n"});
  }
  const char* why_time =
      "15%: the closed form's only free choices are the per-step latency and whether the user "
      "counts the rails; both move the answer by about that much";
  auto add = [&](const char* key, const char* what, const char* unit, double est, int v,
                 const char* ptr, double scale) {
    add_quantity(q, key, what, unit, est, 0.15, why_time, v, ptr, scale);
  };
  add("ring_time_ms", "ring all-reduce time", "ms", t_ring * 1e3, 0, "/results/0/time_s", 1e3);
  add("ring_busbw_gbps", "ring bus bandwidth (nccl-tests)", "GB/s",
      S / t_ring * busbw_factor / 1e9, 0, "/results/0/busbw_GBps", 1.0);
  add("tree_time_ms", "tree all-reduce time", "ms", t_tree * 1e3, 1, "/results/0/time_s", 1e3);
  add("tree_busbw_gbps", "tree bus bandwidth (nccl-tests)", "GB/s",
      S / t_tree * busbw_factor / 1e9, 1, "/results/0/busbw_GBps", 1.0);
  double mc_collide = 0, mc_shared = 0;
  monte_carlo(seed, k_flows, m_uplinks, mc_collide, mc_shared);
  const char* why_p = "2%: exact combinatorics, only rounding is left";
  for (auto [key, what, est, mc] :
       {std::tuple{"ecmp_collision_probability", "P(at least two flows share an uplink)",
                   p_collide, mc_collide},
        std::tuple{"ecmp_shared_fraction", "expected fraction of flows sharing their uplink",
                   shared, mc_shared}}) {
    Quantity x;
    x.key = key;
    x.what = what;
    x.unit = "probability";
    x.estimate = est;
    x.tolerance = 0.02;
    x.tolerance_why = why_p;
    x.check_value = mc;
    x.check_name = "Monte Carlo, 100k hashes";
    x.sim_tolerance = 0.05;  // 100k trials: standard error < 0.5%
    q.quantities.push_back(x);
  }
  return q;
}

}  // namespace gcsim::workloads::quiz
