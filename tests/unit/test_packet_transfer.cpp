// Packet model: single transfers against closed-form store-and-forward
// times, and determinism.
#include <string>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/analytical_model.h"
#include "models/network/packet/packet_model.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {

sim::Time run_one(Fabric& f, const PacketConfig& cfg, const Transfer& t, NetworkStats* st = nullptr) {
  Routing r(f, 1);
  sim::Simulator sim;
  PacketModel m(sim, f, r, cfg);
  sim::Time done_at = sim::Time::max();
  m.start(t, [&] { done_at = sim.now(); });
  sim.run();
  if (st) *st = m.stats(done_at - sim::Time::zero());
  return done_at;
}

}  // namespace

TEST_CASE("packet model: 1 GiB between nodes is size/bandwidth + latency + one MTU per hop",
          "[packet]") {
  // small_fabric: GPU -PCIe 64 GB/s- NIC -400G- leaf -400G- spine -400G- leaf
  // -400G- NIC -PCIe- GPU, 0.5 us per hop. 1 GiB = 262144 packets of 4096 B.
  // Serialization of one packet: 4096 B / 64 GB/s = 64 ns on PCIe,
  // 4096 B / 50 GB/s = 81.92 ns on the 400G links.
  // A store-and-forward pipeline finishes when the last packet, sent one
  // bottleneck serialization after the one before, has crossed every hop:
  //   T = (N - 1) × 81.92 ns + Σ_hops serialization + Σ_hops latency
  //     = size / 50 GB/s + 3 us + (2 × 64 + 4 × 81.92 - 81.92) ns,
  // i.e. the α-β figure plus one MTU serialization per hop but the
  // bottleneck's: 373.76 ns on 21.475 ms (1.7e-5).
  Fabric f = test::small_fabric({});
  const Transfer t{0, 2, sim::GiB(1)};
  const int64_t n = 262144;
  const int64_t expect_ps = (n - 1) * 81920 + 2 * 64000 + 4 * 81920 + 6 * 500000;
  const double alpha_beta_s = 3e-6 + 1073741824.0 / 50e9;

  SECTION("with DCQCN pacing the sender at line rate") {
    NetworkStats st;
    const sim::Time done = run_one(f, {}, t, &st);
    CHECK(done.ps() == expect_ps);
    CHECK(done.seconds() == Approx(alpha_beta_s).epsilon(0.01));
    CHECK(st.bytes_delivered == sim::GiB(1));
    CHECK(st.transfers == 1);
    CHECK(st.drops == 0);
    CHECK(st.ecn_marks == 0);  // nothing queues in the switches
    CHECK(st.pfc_pauses == 0);
    CHECK(st.max_link_utilization == Approx(1073741824.0 / 50e9 / done.seconds()).epsilon(1e-9));
  }
  SECTION("without DCQCN the NIC paces the GPU through PCIe pauses; same time") {
    // The GPU sends at 64 GB/s, the NIC's buffer fills to xoff and pauses
    // the PCIe link (credit flow control), but never runs dry (xon = 1 MiB),
    // so the 400G link stays busy from the first packet to the last.
    PacketConfig cfg;
    cfg.dcqcn.enabled = false;
    NetworkStats st;
    const sim::Time done = run_one(f, cfg, t, &st);
    CHECK(done.ps() == expect_ps);
    CHECK(st.pfc_pauses == 0);  // PCIe pauses are not PFC on the network
    CHECK(st.drops == 0);
  }
  SECTION("the analytical model agrees within 1%") {
    Routing r(f, 1);
    sim::Simulator sim;
    AnalyticalModel a(sim, f, r);
    CHECK(a.transfer_time(t)->ps() == Approx(static_cast<double>(expect_ps)).epsilon(0.01));
  }
}

TEST_CASE("packet model: 1 GiB inside a node over NVSwitch", "[packet]") {
  // GPU -450 GB/s, 0.3 us- NVSwitch -450 GB/s, 0.3 us- GPU. One packet:
  // 4096 / 450e9 s = 9.1022 ns, rounded once to 9102 ps. Both hops run at
  // the same rate, so T = (N - 1) × 9102 + 2 × 9102 ps + 0.6 us, within
  // 2.4e-5 of 1 GiB / 450 GB/s + 0.6 us (the rounding of 0.22 ps per packet).
  Fabric f = test::small_fabric({});
  const sim::Time done = run_one(f, {}, {0, 1, sim::GiB(1)});
  CHECK(done.ps() == (int64_t{262144} - 1) * 9102 + 2 * 9102 + 600000);
  CHECK(done.seconds() == Approx(0.6e-6 + 1073741824.0 / 450e9).epsilon(0.01));
}

TEST_CASE("packet model: the last packet carries the remainder; empty and self transfers",
          "[packet]") {
  Fabric f = test::small_fabric({});
  // 10000 B = 4096 + 4096 + 1808 over NVSwitch: the pipeline is paced by the
  // full packets (9102 ps each); the last, 1808 B, serializes in
  // round(1808 / 450e9 s) = 4018 ps per hop. Packets reach the switch at
  // 309102, 318204 and 322222 ps; the switch sends packet 0 at 309102,
  // packet 1 at 318204 (until 327306), so the last waits for that and
  // arrives at 327306 + 4018 + 300000 = 631324 ps.
  CHECK(run_one(f, {}, {0, 1, sim::Bytes(10000)}).ps() == 631324);
  // An empty transfer is one empty packet: latency only.
  CHECK(run_one(f, {}, {0, 1, sim::Bytes(0)}).ps() == 600000);
  CHECK(run_one(f, {}, {1, 1, sim::GiB(1)}).ps() == 0);
}
