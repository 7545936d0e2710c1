// The packet model's mechanisms alone, against hand-computed figures:
// dynamic thresholds, PFC thresholds and headroom, ECN marking, the DCQCN
// reaction point, the egress scheduler and the wait-for cycle search.
#include <vector>

#include "catch.h"
#include "models/network/packet/dcqcn.h"
#include "models/network/packet/deadlock_detector.h"
#include "models/network/packet/ecn_marker.h"
#include "models/network/packet/egress_port.h"
#include "models/network/packet/pfc.h"
#include "models/network/packet/switch_buffer.h"

using namespace gcsim;
using namespace gcsim::models::network;

TEST_CASE("shared buffer: Choudhury-Hahne dynamic threshold", "[packet][parts]") {
  // 1 MB pool, alpha = 1: an empty pool lets one queue take up to 1 MB ×
  // alpha of what is free. With 600 kB used, 400 kB are free: a queue
  // holding 390 kB may add a 4 kB packet (394 <= 400) but not a 16 kB one.
  SwitchBuffer b(1'000'000);
  CHECK(b.dynamic_threshold(1.0) == 1'000'000.0);
  b.take(600'000);
  CHECK(b.free() == 400'000);
  CHECK(b.admits(390'000, 4'000, 1.0));
  CHECK_FALSE(b.admits(390'000, 16'000, 1.0));
  // alpha = 0.5: the queue may hold 200 kB.
  CHECK(b.admits(196'000, 4'000, 0.5));
  CHECK_FALSE(b.admits(197'000, 4'000, 0.5));
  // Steady state of one congested queue Q = alpha (B - Q): Q = B/2 at alpha 1.
  SwitchBuffer c(1'000'000);
  int64_t q = 0;
  while (c.admits(q, 1000, 1.0)) {
    c.take(1000);
    q += 1000;
  }
  CHECK(q == 500'000);
  // A pool smaller than its reserved headroom has nothing to share.
  CHECK(SwitchBuffer(-5).capacity() == 0);
}

TEST_CASE("PFC: Xoff above the threshold, headroom after it, Xon at the low mark",
          "[packet][parts][pfc]") {
  // One ingress port (link 0), headroom 20 kB, xoff 10 kB, xon 5 kB,
  // pool 1 MB (the dynamic threshold, alpha × free ~ 1 MB, is far above).
  SwitchBuffer pool(1'000'000);
  PfcIngress pfc({20'000}, {10'000, 5'000, 1.0});
  for (int i = 0; i < 2; ++i) {
    const auto a = pfc.admit(0, 3, 4'000, pool);
    CHECK(a.accepted);
    CHECK_FALSE(a.send_xoff);
  }
  // The third 4 kB packet makes 12 kB > 10 kB: Xoff.
  auto a = pfc.admit(0, 3, 4'000, pool);
  CHECK(a.send_xoff);
  CHECK_FALSE(a.in_headroom);
  CHECK(pfc.xoff_sent(0, 3));
  CHECK_FALSE(pfc.xoff_sent(0, 2));  // per priority
  // What arrives while the pause travels goes to the headroom: 5 × 4 kB
  // fill it exactly; a sixth is lost.
  for (int i = 0; i < 5; ++i) {
    a = pfc.admit(0, 3, 4'000, pool);
    CHECK(a.accepted);
    CHECK(a.in_headroom);
    CHECK_FALSE(a.send_xoff);  // one Xoff per episode
  }
  CHECK(pfc.headroom_used(0) == 20'000);
  CHECK_FALSE(pfc.admit(0, 3, 4'000, pool).accepted);
  CHECK(pool.used() == 12'000);  // the headroom lies outside the pool
  // Departures drain the headroom first: 32 kB buffered; Xon at <= 5 kB.
  CHECK(pfc.bytes(0, 3) == 32'000);
  int departures = 0;
  while (!pfc.release(0, 3, 4'000, pool)) ++departures;
  // 32 - 4 × 7 = 4 kB <= 5 kB after the 7th departure.
  CHECK(departures == 6);
  CHECK(pfc.bytes(0, 3) == 4'000);
  CHECK(pfc.headroom_used(0) == 0);
  CHECK(pool.used() == 4'000);
  CHECK_FALSE(pfc.xoff_sent(0, 3));
}

TEST_CASE("PFC: the dynamic threshold lowers Xoff and Xon when the pool is short",
          "[packet][parts][pfc]") {
  // Pool 100 kB, alpha 1, xoff 1 MB: the static cap never binds; Xoff when
  // an ingress holds more than the free pool. After 48 kB: 52 kB free, no
  // Xoff; after 52 kB: 48 kB free < 52 kB held: Xoff. Xon at
  // xon × threshold / xoff = 0.5 × free.
  SwitchBuffer pool(100'000);
  PfcIngress pfc({50'000}, {1'000'000, 500'000, 1.0});
  bool xoff = false;
  int64_t held = 0;
  while (!xoff) {
    xoff = pfc.admit(0, 0, 4'000, pool).send_xoff;
    held += 4'000;
  }
  CHECK(held == 52'000);
  // Drain: after k departures held = 52 - 4k, free = 48 + 4k; Xon once
  // 52 - 4k <= 0.5 (48 + 4k), i.e. k >= 4.67: the 5th departure.
  int k = 0;
  bool xon = false;
  while (!xon) {
    xon = pfc.release(0, 0, 4'000, pool);
    ++k;
  }
  CHECK(k == 5);
}

TEST_CASE("ECN: RED-like marking probability", "[packet][parts]") {
  // kmin 150 KiB, kmax 1500 KiB, pmax 1%: at the midpoint 825 KiB the
  // probability is 0.5%; above kmax every packet is marked.
  const EcnMarker m(EcnConfig{});
  CHECK(m.probability(150 * 1024) == 0.0);
  CHECK(m.probability(825 * 1024) == Approx(0.005));
  CHECK(m.probability(1500 * 1024) == Approx(0.01));
  CHECK(m.probability(1500 * 1024 + 1) == 1.0);
  EcnConfig off;
  off.enabled = false;
  CHECK(EcnMarker(off).probability(10 << 20) == 0.0);
  // The empirical rate matches: 200000 draws at p = 0.5%.
  sim::RandomStream rng(1, "test");
  int marks = 0;
  for (int i = 0; i < 200000; ++i) marks += m.mark(825 * 1024, rng);
  CHECK(marks == Approx(1000).epsilon(0.1));
}

TEST_CASE("DCQCN reaction point: cut, fast recovery, additive and hyper increase",
          "[packet][parts][dcqcn]") {
  // Zhu et al. 2015, Algorithm 1, with g = 1/256, K = T = 55 us, B = 10 MB,
  // F = 5, R_AI = 4 Gb/s (0.5 GB/s), R_HAI = 40 Gb/s (5 GB/s); line 50 GB/s.
  const DcqcnConfig cfg;
  const sim::Time t0 = sim::Time::zero();
  DcqcnRateControl rp(cfg, 50e9, t0);
  CHECK(rp.rate() == 50e9);
  CHECK(rp.alpha() == 1.0);
  // A CNP: Rt = 50, Rc = 50 × (1 - 1/2) = 25 GB/s, alpha = 1 (stays 1).
  rp.on_cnp(t0);
  CHECK(rp.target() == 50e9);
  CHECK(rp.rate() == 25e9);
  CHECK(rp.alpha() == Approx(1.0));
  // Fast recovery: each timer period halves the gap to the target:
  // 37.5, 43.75, 46.875, 48.4375 after 4 periods (stage 4 < F).
  rp.advance(t0 + sim::us(int64_t{4 * 55}));
  CHECK(rp.rate() == Approx(48.4375e9));
  CHECK(rp.target() == 50e9);
  // Alpha decayed 4 periods without a CNP: (1 - 1/256)^4.
  CHECK(rp.alpha() == Approx(std::pow(255.0 / 256.0, 4)));
  // A second CNP at 220 us: Rt = 48.4375, Rc × (1 - alpha/2).
  const double alpha = rp.alpha();
  rp.on_cnp(t0 + sim::us(int64_t{220}));
  CHECK(rp.target() == Approx(48.4375e9));
  CHECK(rp.rate() == Approx(48.4375e9 * (1 - alpha / 2)));
  const double cut = rp.rate();
  // Five timer periods: stages 1..4 fast recovery, stage 5 (= F) additive:
  // Rt += 0.5 GB/s, then Rc = (Rt + Rc) / 2.
  rp.advance(t0 + sim::us(int64_t{220 + 5 * 55}));
  double rc = cut;
  for (int i = 0; i < 4; ++i) rc = (48.4375e9 + rc) / 2;
  rc = (48.9375e9 + rc) / 2;
  CHECK(rp.target() == Approx(48.9375e9));
  CHECK(rp.rate() == Approx(rc));
  // Bytes: 10 MB sent is one byte-counter event. The timer stage is
  // already 5, so max(stages) = F: no longer fast recovery; min(stages) =
  // 1 <= F: additive.
  rp.on_sent(10'000'000, t0 + sim::us(int64_t{220 + 5 * 55}));
  CHECK(rp.target() == Approx(49.4375e9));
  CHECK(rp.rate() == Approx((49.4375e9 + rc) / 2));
  // Hyper increase once both stages pass F.
  DcqcnRateControl h(cfg, 50e9, t0);
  h.on_cnp(t0);
  h.on_cnp(t0);  // Rt = 25, Rc = 12.5 GB/s
  CHECK(h.target() == Approx(25e9));
  CHECK(h.rate() == Approx(12.5e9));
  // 60 MB: byte stages 1..4 recover toward 25, stages 5 and 6 add R_AI.
  h.on_sent(60'000'000, t0);
  CHECK(h.target() == Approx(26e9));
  // Timer stages 1..5: min(6, t) <= F, additive each.
  h.advance(t0 + sim::us(int64_t{5 * 55}));
  CHECK(h.target() == Approx(28.5e9));
  // Timer stage 6: min(6, 6) - F = 1 step of R_HAI.
  h.advance(t0 + sim::us(int64_t{6 * 55}));
  CHECK(h.target() == Approx(33.5e9));
  // Never above line rate, never below the floor.
  DcqcnRateControl low(cfg, 50e9, t0);
  for (int i = 0; i < 100; ++i) low.on_cnp(t0);
  CHECK(low.rate() == Approx(cfg.min_rate.bytes_per_s()));
  low.advance(t0 + sim::seconds(int64_t{1}));
  CHECK(low.rate() <= 50e9);
}

TEST_CASE("egress port: priorities round robin, paused ones skipped, bytes until dequeued",
          "[packet][parts]") {
  PacketPool pool;
  EgressPort port;
  auto make = [&](int prio, uint32_t bytes) {
    const uint32_t p = pool.allocate();
    pool[p].priority = static_cast<uint8_t>(prio);
    pool[p].bytes = bytes;
    pool[p].seq = static_cast<uint32_t>(prio * 10 + pool.in_use());
    return p;
  };
  const uint32_t a0 = make(0, 100), a1 = make(0, 100), b0 = make(3, 50), c0 = make(5, 10);
  for (uint32_t p : {a0, a1, b0, c0}) port.enqueue(pool, p);
  CHECK(port.queued_bytes(int64_t{0}) == 260);
  CHECK(port.queued_bytes(0) == 200);
  port.pause(3);
  CHECK(port.waiting() == 0b100001);  // priorities 0 and 5; 3 is paused
  CHECK(port.dequeue(pool) == a0);
  CHECK(port.queued_bytes(0) == 100);
  CHECK(port.dequeue(pool) == c0);  // priority 3 is paused
  CHECK(port.dequeue(pool) == a1);
  CHECK(port.dequeue(pool) == kNilPacket);  // only paused priority 3 is left
  port.resume(3);
  CHECK(port.dequeue(pool) == b0);
  CHECK(port.queued_bytes(int64_t{0}) == 0);
  // The serializer: busy until 1000 ps with a 50-byte packet, which counts
  // in the port's bytes until then.
  port.start(1000, 50);
  CHECK(port.queued_bytes(int64_t{999}) == 50);
  CHECK(port.queued_bytes(int64_t{1000}) == 0);
}

TEST_CASE("wait-for graph: cycles of paused ports", "[packet][parts][deadlock]") {
  auto w = [](int link) { return WaitPort{link, 0}; };
  // 1 -> 2 -> 3 -> 1 is a cycle; 4 -> 1 waits on it but is not in it;
  // 5 -> 6 is a chain; 7 waits on itself.
  const auto cycles = find_wait_cycles({{w(4), w(1)},
                                        {w(1), w(2)},
                                        {w(2), w(3)},
                                        {w(3), w(1)},
                                        {w(5), w(6)},
                                        {w(7), w(7)}});
  REQUIRE(cycles.size() == 2);
  CHECK(cycles[0] == std::vector<WaitPort>{w(1), w(2), w(3)});
  CHECK(cycles[1] == std::vector<WaitPort>{w(7)});
  // Priorities are separate ports: a wait on another priority closes nothing.
  CHECK(find_wait_cycles({{w(1), w(2)}, {w(2), {1, 1}}}).empty());
  CHECK(find_wait_cycles({}).empty());
}
