// Flow-model cost: how many flow rates the incremental max-min solver
// recomputes per second with N flows in flight on a 1,024-GPU two-tier Clos
// (128 hosts of 8 GPUs, 32 leaves of 4 hosts, 32 spines, 400 Gb/s NICs and
// uplinks: non-blocking, ECMP). Closed loop: N transfers between random GPUs
// of different hosts start at once; each one that completes starts another,
// so N stay in flight and every completion is two solves (its flow drains;
// 3 us later it is delivered and the next one starts). Target: >= 1M
// flow-rate updates/s on one core. N = 1,000 (one flow per GPU) shows the
// sparse case, where a change reaches few flows; at 10 and 100 flows per
// GPU random traffic couples nearly every flow to every change (measured:
// a completion changes 20% of the rates at 10K, 40-75% at 100K), and the
// solver works as a full recomputation.
//
// Counters (per CPU second of the timed loop):
//   rate_updates_per_s   flow rates the solver recomputed (|S| summed over
//                        its fillings: the work)
//   rates_changed_per_s  of those, rates that actually changed
//   completions_per_s    transfers completed
//   solves_per_s         rate recomputations (instants with a change)
//   flows_per_solve      mean |S| per solve, against N for a full recompute
//   rounds_per_solve     fillings per solve (1 + widenings of S)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>

#include "models/network/flow_model.h"
#include "tests/unit/fabric_fixtures.h"

namespace {

using namespace gcsim;
using namespace gcsim::models::network;

constexpr int kGpusPerHost = 8;

test::SmallFabricSpec clos_1024() {
  test::SmallFabricSpec s;
  s.hosts = 128;
  s.gpus_per_host = kGpusPerHost;
  s.leaves = 32;
  s.spines = 32;
  return s;
}

// N transfers in flight for ever: a completion starts the next one.
class ClosedLoop {
 public:
  ClosedLoop(Fabric& f, uint64_t seed, int64_t flows)
      : sim_(seed),
        routing_(f, seed),
        model_(sim_, f, routing_, RoutingPolicy::ecmp),
        rng_(sim_.random_stream("bench/flow")),
        gpus_(f.num_gpus()) {
    for (int64_t i = 0; i < flows; ++i) start_one();
    sim_.run(sim::Time::zero());  // the first solve, all N flows at once
  }

  // Runs until `n` more transfers have completed.
  void complete(int64_t n) {
    budget_ = n;
    sim_.run();
  }

  const MaxMinSolver::Counters& counters() const { return model_.solver().counters(); }
  int64_t completed() const { return completed_; }
  size_t sending() const { return model_.sending(); }

 private:
  void start_one() {
    const int src = static_cast<int>(rng_.uniform_int(static_cast<uint64_t>(gpus_)));
    // Another host: traffic crosses the network (leaf, and spine when the
    // hosts sit on different leaves).
    int dst = static_cast<int>(rng_.uniform_int(static_cast<uint64_t>(gpus_ - kGpusPerHost)));
    if (dst / kGpusPerHost >= src / kGpusPerHost) dst += kGpusPerHost;
    // 64 KiB .. 16 MiB, uniform in bytes.
    const auto bytes = static_cast<int64_t>(64 * 1024 + rng_.uniform_int(16 << 20));
    const auto qp = static_cast<uint32_t>(rng_.uniform_int(1 << 16));
    model_.start({src, dst, sim::Bytes(bytes), qp}, [this] { on_done(); });
  }
  void on_done() {
    ++completed_;
    start_one();
    if (--budget_ == 0) sim_.stop();
  }

  sim::Simulator sim_;
  Routing routing_;
  FlowModel model_;
  sim::RandomStream rng_;
  int gpus_;
  int64_t budget_ = 0;
  int64_t completed_ = 0;
};

void BM_FlowRateUpdates(benchmark::State& state) {
  const int64_t flows = state.range(0);
  Fabric fabric = test::small_fabric(clos_1024());
  ClosedLoop loop(fabric, 1, flows);
  // About 0.5 s of work per iteration on a 2020s core at any N.
  const int64_t batch = std::clamp<int64_t>(2'000'000 / flows, 20, 1000);
  loop.complete(2 * batch);  // warm up past the synchronized start
  const MaxMinSolver::Counters c0 = loop.counters();
  const int64_t done0 = loop.completed();
  for (auto _ : state) loop.complete(batch);
  const MaxMinSolver::Counters c1 = loop.counters();
  const auto solves = static_cast<double>(c1.solves - c0.solves);
  const auto rate = benchmark::Counter::kIsRate;
  state.counters["rate_updates_per_s"] =
      benchmark::Counter(static_cast<double>(c1.flows_recomputed - c0.flows_recomputed), rate);
  state.counters["rates_changed_per_s"] =
      benchmark::Counter(static_cast<double>(c1.rates_changed - c0.rates_changed), rate);
  state.counters["completions_per_s"] =
      benchmark::Counter(static_cast<double>(loop.completed() - done0), rate);
  state.counters["solves_per_s"] = benchmark::Counter(solves, rate);
  state.counters["flows_per_solve"] =
      static_cast<double>(c1.flows_recomputed - c0.flows_recomputed) / solves;
  state.counters["rounds_per_solve"] = static_cast<double>(c1.rounds - c0.rounds) / solves;
  state.counters["in_flight"] = static_cast<double>(loop.sending());
}
BENCHMARK(BM_FlowRateUpdates)
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
