// ScaleUpPorts (models/cluster/scale_up_ports.h): transfers in flight at
// once on one GPU share each direction of its NVLink. Every figure below is
// worked by hand from the stretch rule
//   stretch = max(1, mean offered rate of the direction over the transfer's
//                    interval / payload rate).
#include <stdexcept>

#include "catch.h"
#include "models/cluster/scale_up_ports.h"

using gcsim::models::cluster::PortLoad;
using gcsim::models::cluster::ScaleUpPorts;
using gcsim::sim::Duration;
using gcsim::sim::Time;

namespace {

// An H100's NVLink a direction: 18 links x 25 GB/s x 0.824 payload share.
constexpr double kPayload = 18 * 25e9 * 0.824;  // 370.8 GB/s
// A 2-GPU ring all-reduce of 256 MiB alone in 830 us moves 256 MiB each way:
// 323.4 GB/s offered on each direction of both GPUs.
constexpr double kRing = 268435456.0 / 830e-6;

Time at_us(double us) { return Time::zero() + Duration::from_seconds(us * 1e-6); }

}  // namespace

TEST_CASE("a transfer alone under the payload rate is not stretched", "[ports]") {
  ScaleUpPorts ports(4, kPayload);
  auto use = ports.begin({{0, kRing, kRing}, {1, kRing, kRing}}, at_us(0));
  CHECK(ports.stretch(*use, at_us(830)) == 1.0);
  ports.end(*use, at_us(830));
}

TEST_CASE("two all-reduces overlapping end to end on one GPU share its NVLink", "[ports]") {
  // TP {0,1} and DP {0,2} (TP2xDP2's groups) from 0 to 830 us: GPU 0 offers
  // 2 x 323.4 = 646.8 GB/s a direction against 370.8, so each takes
  // 646.8 / 370.8 = 1.744x its time alone; GPUs 1 and 2 carry one each.
  ScaleUpPorts ports(4, kPayload);
  auto tp = ports.begin({{0, kRing, kRing}, {1, kRing, kRing}}, at_us(0));
  auto dp = ports.begin({{0, kRing, kRing}, {2, kRing, kRing}}, at_us(0));
  const double expected = 2.0 * kRing / kPayload;
  CHECK(expected == Approx(1.7444).epsilon(1e-3));
  CHECK(ports.stretch(*tp, at_us(830)) == Approx(expected).epsilon(1e-9));
  CHECK(ports.stretch(*dp, at_us(830)) == Approx(expected).epsilon(1e-9));
  // Their sum then moves at the payload rate: 2 x 256 MiB in 1.744 x 830 us.
  CHECK(2.0 * 268435456.0 / (expected * 830e-6) == Approx(kPayload).epsilon(1e-9));
  ports.end(*tp, at_us(830));
  ports.end(*dp, at_us(830));
}

TEST_CASE("a partial overlap stretches by the mean load over the interval", "[ports]") {
  // DP {0,2} from 400 to 1200 us; TP {0,1} from 0 to 800 us. TP's interval
  // sees DP's 323.4 GB/s for 400 of 800 us: mean (323.4 + 161.7) / 370.8 =
  // 1.308. DP's sees TP for 400 of its 800 us: the same.
  ScaleUpPorts ports(4, kPayload);
  auto tp = ports.begin({{0, kRing, kRing}, {1, kRing, kRing}}, at_us(0));
  auto dp = ports.begin({{0, kRing, kRing}, {2, kRing, kRing}}, at_us(400));
  const double expected = 1.5 * kRing / kPayload;
  CHECK(ports.stretch(*tp, at_us(800)) == Approx(expected).epsilon(1e-9));
  ports.end(*tp, at_us(800));
  CHECK(ports.stretch(*dp, at_us(1200)) == Approx(expected).epsilon(1e-9));
  ports.end(*dp, at_us(1200));
  // Ended transfers leave nothing behind: a later one alone is not stretched.
  auto later = ports.begin({{0, kRing, kRing}, {1, kRing, kRing}}, at_us(2000));
  CHECK(ports.stretch(*later, at_us(2830)) == 1.0);
}

TEST_CASE("directions are separate: a send shares only its sender's out side", "[ports]") {
  // A pipeline send 0 -> 1 at 300 GB/s beside a send 2 -> 0 at 300 GB/s:
  // GPU 0 sends one and receives the other, 300 GB/s each way: no stretch.
  ScaleUpPorts ports(4, kPayload);
  auto a = ports.begin({{0, 300e9, 0.0}, {1, 0.0, 300e9}}, at_us(0));
  auto b = ports.begin({{2, 300e9, 0.0}, {0, 0.0, 300e9}}, at_us(0));
  CHECK(ports.stretch(*a, at_us(100)) == 1.0);
  CHECK(ports.stretch(*b, at_us(100)) == 1.0);
  ports.end(*a, at_us(100));
  ports.end(*b, at_us(100));
  // Two sends out of GPU 0 at 300 GB/s: 600 / 370.8 = 1.618 on its out side.
  auto c = ports.begin({{0, 300e9, 0.0}, {1, 0.0, 300e9}}, at_us(200));
  auto d = ports.begin({{0, 300e9, 0.0}, {2, 0.0, 300e9}}, at_us(200));
  CHECK(ports.stretch(*c, at_us(300)) == Approx(600e9 / kPayload).epsilon(1e-9));
  CHECK(ports.stretch(*d, at_us(300)) == Approx(600e9 / kPayload).epsilon(1e-9));
}

TEST_CASE("a port without a positive payload rate is refused", "[ports]") {
  CHECK_THROWS_AS(ScaleUpPorts(4, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(ScaleUpPorts(4, -1.0), std::invalid_argument);
}
