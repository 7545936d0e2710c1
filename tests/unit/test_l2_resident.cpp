// A pass over tensors the kernels just before it wrote reads them from L2
// (models/gpu/l2_cache.h), against eager PyTorch's passes on one H200,
// 2026-11-28 (calibration/measurements/h200-x1/l2_resident_2026-11-28:
// add, SiLU and an fp32 cast over 256 KiB-256 MiB, `warm` after a fill of
// their inputs, `cold` after a 1 GiB read; each kernel profiled). The
// preset's l2_bandwidth is fitted (calibration/fit/l2_fit.h) on the warm
// adds that fit in the 60 MiB L2; the warm SiLU and cast, the warm passes
// past L2 and the cold ones are held out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "calibration/fit/l2_fit.h"
#include "catch.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/l2_cache.h"
#include "preset_fixtures.h"
#include "workloads/estimate/kernel_estimate.h"

using namespace gcsim;
using calibration::L2PassPoint;

namespace {

std::vector<L2PassPoint> points() {
  return calibration::load_l2_pass_points(std::string(GCSIM_SOURCE_DIR) +
                                          "/calibration/measurements/h200-x1/l2_resident_2026-11-28/"
                                          "l2_resident_passes.json");
}

template <typename Keep>
std::vector<L2PassPoint> select(const std::vector<L2PassPoint>& all, Keep keep) {
  std::vector<L2PassPoint> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), keep);
  return out;
}

// The fitted shapes: the adds whose 3 x input bytes fit in the L2 and carry
// bytes that matter (from 1 MiB an input; below it the launch and a wave's
// overhead are 70-90% of the time).
bool fitted(const L2PassPoint& p, double l2) {
  return p.op == "add" && p.warm && p.footprint_bytes <= l2 && p.shape.elements >= (int64_t{1} << 19);
}

}  // namespace

TEST_CASE("L2 bandwidth: the H200 preset's is the fit on the warm adds that fit in L2", "[l2][measured]") {
  const models::gpu::GpuSpec spec = test::calibrated_gpu_preset("h200-sxm");
  REQUIRE(spec.l2_size.count() == 62914560);  // torch's L2_cache_size on the measured H200
  REQUIRE(spec.l2_bandwidth.has_value());
  const double l2 = static_cast<double>(spec.l2_size.count());
  const auto all = points();
  const auto fit = calibration::fit_l2_bandwidth(spec, select(all, [&](const L2PassPoint& p) { return fitted(p, l2); }));
  std::printf("H200 l2_bandwidth fit: %.0f GB/s (preset %.0f GB/s)\n", fit.bytes_per_s() * 1e-9,
              spec.l2_bandwidth->bytes_per_s() * 1e-9);
  CHECK(std::abs(fit.bytes_per_s() - spec.l2_bandwidth->bytes_per_s()) <= 1e9);  // whole GB/s
  // Physical: above the HBM's datasheet rate (L2 is the faster level) and
  // below the ~2x that published Hopper L2 read rates reach over HBM.
  CHECK(fit > spec.hbm_bandwidth);
  CHECK(fit.bytes_per_s() < 2.0 * spec.hbm_bandwidth.bytes_per_s());
}

TEST_CASE("L2-resident passes on one H200: what the fit leaves, and past L2", "[l2][measured]") {
  const models::gpu::GpuSpec spec = test::calibrated_gpu_preset("h200-sxm");
  const double l2 = static_cast<double>(spec.l2_size.count());
  const auto all = points();
  // The fit's own increments (the time each warm add's size adds over the
  // one before): one rate where the measured rate falls as L2 fills, from
  // ~7.3 TB/s at 3-12 MiB to ~5.3 TB/s at 24-48 MiB (the lines past the
  // half of L2 near each SM's partition; not modelled). The fitted rate
  // must lie inside the measured ones: gcsim's increments neither all above
  // nor all below.
  std::vector<double> increments;
  calibration::l2_increment_mean_abs_error(spec, select(all, [&](const L2PassPoint& p) { return fitted(p, l2); }),
                                           &increments);
  REQUIRE(increments.size() == 4);  // 3-6, 6-12, 12-24, 24-48 MiB
  for (double e : increments) std::printf("warm add increment: %+.1f%%\n", 100.0 * e);
  CHECK(*std::max_element(increments.begin(), increments.end()) >= 0.0);
  CHECK(*std::min_element(increments.begin(), increments.end()) <= 0.0);
  // Past L2 (an add over 32-256 MiB inputs: 96-768 MiB) a warm pass gains
  // nothing, measured (24.61 us warm against 22.46 cold at 32 MiB) or
  // modelled (not resident): held out, within issue 16's 10%.
  const auto past = select(all, [&](const L2PassPoint& q) { return q.op == "add" && q.warm && q.footprint_bytes > l2; });
  REQUIRE(past.size() == 4);
  for (const auto& p : past) {
    INFO(p.footprint_bytes / 1048576.0 << " MiB");
    CHECK_FALSE(models::gpu::memory_kernel(spec, p.shape).l2_resident);
    CHECK(calibration::l2_pass_duration_us(spec, p) == Approx(p.duration_us).epsilon(0.10));
  }
  // Every op gains from L2 where its bytes matter and fit (inputs of 4-16
  // MiB, measured warm / cold 0.66-0.93), and gcsim's warm pass never takes
  // longer than its cold one. Not held to a figure: gcsim's SiLU streams
  // where the kernel is bound by its exponentials (warm -18 .. -34%), and
  // its fp32 cast is a generic pass bound by SM work (+30 .. +49% warm,
  // +14 .. +22% cold; calibration/fit/l2_resident_2026-11-28.md).
  for (const auto& p : select(all, [&](const L2PassPoint& q) {
         return q.warm && q.footprint_bytes <= l2 && q.shape.elements >= (int64_t{1} << 21);
       })) {
    const auto cold = select(all, [&](const L2PassPoint& q) {
      return !q.warm && q.op == p.op && q.shape.elements == p.shape.elements;
    });
    REQUIRE(cold.size() == 1);
    INFO(p.op << " " << p.footprint_bytes / 1048576.0 << " MiB");
    CHECK(p.duration_us < cold[0].duration_us);
    CHECK(calibration::l2_pass_duration_us(spec, p) <= calibration::l2_pass_duration_us(spec, cold[0]));
  }
}

TEST_CASE("L2 residency: the pass's bytes must fit, the GPU must have a measured rate", "[l2]") {
  const models::gpu::GpuSpec h200 = test::calibrated_gpu_preset("h200-sxm");
  // By hand: an add over 8 Mi bf16 elements moves 3 x 16 MiB = 48 MiB,
  // under the 60 MiB L2; over 16 Mi, 96 MiB, past it.
  models::gpu::MemoryOpShape add;
  add.kind = models::gpu::MemoryOpKind::elementwise;
  add.inputs = 2;
  add.elements = int64_t{8} << 20;
  add.inputs_in_l2 = true;
  CHECK(models::gpu::memory_kernel(h200, add).l2_resident);
  add.elements = int64_t{16} << 20;
  CHECK_FALSE(models::gpu::memory_kernel(h200, add).l2_resident);
  // Inputs from HBM (weights, gradients, after a flush): never resident.
  add.elements = int64_t{1} << 20;
  add.inputs_in_l2 = false;
  CHECK_FALSE(models::gpu::memory_kernel(h200, add).l2_resident);
  // A GPU with no measured L2 rate streams every byte from HBM.
  models::gpu::GpuSpec unmeasured = h200;
  unmeasured.l2_bandwidth.reset();
  add.inputs_in_l2 = true;
  CHECK_FALSE(models::gpu::memory_kernel(unmeasured, add).l2_resident);
  // A full grid shares L2's rate evenly; one SM alone is held to its own
  // reach (hbm.h single_sm_hbm_reach, 133.7 GB/s on the H200 preset).
  CHECK(models::gpu::l2_bandwidth_per_sm(h200, h200.sm_count, 1.0).bytes_per_s() ==
        Approx(h200.l2_bandwidth->bytes_per_s() / h200.sm_count));
  CHECK(models::gpu::l2_bandwidth_per_sm(h200, 1, 0.5).bytes_per_s() == Approx(0.5 * 133.7e9));
  // The resident kernel draws no HBM (power, a collective's share).
  add.elements = int64_t{4} << 20;
  const auto k = models::gpu::memory_kernel(h200, add);
  REQUIRE(k.l2_resident);
  CHECK(k.hbm_bytes_per_tile() == 0.0);
  CHECK(k.bytes_per_tile > 0.0);
  // explain's whiteboard roofline streams it at L2's rate: 3 x 8 MiB over
  // 7290 GB/s (the add's access fraction 1 here: a plain shape).
  const auto e = workloads::estimate::estimate_kernel(h200, k);
  CHECK(e.roofline.formula.find("bytes / L2 rate") != std::string::npos);
  CHECK(e.roofline.value == Approx(3.0 * 8.0 * 1048576.0 / 7290e9).epsilon(1e-9));
}

TEST_CASE("an L2 pass file of another schema is refused, naming it", "[l2]") {
  const std::string path = std::string(GCSIM_SOURCE_DIR) +
                           "/calibration/measurements/h200-x1/calibration_set_2026-11-28/row_reduce.json";
  try {
    calibration::load_l2_pass_points(path);
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("row_reduce.json") != std::string::npos);
    CHECK(std::string(e.what()).find("l2_resident_passes.v1") != std::string::npos);
  }
}
