#include "models/collectives/fitted_params.h"

namespace gcsim::models::collectives {

namespace {

// Hopper on NVLink 4 through NVSwitch (h100-sxm, h200-sxm: the same SM,
// links and switch; only HBM differs, which NCCL's copies do not reach),
// NCCL 2.28.9, NVLink SHARP off: fitted by calibration/fit/collective_fit.cpp
// to the 2-GPU runs of calibration/measurements/h200-x4/nccl_2026-11-26/
// (nccl_default.json, every op and placement, 8 B to 4 GiB; nccl_forced.json,
// all-reduce forced Ring with each protocol). Every value lies in the
// physical range calibration::fit_ranges() states; 3 and 4 GPUs are held
// out. Report: calibration/fit/collective_fit_hopper_2026-11-26.md.
// Refitted (both stages, from the values before, LL's fields held: nothing
// here changed an LL transfer) once a broadcast chain filled with NCCL's
// 512 KiB buffer step, its root paid its own hop per call and a link
// carrying both ways lost the reverse overhead below (issue 17's
// broadcast; calibration/fit/collective_fit_h100_2026-11-26.md).
// Reproduce: GCSIM_FIT_REPORT=report.md build/tests/gcsim_tests "[.fit]".
void hopper_nvlink4(CollectiveParams& p) {
  using sim::us;
  auto set = [&](Protocol pr, sim::Duration base, sim::Duration step, sim::Bytes slice,
                 sim::Bandwidth ceiling) {
    // Ring-like steps; NCCL's grouped send/recv (direct) has its own latency.
    for (Algorithm a : {Algorithm::ring, Algorithm::pairwise, Algorithm::hierarchical}) {
      p.latency_of(a, pr).base = base;
      p.latency_of(a, pr).step_scale_up = step;
    }
    p.protocol_of(pr).slice = slice;
    (pr == Protocol::ll ? p.protocol_of(pr).max_per_gpu : p.protocol_of(pr).max_per_channel) =
        ceiling;
  };
  p.scale_up_efficiency = 0.824;  // measured directly, not fitted (calibration::fit_ranges())
  // Measured directly, not fitted: on 2 GPUs at 4 GiB a send/recv (both
  // ways) takes 11762.3 us, a broadcast (one way) 11592.7 (nccl_default.json):
  // each direction loses 1.46 % to the other's in-band responses.
  p.scale_up_reverse_overhead = 0.0146;
  set(Protocol::ll, us(5.28301), us(0.050266), sim::Bytes(3538), sim::Bandwidth::gb_per_s(267.363));
  set(Protocol::ll128, us(10.6212), us(1.13298), sim::Bytes(1164315), sim::Bandwidth::gb_per_s(59.9386));
  set(Protocol::simple, us(7.17445), us(2.70664), sim::Bytes(224678), sim::Bandwidth::gb_per_s(22.312));
  p.protocol_of(Protocol::simple).chunk = sim::Bytes(186093);
  p.protocol_of(Protocol::simple).ring_loop_overhead = us(3.73328);
  // NCCL's grouped send/recv: LL's base latency for every protocol (a
  // kernel's launch and first handshake), no ring steps; each round of the
  // group costs p2p_round_overhead; each connection's window moves
  // p2p_connection_rate on an idle link (calibration/fit/collective_fit.cpp,
  // the second stage: the 2-GPU all-to-all and send/recv points).
  for (Protocol pr : kAllProtocols) {
    p.latency_of(Algorithm::direct, pr).base = p.latency_of(Algorithm::ring, Protocol::ll).base;
    p.latency_of(Algorithm::direct, pr).step_scale_up = sim::Duration::zero();
  }
  p.p2p_max_per_channel = sim::Bandwidth::gb_per_s(80.1845);
  p.p2p_connection_rate = sim::Bandwidth::gb_per_s(68.0299);
  p.p2p_round_overhead = us(0.421056);
  p.source = "fit to NCCL 2.28.9 on 2x H200, Hopper NVLink 4 (calibration/fit/collective_fit_hopper_2026-11-26.md)";
}

}  // namespace

bool apply_fitted_params(std::string_view gpu_name, CollectiveParams& params) {
  if (gpu_name == "h200-sxm" || gpu_name == "h100-sxm") {
    hopper_nvlink4(params);
    return true;
  }
  return false;
}

}  // namespace gcsim::models::collectives
