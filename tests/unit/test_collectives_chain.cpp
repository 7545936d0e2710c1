// A broadcast chain as NCCL 2.28 runs it on Simple: one buffer step
// (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8 = 512 KiB) per slice, forwarded only
// once its sender has posted the whole of it, so each hop beyond the first
// adds one step (or a channel's bytes, if fewer) at a channel's share of the
// link; the root pays its own hop in every call of a back-to-back loop, the
// rest trails it. And a link carrying traffic both ways: each direction
// loses a share to the other's in-band responses.
#include <cstdint>

#include "calibration/fit/collective_fit.h"
#include "catch.h"
#include "unit/collective_fit_values.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::Protocol;

namespace {

// No latencies, ceilings or ring slices; Simple moves 512 KiB steps. The
// GPUs (test::switch_gpu): 450 GB/s each way, 0.6 us apart.
models::collectives::CollectiveParams step_only() {
  auto p = models::collectives::ideal_params(24);
  p.protocol_of(Protocol::simple).step = sim::KiB(512);
  return p;
}

calibration::NcclMeasurement bcast(int ranks, int64_t bytes, Protocol proto, int iters) {
  calibration::NcclMeasurement m;
  m.op = CollectiveOp::broadcast;
  m.ranks = ranks;
  m.bytes = bytes;
  m.algorithm = Algorithm::ring;
  m.protocol = proto;
  m.iters = iters;
  return m;
}

// How far a broadcast's last rank trails its root: one call less the
// per-call time of an endless back-to-back loop.
double lag_us(const models::collectives::CollectiveParams& p, int ranks, int64_t bytes,
              Protocol proto) {
  const auto gpu = test::switch_gpu("test");
  const double one = calibration::predict_us(p, gpu, bcast(ranks, bytes, proto, 0), false);
  const double loop =
      calibration::predict_us(p, gpu, bcast(ranks, bytes, proto, 1'000'000), false);
  return (one - loop) / (1.0 - 1e-6);
}

}  // namespace

TEST_CASE("broadcast chain: Simple fills with one buffer step per hop beyond the first",
          "[collectives][collective]") {
  const auto p = step_only();
  // 24 channels share a GPU's 450 GB/s: 18.75 GB/s each. 4 GPUs: the two
  // ranks between the ends each hold a slice before forwarding it; the
  // hops beyond the root's own trail it by 0.6 us each.
  const double rate = 450e9 / 24;
  // 64 MiB: 2.8 MB per channel, so whole 512 KiB steps.
  CHECK(lag_us(p, 4, int64_t{64} << 20, Protocol::simple) ==
        Approx(2 * 0.6 + 2 * 524288 / rate * 1e6).epsilon(1e-4));
  // 8 MiB: 349,525 B per channel, less than a step: the channel's bytes.
  CHECK(lag_us(p, 4, int64_t{8} << 20, Protocol::simple) ==
        Approx(2 * 0.6 + 2 * (8.0 * 1048576 / 24) / rate * 1e6).epsilon(1e-4));
  // 2 GPUs: one hop, the root's own, nothing trails.
  CHECK(lag_us(p, 2, int64_t{64} << 20, Protocol::simple) == Approx(0.0).margin(1e-3));
  // LL flags every line: no step to wait for (its slice here is 0), and
  // every hop, the root's included, trails the root.
  CHECK(lag_us(p, 4, int64_t{64} << 20, Protocol::ll) == Approx(3 * 0.6).epsilon(1e-4));
}

TEST_CASE("link both ways: each direction loses a share to the other's responses",
          "[collectives][collective]") {
  auto p = models::collectives::ideal_params(24);
  p.scale_up_reverse_overhead = 0.02;
  const auto gpu = test::switch_gpu("test");
  // 2 GPUs, 1 GB: a broadcast loads one direction of each GPU's links, a
  // send/recv (each rank sends to the other) both, so it takes 2 % longer;
  // both pay the same 0.6 us path latency.
  const int64_t bytes = 1'000'000'000;
  const double one_way =
      calibration::predict_us(p, gpu, bcast(2, bytes, Protocol::simple, 0), false);
  calibration::NcclMeasurement both = bcast(2, bytes, Protocol::simple, 0);
  both.op = CollectiveOp::send_recv;
  both.algorithm = Algorithm::direct;
  const double two_way = calibration::predict_us(p, gpu, both, false);
  CHECK(one_way == Approx(0.6 + bytes / 450e9 * 1e6).epsilon(1e-6));
  CHECK(two_way == Approx(0.6 + 1.02 * bytes / 450e9 * 1e6).epsilon(1e-6));
  // A 4-GPU broadcast's middle ranks receive and send the whole buffer:
  // back to back (no step flags here, so every hop overlaps the next
  // call), the chain runs at the link over 1.02 too.
  const double chain =
      calibration::predict_us(p, gpu, bcast(4, bytes, Protocol::simple, 1'000'000), false);
  CHECK(chain == Approx(1.02 * bytes / 450e9 * 1e6).epsilon(1e-5));
}
