// What a loop of back-to-back calls measures (nccl-tests' method, and
// calibration/microbench/nccl_sweep.py's): per call, one run less the part
// the next call overlaps. A broadcast chain's root waits for no one, so
// each call's hops and fill down the chain overlap the next call; a ring's
// ranks wait on their neighbours in every step, so its calls do not.
#include "calibration/fit/collective_fit.h"
#include "catch.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::Protocol;

namespace {

models::gpu::GpuSpec one_switch_gpu() {
  models::gpu::GpuSpec gpu;
  gpu.name = "test";
  gpu.nvlink_bandwidth = sim::Bandwidth::gb_per_s(450);
  gpu.nvlink_latency = sim::ns(int64_t{600});  // 0.6 us GPU to GPU through the switch
  return gpu;
}

// No ceilings or slices; LL rings cost 5 us per call and 1 us per step
// beyond the path's 0.6 us.
models::collectives::CollectiveParams latency_only() {
  auto p = models::collectives::ideal_params(24);
  p.latency_of(Algorithm::ring, Protocol::ll).base = sim::us(5.0);
  p.latency_of(Algorithm::ring, Protocol::ll).step_scale_up = sim::us(1.0);
  return p;
}

calibration::NcclMeasurement small(CollectiveOp op, int ranks, int iters) {
  calibration::NcclMeasurement m;
  m.op = op;
  m.ranks = ranks;
  m.bytes = 8;
  m.algorithm = Algorithm::ring;
  m.protocol = Protocol::ll;
  m.iters = iters;
  return m;
}

}  // namespace

TEST_CASE("back-to-back calls: a broadcast chain overlaps its hops, a ring does not",
          "[collectives][collective]") {
  const auto gpu = one_switch_gpu();
  const auto p = latency_only();
  // One 8-byte broadcast on 4 GPUs: 5 us, then 3 hops of 1.6 us = 9.8 us
  // (8 bytes' wire time, 18 ps, aside).
  const double one = calibration::predict_us(p, gpu, small(CollectiveOp::broadcast, 4, 0), false);
  CHECK(one == Approx(5.0 + 3 * 1.6).epsilon(1e-4));
  // 200 back to back: the 4.8 us down the chain overlap the next call for
  // all but the last: 9.8 - 4.8 x 199/200 = 5.024 us per call.
  CHECK(calibration::predict_us(p, gpu, small(CollectiveOp::broadcast, 4, 200), false) ==
        Approx(9.8 - 4.8 * 199.0 / 200.0).epsilon(1e-4));
  // Two GPUs: the one hop overlaps as well (the root's next call starts
  // while its last one lands): 6.6 us alone, 5.006 us per call of 200.
  CHECK(calibration::predict_us(p, gpu, small(CollectiveOp::broadcast, 2, 200), false) ==
        Approx(6.6 - 1.6 * 199.0 / 200.0).epsilon(1e-4));
  // An all-gather ring on 4 GPUs: 3 dependent steps in every call, one
  // call's time however many run back to back.
  const double ring = calibration::predict_us(p, gpu, small(CollectiveOp::all_gather, 4, 0), false);
  CHECK(ring == Approx(5.0 + 3 * 1.6).epsilon(1e-4));
  CHECK(calibration::predict_us(p, gpu, small(CollectiveOp::all_gather, 4, 200), false) ==
        Approx(ring).epsilon(1e-9));
}
