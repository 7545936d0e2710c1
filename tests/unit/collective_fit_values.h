// Test helpers for the collective calibration tests: the GPUs they run on
// (one NVSwitch hop of 0.6 us, NVLink 4's 450 GB/s per GPU) and a set of
// fitted fields written into a CollectiveParams, as
// models/collectives/fitted_params.cpp writes the committed ones.
#pragma once

#include <cstdint>

#include "models/collectives/collective_params.h"
#include "models/gpu/gpu_spec.h"

namespace gcsim::test {

// A GPU on an NVSwitch: 450 GB/s each way, 0.6 us GPU to GPU. `hbm_gbps`
// sets the local copy's rate (0: none).
inline models::gpu::GpuSpec switch_gpu(const char* name, double hbm_gbps = 0.0) {
  models::gpu::GpuSpec gpu;
  gpu.name = name;
  gpu.nvlink_bandwidth = sim::Bandwidth::gb_per_s(450);
  gpu.nvlink_latency = sim::ns(int64_t{600});
  gpu.has_nvls = hbm_gbps > 0.0;
  if (hbm_gbps > 0.0) gpu.hbm_bandwidth = sim::Bandwidth::gb_per_s(hbm_gbps);
  return gpu;
}

// One protocol's fitted fields (calibration::fit_ranges() names them).
struct ProtocolFit {
  double base_us = 0.0;
  double step_us = 0.0;
  int64_t slice_bytes = 0;
  double ceiling_gbps = 0.0;  // per GPU for LL, per channel for LL128 and Simple
};

// Every fitted field of the collective model.
struct CollectiveFitValues {
  ProtocolFit ll, ll128, simple;
  int64_t simple_chunk_bytes = 0;
  double simple_turnaround_us = 0.0;
  double p2p_channel_gbps = 0.0;
  double p2p_connection_gbps = 0.0;
  double p2p_round_us = 0.0;
};

// `p` with the fitted fields of `v`: ring-like algorithms take each
// protocol's latency, the grouped send/recv LL's base latency.
inline models::collectives::CollectiveParams with_fit_values(
    models::collectives::CollectiveParams p, const CollectiveFitValues& v) {
  using models::collectives::Algorithm;
  using models::collectives::Protocol;
  auto set = [&p](Protocol pr, const ProtocolFit& f) {
    for (Algorithm a : {Algorithm::ring, Algorithm::pairwise, Algorithm::hierarchical}) {
      p.latency_of(a, pr).base = sim::us(f.base_us);
      p.latency_of(a, pr).step_scale_up = sim::us(f.step_us);
    }
    p.protocol_of(pr).slice = sim::Bytes(f.slice_bytes);
    auto& pp = p.protocol_of(pr);
    (pr == Protocol::ll ? pp.max_per_gpu : pp.max_per_channel) =
        sim::Bandwidth::gb_per_s(f.ceiling_gbps);
  };
  set(Protocol::ll, v.ll);
  set(Protocol::ll128, v.ll128);
  set(Protocol::simple, v.simple);
  p.protocol_of(Protocol::simple).chunk = sim::Bytes(v.simple_chunk_bytes);
  p.protocol_of(Protocol::simple).ring_loop_overhead = sim::us(v.simple_turnaround_us);
  for (Protocol pr : models::collectives::kAllProtocols) {
    p.latency_of(Algorithm::direct, pr).base = p.latency_of(Algorithm::ring, Protocol::ll).base;
  }
  p.p2p_max_per_channel = sim::Bandwidth::gb_per_s(v.p2p_channel_gbps);
  p.p2p_connection_rate = sim::Bandwidth::gb_per_s(v.p2p_connection_gbps);
  p.p2p_round_overhead = sim::us(v.p2p_round_us);
  return p;
}

}  // namespace gcsim::test
