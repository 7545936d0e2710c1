// Packet-model cost: packet-hops (one packet serialized onto one link)
// simulated per CPU second, on a permutation and an incast over a two-tier
// Clos of 8-GPU hosts (NVSwitch inside, one 400G NIC per GPU, 400G
// uplinks, 0.5 us per hop; tests/unit/fabric_fixtures.h). Default config:
// PFC, ECN and DCQCN on. Target: >= 5M packet-hops/s on one core.
//
//   BM_PacketPermutation/GPUS/POLICY  every GPU sends 1 MiB to the GPU one
//       host further on (every flow crosses a spine); POLICY 0 ECMP,
//       1 spray, 2 adaptive
//   BM_PacketIncast/SENDERS           GPUs 8 .. 8 + SENDERS - 1 (other hosts)
//       each send 1 MiB to GPU 0 (PFC pauses, ECN marks, DCQCN cuts)
//   BM_PacketRing/GPUS/TRAINS         a ring step: every GPU sends 1 MiB on
//       each of 8 channels to the next GPU (NVSwitch inside a host, the NICs
//       between hosts); TRAINS 1 turns network.trains on (16 packets a
//       train; packet-hops count every packet of a train)
//
// Counters: packet_hops_per_s (the figure), events_per_hop (engine events
// per packet-hop), simulated_us (simulated time of one run).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "models/network/packet/packet_model.h"
#include "tests/unit/fabric_fixtures.h"

namespace {

using namespace gcsim;
using namespace gcsim::models::network;

constexpr int kGpusPerHost = 8;

test::SmallFabricSpec clos(int gpus) {
  test::SmallFabricSpec s;
  s.gpus_per_host = kGpusPerHost;
  s.hosts = gpus / kGpusPerHost;
  s.leaves = s.hosts >= 4 ? s.hosts / 4 : 1;  // 4 hosts (32 NICs) per leaf
  s.spines = 32;                             // 32 × 400G up: non-blocking
  return s;
}

struct Totals {
  uint64_t hops = 0;
  uint64_t events = 0;
  double simulated_s = 0.0;
};

template <typename Start>
void run_workload(benchmark::State& state, const test::SmallFabricSpec& spec,
                  RoutingPolicy policy, Start start, const PacketConfig& cfg = {}) {
  Totals t;
  for (auto _ : state) {
    state.PauseTiming();
    Fabric f = test::small_fabric(spec);
    Routing routing(f, 1);
    sim::Simulator sim(1);
    PacketModel model(sim, f, routing, cfg, policy);
    state.ResumeTiming();
    start(model, f.num_gpus());
    sim.run();
    t.hops += model.packet_hops();
    t.events += sim.events_executed();
    t.simulated_s = sim.now().seconds();
  }
  state.counters["packet_hops_per_s"] =
      benchmark::Counter(static_cast<double>(t.hops), benchmark::Counter::kIsRate);
  state.counters["events_per_hop"] = static_cast<double>(t.events) / static_cast<double>(t.hops);
  state.counters["simulated_us"] = t.simulated_s * 1e6;
}

void BM_PacketPermutation(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const auto policy = static_cast<RoutingPolicy>(state.range(1));
  run_workload(state, clos(gpus), policy, [](PacketModel& m, int n) {
    for (int r = 0; r < n; ++r) {
      m.start({r, (r + kGpusPerHost) % n, sim::MiB(1), static_cast<uint32_t>(r)}, [] {});
    }
  });
}
BENCHMARK(BM_PacketPermutation)
    ->Args({128, 0})
    ->Args({128, 1})
    ->Args({128, 2})
    ->Args({1024, 0})
    ->Unit(benchmark::kMillisecond);

void BM_PacketRing(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  PacketConfig cfg;
  cfg.trains.enabled = state.range(1) != 0;
  run_workload(
      state, clos(gpus), RoutingPolicy::ecmp,
      [](PacketModel& m, int n) {
        for (uint32_t c = 0; c < 8; ++c) {
          for (int r = 0; r < n; ++r) m.start({r, (r + 1) % n, sim::MiB(1), c}, [] {});
        }
      },
      cfg);
}
BENCHMARK(BM_PacketRing)->Args({128, 0})->Args({128, 1})->Unit(benchmark::kMillisecond);

void BM_PacketIncast(benchmark::State& state) {
  const int senders = static_cast<int>(state.range(0));
  run_workload(state, clos(128), RoutingPolicy::ecmp, [senders](PacketModel& m, int) {
    for (int s = 0; s < senders; ++s) m.start({kGpusPerHost + s, 0, sim::MiB(1)}, [] {});
  });
}
BENCHMARK(BM_PacketIncast)->Arg(8)->Arg(32)->Unit(benchmark::kMillisecond);

}  // namespace
