// The SM side of memory kernels that compute (kernel_cost_model.h): the
// special-function units beside the fp32 lanes, and the unhidden cycles of
// rows a reduction gives a CTA each. Hand-computed on the H100 datasheet
// spec (gpu_test_specs.h: 132 SMs, 67 TF/s fp32, 3350 GB/s; default
// efficiencies: vector 0.7, hbm 0.9) at its 1.98 GHz boost clock and the
// CUDA programming guide's 16 SFU results per SM per clock (sm_90).
#include <cstdint>
#include <stdexcept>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel_cost_model.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

gpu::GpuSpec h100() {
  gpu::GpuSpec s = gcsim::test::h100_datasheet();
  s.sm_clock_ghz = 1.98;
  return s;
}

// 2^26 fp32 elements read and written (8 B each): 512 MiB, 132 tiles.
gpu::MemoryOpShape stream(double flops_per_element) {
  gpu::MemoryOpShape s;
  s.kind = gpu::MemoryOpKind::elementwise;
  s.elements = int64_t{1} << 26;
  s.bytes_per_element = 8;
  s.flops_per_element = flops_per_element;
  s.dtype = gpu::Dtype::fp32;
  return s;
}

}  // namespace

TEST_CASE("transcendentals run on the SFUs, 16 a clock per SM", "[gpu][reduction]") {
  const gpu::GpuSpec spec = h100();
  // y = exp(-y) 32 times per element (compiled_kernels.py's exp chain):
  // 2^26 x 32 / 132 tiles = 16,268,815.5 SFU results per tile at 16 x
  // 1.98e9 /s = 513.536 us; its bytes, 2^29 / 132 at 3015 GB/s / 132 =
  // 178.067 us; its two lane operations per element 2.86 us. SFU-bound.
  gpu::MemoryOpShape chain = stream(2);
  chain.transcendentals_per_element = 32;
  const gpu::KernelDesc k = gpu::memory_kernel(spec, chain);
  CHECK(k.tiles == 132);
  CHECK(k.sfu_ops_per_tile == Approx(16'268'815.5));
  const gpu::TileCost c = gpu::tile_cost(spec, k, 132);
  CHECK(c.compute.seconds() == Approx(513.5358e-6).epsilon(1e-6));
  CHECK(c.memory.seconds() == Approx(178.0666e-6).epsilon(1e-6));
  CHECK_FALSE(c.memory_bound());
  // Without the SFU work the same pass streams: its bytes bound it.
  const gpu::TileCost plain = gpu::tile_cost(spec, gpu::memory_kernel(spec, stream(2)), 132);
  CHECK(plain.memory_bound());
}

TEST_CASE("the SFUs issue beside the lanes: the longer of the two, not the sum",
          "[gpu][reduction]") {
  const gpu::GpuSpec spec = h100();
  // 200 lane operations per element: 2^26 x 200 / 132 at 67e12 x 0.7 / 132
  // = 286.18 us per tile; 2 transcendentals take 32.10 us beside them.
  gpu::MemoryOpShape lanes = stream(200);
  const double alone = gpu::tile_cost(spec, gpu::memory_kernel(spec, lanes), 132).compute.seconds();
  CHECK(alone == Approx(286.1785e-6).epsilon(1e-6));
  lanes.transcendentals_per_element = 2;
  CHECK(gpu::tile_cost(spec, gpu::memory_kernel(spec, lanes), 132).compute.seconds() ==
        Approx(alone).epsilon(1e-9));
}

TEST_CASE("a reduction's CTA-long rows add their unhidden cycles", "[gpu][reduction]") {
  const gpu::GpuSpec spec = h100();
  // 4096 rows of a loss over the vocabulary at 1594 cycles each, spread over
  // 132 tiles: 49,462 cycles per tile at 1.98 GHz = 24.981 us, added to the
  // lanes' 286.18 us (200 operations per element as above).
  gpu::MemoryOpShape loss = stream(200);
  loss.reduction_rows = 4096;
  loss.cycles_per_row = 1594;
  const gpu::KernelDesc k = gpu::memory_kernel(spec, loss);
  CHECK(k.latency_cycles_per_tile == Approx(4096.0 * 1594.0 / 132.0));
  CHECK(gpu::tile_cost(spec, k, 132).compute.seconds() ==
        Approx(286.1785e-6 + 24.98096e-6).epsilon(1e-6));
  // A clock stretch (clock_governor.h) slows the rows' cycles with the rest.
  const sim::Duration at_half = gpu::wave_time(spec, k, 132, 2.0);
  CHECK((at_half - spec.efficiency.tile_overhead).seconds() ==
        Approx(2.0 * (286.1785e-6 + 24.98096e-6)).epsilon(1e-6));
}

TEST_CASE("bad SFU or row figures are errors", "[gpu][reduction]") {
  gpu::GpuSpec spec = h100();
  gpu::MemoryOpShape bad = stream(1);
  bad.transcendentals_per_element = -1;
  CHECK_THROWS_AS(gpu::memory_kernel(spec, bad), std::invalid_argument);
  bad = stream(1);
  bad.reduction_rows = -4;
  CHECK_THROWS_AS(gpu::memory_kernel(spec, bad), std::invalid_argument);
  bad = stream(1);
  bad.cycles_per_row = -1;
  CHECK_THROWS_AS(gpu::memory_kernel(spec, bad), std::invalid_argument);
  // A spec without a clock cannot time cycles or SFU results.
  gpu::MemoryOpShape exp = stream(1);
  exp.transcendentals_per_element = 1;
  spec.sm_clock_ghz = 0;
  CHECK_THROWS_AS(gpu::tile_cost(spec, gpu::memory_kernel(spec, exp), 132), std::invalid_argument);
}
