// Chip-to-chip spread of power under a cap (cluster.power_spread).
//
// GPUs of one model differ in the power they draw for the same work (leakage
// and the voltage each needs for a clock), so under the board's power cap
// they settle at different SM clocks: on 4 H100s running one DDP step
// (calibration/measurements/h100-x4/ddp_drift_2026-11-27) the loaded
// clocks were 1809-1859 MHz, the slowest chip the same one whichever rank
// it ran (listed forward and reversed). Below the cap every chip runs at
// f_max and the spread has no effect. In data-parallel training the fast
// chips then wait for the slowest at every gradient all-reduce, which a
// profiler counts as NCCL time.
//
// Each GPU's arithmetic power (tensor_w, vector_w: the switching energy
// that the voltage sets) is scaled by 1 + sigma z, with z the n quantiles
// of the standard normal at (k + 1/2) / n, k = 0 .. n-1, dealt to the GPUs
// by a seeded permutation: the spread of n chips as expected, not one
// draw of it, so a run does not hinge on its seed's luck.
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpu/power_model.h"

namespace gcsim::models::gpu {

inline constexpr double kMaxPowerSpread = 0.2;  // sigma: beyond any binning of one SKU

// Standard normal quantile: z with Phi(z) = p, p in (0, 1).
double normal_quantile(double p);
// The factor 1 + sigma z of each of `gpus` GPUs (mean 1), dealt by `seed`.
std::vector<double> power_spread_factors(int gpus, double sigma, uint64_t seed);
// `p` with its arithmetic power scaled by `factor`.
PowerParams with_power_factor(PowerParams p, double factor);

}  // namespace gcsim::models::gpu
