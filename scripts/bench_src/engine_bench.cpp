// Engine benchmarks: how many events per second the run loop sustains and
// how that cost grows with the number of pending events.
//
//   BM_HoldHandlers   the classic "hold model" (Vaucher & Duval 1975): N
//                     handlers each reschedule themselves with a random
//                     delay, so the queue stays at exactly N events. This is
//                     the raw engine figure; the target is >= 20 M events/s.
//   BM_HoldTies       the same with delays of 1 or 2 ns only: thousands of
//                     events share each time, as symmetric ranks' do.
//   BM_HoldClosures   the same workload through call_in() closures, the
//                     convenience path glue code uses.
//   BM_Chains         K independent chains of L dependent events each, all
//                     started by one fan-out event; n = K*L events with a
//                     queue of K, so total time grows as n log K.
//   BM_LayeredDag     a K-wide, L-deep dependency graph where each node
//                     waits for two predecessors, the shape of a training
//                     step's op graph.
//
// Every benchmark reports `events/s` (executed events per CPU second) and
// `time/event`; the growth benchmarks also report the events per run, and
// their Time column is the wall time of one whole run.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/engine/simulator.h"

namespace {

using gcsim::sim::Duration;
using gcsim::sim::EventHandler;
using gcsim::sim::RandomStream;
using gcsim::sim::Simulator;
using gcsim::sim::Time;

// Mean event delay: 1 us, drawn uniformly from [1 ps, 2 us]. The exact
// distribution matters little to a heap; it keeps insertion points spread.
constexpr uint64_t kMaxDelayPs = 2'000'000;

void set_event_counters(benchmark::State& state, uint64_t events) {
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  // Seconds per event; printed with an SI prefix, e.g. "38.2n" = 38.2 ns.
  state.counters["time/event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---------------------------------------------------------------------------
// (a) Hold model with EventHandlers.

// Shared by all handlers of one ring: the simulator, the delay stream, and a
// budget of events after which the ring stops the run.
struct Ring {
  explicit Ring(Simulator& s) : sim(s), rng(s.random_stream("bench/hold")) {}
  Simulator& sim;
  RandomStream rng;
  uint64_t budget = 0;

  Duration next_delay() {
    return Duration::from_ps(1 + static_cast<int64_t>(rng.uniform_int(kMaxDelayPs)));
  }
};

class HoldHandler final : public EventHandler {
 public:
  explicit HoldHandler(Ring& ring) : ring_(ring) {}
  void handle_event(uint64_t tag) override {
    ring_.sim.schedule_in(ring_.next_delay(), *this, tag);
    if (--ring_.budget == 0) ring_.sim.stop();
  }

 private:
  Ring& ring_;
};

// Events per timed iteration: enough that stop/restart overhead vanishes.
constexpr uint64_t kBatch = 1 << 16;

// Runs a hold model whose n events are already scheduled on ring.sim: first
// untimed until each has fired about twice, so the queue holds the
// steady-state spread of times rather than the initial one, then kBatch
// events per timed iteration.
void run_hold_model(benchmark::State& state, Ring& ring, size_t n) {
  ring.budget = 2 * n;
  ring.sim.run();
  uint64_t events = 0;
  for (auto _ : state) {
    ring.budget = kBatch;
    events += ring.sim.run();
  }
  set_event_counters(state, events);
  state.counters["queue"] = static_cast<double>(ring.sim.events_pending());
}

void BM_HoldHandlers(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  Simulator sim(42);
  Ring ring(sim);
  std::vector<HoldHandler> handlers(n, HoldHandler(ring));
  for (size_t i = 0; i < n; ++i) {
    sim.schedule_at(Time::zero() + ring.next_delay(), handlers[i], i);
  }
  run_hold_model(state, ring, n);
}
BENCHMARK(BM_HoldHandlers)
    ->RangeMultiplier(10)
    ->Range(1'000, 1'000'000)
    ->Unit(benchmark::kMillisecond);

// The hold model with massive ties: every delay is 1 or 2 ns, so the N
// pending events share two or three times, as symmetric ranks of a
// data-parallel job do. Order among them is by priority and sequence alone.
class TiedHandler final : public EventHandler {
 public:
  explicit TiedHandler(Ring& ring) : ring_(ring) {}
  void handle_event(uint64_t tag) override {
    ring_.sim.schedule_in(
        Duration::from_ps(1000 * (1 + static_cast<int64_t>(ring_.rng.uniform_int(2)))), *this, tag);
    if (--ring_.budget == 0) ring_.sim.stop();
  }

 private:
  Ring& ring_;
};

void BM_HoldTies(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  Simulator sim(42);
  Ring ring(sim);
  std::vector<TiedHandler> handlers(n, TiedHandler(ring));
  for (size_t i = 0; i < n; ++i) sim.schedule_at(Time::zero(), handlers[i], i);
  run_hold_model(state, ring, n);
}
BENCHMARK(BM_HoldTies)->RangeMultiplier(10)->Range(1'000, 100'000)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// (b) The same hold model through closures: call_in(delay, lambda).

// Each closure captures the ring and its own index (16 bytes: fits in
// std::function's small buffer, as typical glue-code lambdas do).
void fire_closure(Ring& ring, uint64_t index) {
  ring.sim.call_in(ring.next_delay(), [&ring, index] { fire_closure(ring, index); });
  if (--ring.budget == 0) ring.sim.stop();
}

void BM_HoldClosures(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  Simulator sim(42);
  Ring ring(sim);
  for (size_t i = 0; i < n; ++i) {
    sim.call_at(Time::zero() + ring.next_delay(), [&ring, i] { fire_closure(ring, i); });
  }
  run_hold_model(state, ring, n);
}
BENCHMARK(BM_HoldClosures)
    ->RangeMultiplier(10)
    ->Range(1'000, 1'000'000)
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// (c) Growth: K independent chains of L events, fanned out from one root.

class Chain final : public EventHandler {
 public:
  Chain(Simulator& sim, RandomStream& rng, uint64_t length) : sim_(sim), rng_(rng), left_(length) {}
  // Each event is one step of the chain; the next step depends on it.
  void handle_event(uint64_t tag) override {
    if (--left_ == 0) return;
    sim_.schedule_in(Duration::from_ps(1 + static_cast<int64_t>(rng_.uniform_int(kMaxDelayPs))),
                     *this, tag + 1);
  }

 private:
  Simulator& sim_;
  RandomStream& rng_;
  uint64_t left_;
};

// The root: one event whose execution starts every chain at a random offset.
class FanOut final : public EventHandler {
 public:
  FanOut(Simulator& sim, RandomStream& rng, std::vector<Chain>& chains)
      : sim_(sim), rng_(rng), chains_(chains) {}
  void handle_event(uint64_t) override {
    for (auto& c : chains_) {
      sim_.schedule_in(Duration::from_ps(static_cast<int64_t>(rng_.uniform_int(kMaxDelayPs))), c,
                       0);
    }
  }

 private:
  Simulator& sim_;
  RandomStream& rng_;
  std::vector<Chain>& chains_;
};

constexpr uint64_t kChainLength = 64;

void BM_Chains(benchmark::State& state) {
  const auto k = static_cast<size_t>(state.range(0));
  uint64_t events = 0;
  uint64_t per_run = 0;
  for (auto _ : state) {
    // A fresh simulator per run: the growth curve includes building the
    // graph and the queue from empty, as a real scenario does.
    Simulator sim(7);
    RandomStream rng = sim.random_stream("bench/chains");
    std::vector<Chain> chains(k, Chain(sim, rng, kChainLength));
    FanOut root(sim, rng, chains);
    sim.schedule_at(Time::zero(), root);
    per_run = sim.run();
    events += per_run;
  }
  set_event_counters(state, events);
  state.counters["events"] = static_cast<double>(per_run);
}
BENCHMARK(BM_Chains)->RangeMultiplier(2)->Range(1, 1 << 16)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------
// A layered DAG: node (l, i) runs once (l-1, i) and (l-1, (i+1) mod K) have
// both run; each node's event fires after a random compute delay. Exercises
// the join pattern (dependency counters) of a training step's op graph.

class Dag final : public EventHandler {
 public:
  Dag(Simulator& sim, size_t width, size_t depth)
      : sim_(sim),
        rng_(sim.random_stream("bench/dag")),
        width_(width),
        depth_(depth),
        waiting_(width * depth, 2) {}

  void start() {
    for (size_t i = 0; i < width_; ++i) launch(i);
  }
  // tag = node index l * width + i: the node has finished.
  void handle_event(uint64_t node) override {
    const size_t layer = node / width_;
    if (layer + 1 == depth_) return;
    const size_t i = node % width_;
    const size_t next = (layer + 1) * width_;
    // Node (l, i) feeds (l+1, i) and (l+1, i-1 mod K).
    release(next + i);
    release(next + (i + width_ - 1) % width_);
  }

 private:
  void release(size_t node) {
    // A width-1 graph feeds the same successor twice; that counts as both.
    if (--waiting_[node] == 0) launch(node);
  }
  void launch(size_t node) {
    sim_.schedule_in(Duration::from_ps(1 + static_cast<int64_t>(rng_.uniform_int(kMaxDelayPs))),
                     *this, node);
  }

  Simulator& sim_;
  RandomStream rng_;
  size_t width_;
  size_t depth_;
  std::vector<uint8_t> waiting_;
};

constexpr size_t kDagDepth = 64;

void BM_LayeredDag(benchmark::State& state) {
  const auto k = static_cast<size_t>(state.range(0));
  uint64_t events = 0;
  uint64_t per_run = 0;
  for (auto _ : state) {
    Simulator sim(11);
    Dag dag(sim, k, kDagDepth);
    dag.start();
    per_run = sim.run();
    events += per_run;
  }
  set_event_counters(state, events);
  state.counters["events"] = static_cast<double>(per_run);
}
BENCHMARK(BM_LayeredDag)->RangeMultiplier(4)->Range(1, 1 << 16)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
