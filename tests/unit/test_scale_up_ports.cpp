// ScaleUpPorts (models/cluster/scale_up_ports.h): transfers in flight at
// once on one GPU take turns on each direction of its NVLink, each at
// 1 / (1 + the others' occupancy) of its pace alone, an occupancy being a
// transfer's offered rate / the link rate. The first cases are worked by
// hand; the last compares with two all-reduces at once on 4 H100s
// (calibration/measurements/h100-x4/concurrent_collectives_2026-11-27).
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "catch.h"
#include "models/cluster/scale_up_ports.h"
#include "scenario/run_gcsim.h"
#include "sim/engine/simulator.h"

using gcsim::models::cluster::PortLoad;
using gcsim::models::cluster::ScaleUpPorts;
using gcsim::sim::Duration;
using gcsim::sim::Simulator;

namespace {

// What one transfer moves a direction while it holds an H100's NVLink:
// 18 links x 25 GB/s x 0.770.
constexpr double kLink = 18 * 25e9 * 0.770;  // 346.5 GB/s

Duration us(double v) { return Duration::from_seconds(v * 1e-6); }

// Starts a transfer of `loads` at `at_us` whose data the engine moves alone
// in `alone_us`; records when the ports let it end (us).
void transfer(Simulator& sim, ScaleUpPorts& ports, double at_us, double alone_us,
              std::vector<PortLoad> loads, double& ended_us) {
  sim.call_in(us(at_us), [&sim, &ports, alone_us, loads, &ended_us] {
    auto use = ports.begin(loads);
    sim.call_in(us(alone_us), [&sim, &ports, use, &ended_us] {
      ports.moved(use, [&sim, &ended_us] { ended_us = sim.now().seconds() * 1e6; });
    });
  });
}

// A transfer: when it starts and how long the engine moves its data alone (us).
struct Timed {
  double at_us, alone_us;
  std::vector<PortLoad> loads;
};

// Runs `a` and `b` on one node's ports; when each ended (us).
std::pair<double, double> both(const Timed& a, const Timed& b) {
  Simulator sim(1);
  ScaleUpPorts ports(sim, 4, kLink);
  double end_a = -1, end_b = -1;
  transfer(sim, ports, a.at_us, a.alone_us, a.loads, end_a);
  transfer(sim, ports, b.at_us, b.alone_us, b.loads, end_b);
  sim.run();
  return {end_a, end_b};
}

// A 2-GPU ring all-reduce offering `rate` on both directions of both GPUs.
std::vector<PortLoad> ring(int a, int b, double rate) { return {{a, rate, rate}, {b, rate, rate}}; }

}  // namespace

TEST_CASE("a transfer alone keeps its time", "[ports]") {
  Simulator sim(1);
  ScaleUpPorts ports(sim, 4, kLink);
  double end = -1;
  transfer(sim, ports, 0, 830, ring(0, 1, 300e9), end);
  sim.run();
  CHECK(end == Approx(830).epsilon(1e-9));
}

TEST_CASE("two all-reduces overlapping end to end on one GPU share its NVLink", "[ports]") {
  // TP {0,1} and DP {0,2} (TP2xDP2's groups), 890 us alone each at 301.6
  // GB/s: each occupies GPU 0's directions 301.6 / 346.5 = 0.870 of the
  // time, so each moves at 1 / 1.870 of its pace and takes 1664.8 us; their
  // sum moves 2 x 268.4 MB in that: 322.5 GB/s a direction.
  const double r = 268435456.0 / 890e-6;
  const auto [tp, dp] = both({0, 890, ring(0, 1, r)}, {0, 890, ring(0, 2, r)});
  const double expected = 890.0 * (1.0 + r / kLink);
  CHECK(expected == Approx(1664.8).epsilon(1e-4));
  CHECK(tp == Approx(expected).epsilon(1e-6));
  CHECK(dp == Approx(expected).epsilon(1e-6));
  CHECK(2.0 * 268435456.0 / (expected * 1e-6) == Approx(322.5e9).epsilon(1e-3));
}

TEST_CASE("a partial overlap: the fluid re-solves at every start and end", "[ports]") {
  // Each occupies half the link's time, so beside each other they move at
  // 1 / 1.5 = 2/3 of their pace. A: from 0, 800 us alone. B: from 400, 800
  // us alone.
  // A: 400 us alone (400 done), then 2/3 pace; the engine's 800 us pass
  // with 400 + 400 x 2/3 = 666.7 done, the last 133.3 take 200 us: ends at
  // 1000. B: 2/3 pace from 400 to 1000 (400 done), alone after; its engine
  // time ends at 1200 with 600 done, the last 200 at full pace: ends at
  // 1400. Bytes: 400 r + 600 x 1.333 r + 400 r = 1600 r = 2 x 800 r.
  const double r = 0.5 * kLink;
  const auto [a, b] = both({0, 800, ring(0, 1, r)}, {400, 800, ring(0, 2, r)});
  CHECK(a == Approx(1000).epsilon(1e-6));
  CHECK(b == Approx(1400).epsilon(1e-6));
}

TEST_CASE("directions are separate: a send shares only its sender's out side", "[ports]") {
  // GPU 0 sends 0 -> 1 and receives 2 -> 0, 300 GB/s each way: no sharing.
  {
    const auto [a, b] = both({0, 100, {{0, 300e9, 0.0}, {1, 0.0, 300e9}}},
                             {0, 100, {{2, 300e9, 0.0}, {0, 0.0, 300e9}}});
    CHECK(a == Approx(100).epsilon(1e-9));
    CHECK(b == Approx(100).epsilon(1e-9));
  }
  // Two sends out of GPU 0 at 300 GB/s: each waits out the other's 300 /
  // 346.5 = 0.866 of the out side: 186.6 us.
  {
    const auto [a, b] = both({0, 100, {{0, 300e9, 0.0}, {1, 0.0, 300e9}}},
                             {0, 100, {{0, 300e9, 0.0}, {2, 0.0, 300e9}}});
    CHECK(a == Approx(100 * (1 + 300e9 / kLink)).epsilon(1e-6));
    CHECK(b == Approx(186.6).epsilon(1e-3));
  }
}

TEST_CASE("two all-reduces at once on 4 H100s, pair by pair", "[ports][measured]") {
  // Each pair's ops "together" ran wholly inside the other loop: an op of
  // alone time t beside a loop that offers its rate all along. The model's
  // time: t (1 + r_other / link). The link share 0.770 is fitted on the
  // 256/256 pair; the rest is held out.
  const auto doc = gcsim::test::read_json(gcsim::test::source_path(
      "calibration/measurements/h100-x4/concurrent_collectives_2026-11-27/concurrent_collectives.json"));
  int checked = 0;
  for (const auto& rec : doc["results"]) {
    const double tp_bytes = rec["tp_bytes"].get<double>(), dp_bytes = rec["dp_bytes"].get<double>();
    const auto& r0 = rec["ranks"][0];
    const double tp_alone = r0["alone"]["tp"]["median_us"].get<double>();
    const double dp_alone = r0["alone"]["dp"]["median_us"].get<double>();
    const double tp_both = r0["both"]["tp"]["overlapped_median_us"].get<double>();
    const double dp_both = r0["both"]["dp"]["overlapped_median_us"].get<double>();
    const double r_tp = tp_bytes / (tp_alone * 1e-6), r_dp = dp_bytes / (dp_alone * 1e-6);
    // The op beside a long transfer of the other's rate (ends after it).
    const auto beside = [](double alone_us, double rate, double other_rate) {
      Simulator sim(1);
      ScaleUpPorts ports(sim, 4, kLink);
      double op = -1, other = -1;
      transfer(sim, ports, 0, 100 * alone_us, ring(0, 2, other_rate), other);
      transfer(sim, ports, 0, alone_us, ring(0, 1, rate), op);
      sim.run();
      return op;
    };
    const double tp_model = beside(tp_alone, r_tp, r_dp), dp_model = beside(dp_alone, r_dp, r_tp);
    INFO("TP " << tp_bytes / 1048576 << " MiB / DP " << dp_bytes / 1048576 << " MiB: TP " << tp_both
                << " us measured, " << tp_model << " model; DP " << dp_both << " us, " << dp_model);
    if (tp_bytes == dp_bytes) {
      // The fit: FIT_FIGURES.
      CHECK(tp_model == Approx(tp_both).epsilon(0.03));
      CHECK(dp_model == Approx(dp_both).epsilon(0.03));
      continue;
    }
    // Held out, every all-reduce of 16 MiB or more: HELD_FIGURES; 11%:
    // issue 16's 10% per part and 1% for the ranks' spread (1-2% here).
    // The 4 MiB one (latency-bound alone, 114 GB/s) took 1.95x beside a 25
    // MiB one, the model 1.64x (-16%): not held.
    for (const auto& [bytes, model, measured] :
         {std::tuple{tp_bytes, tp_model, tp_both}, std::tuple{dp_bytes, dp_model, dp_both}}) {
      if (bytes < 16.0 * 1048576) continue;
      CHECK(model == Approx(measured).epsilon(0.11));
      ++checked;
    }
  }
  CHECK(checked == 11);
}

TEST_CASE("a port without a positive link rate is refused", "[ports]") {
  Simulator sim(1);
  CHECK_THROWS_AS(ScaleUpPorts(sim, 4, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(ScaleUpPorts(sim, 4, -1.0), std::invalid_argument);
}
