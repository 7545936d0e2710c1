// The clock a kernel runs at from rest, under the instantaneous limiter
// (power_model.h, instant_cap_w), and what its calibrated time stands for.
//
// Measured with the SMs' own cycle counter on four H100s
// (calibration/measurements/h100-x4/clock_truth_2026-11-27): a bf16 8192^3
// GEMM runs at 1610-1620 MHz from its first kernel after seconds of idle,
// cuDNN's causal attention forward at 1720, a bf16 add at 1980, whatever the
// averaged power (NVML reads 1980 for the first ~80 ms). Every kernel time
// the presets' efficiencies were fitted to was so timed at the kernel's own
// rest clock, not at f_max: with instant_cap_w set, a clock below it
// stretches the kernel's arithmetic by relative_speed(clock, rest_clock).
// The presets keep the NVML fit (no limiter: every kernel rests at f_max);
// configs/examples/h100_sm_clock.yaml sets it (README, "The SMs' own clock").
#pragma once

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "models/gpu/power_model.h"

namespace gcsim::models::gpu {

// `busy` (a share of the GPU's SM-time in a kernel's arithmetic) as the
// activity it charges: tensor or CUDA-core time by the kernel's unit, a
// fused attention's split by attention_tensor_share (its softmax on the CUDA
// cores); memory kernels charge none.
Activity arithmetic_activity(const PowerParams& p, const KernelDesc& kernel, double busy);
// A wave of `kernel` on `sms` SMs, `active` of them sharing HBM, lasting
// `length_s` seconds with its arithmetic stretched by `stretch`: its
// arithmetic and HBM activity (time fractions of the whole GPU; the Gpu
// runtime's charge() of every wave; hbm_unshared not set).
Activity wave_activity(const GpuSpec& spec, const KernelDesc& kernel, int sms, int active, double length_s,
                       double stretch);
// `kernel`'s activity alone on the GPU at f_max, over one full wave
// (wave_activity at its own length), hbm_unshared set.
Activity rest_activity(const GpuSpec& spec, const KernelDesc& kernel);
// The clock fraction `kernel` runs at alone from rest: instant_clock() of
// its rest activity (1 without an instantaneous limiter or a power model).
double rest_clock(const GpuSpec& spec, const KernelDesc& kernel);

}  // namespace gcsim::models::gpu
