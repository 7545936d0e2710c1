// `gcsim calibrate --power-activity`: the runtime's activity for every
// kernel the power measurement ran (models/gpu/power_loop.h), on a grid of
// held SM clocks, as JSON for calibration/fit/power_fit.py. The fit so
// charges each measured loop exactly what the simulator will charge it.
#pragma once

#include <nlohmann/json.hpp>

#include "models/gpu/gpu_spec.h"

namespace gcsim::calibration {

// Clock fractions 0.50, 0.51 ... 1.00 of f_max (the cap's range on Hopper).
//   {"gpu", "sm_clock_mhz", "hbm_bandwidth_bytes_per_s", "clock_bound_share",
//    "clocks": [...], "kernels": {name: {"duration_s": [...], "launch_gap_s": [...], "tensor": [...],
//    "vector": [...], "hbm": [...]}}}   one value per clock
// `spec.power` must be enabled; its clock_bound_share sets how a kernel's
// arithmetic stretches at a lower clock.
nlohmann::json power_activity_table(const models::gpu::GpuSpec& spec);

}  // namespace gcsim::calibration
