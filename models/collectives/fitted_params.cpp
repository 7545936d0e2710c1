#include "models/collectives/fitted_params.h"

namespace gcsim::models::collectives {

namespace {

// 2x H200 (h200-sxm), NCCL 2.28.9, NVLink SHARP off: fitted by
// calibration/fit/collective_fit.cpp to the 2-GPU runs of
// calibration/measurements/h200-x4/nccl_sweep_2026-11-22.json (all-reduce
// forced Ring with each protocol; all-reduce, all-gather, reduce-scatter,
// broadcast, all-to-all with NCCL's own choice; 1 KiB to 1 GiB) and the
// max_ctas 16 / 8 all-reduces of calibration/measurements/h200-x2/README.md:
// 170 points, rms log error 0.103 (about 10 %). The fit starts from NCCL's
// defaults and keeps the NVLink payload share at NCCL's 20.6/25; the
// report with predicted against measured busbw for 2 and 4 GPUs and the
// 8-GPU prediction is calibration/fit/collective_fit_h200_2026-11-22.md.
// Reproduce: GCSIM_FIT_REPORT=report.md build/tests/gcsim_tests "[.fit]".
void h200(CollectiveParams& p) {
  using sim::us;
  auto ops = [&](CollectiveOp a, CollectiveOp b, double e) {
    p.efficiency_of(a) = e;
    p.efficiency_of(b) = e;
  };
  auto set = [&](Protocol pr, sim::Duration base, sim::Duration step, sim::Bytes slice,
                 sim::Bandwidth ceiling) {
    for (Algorithm a : {Algorithm::ring, Algorithm::direct, Algorithm::pairwise,
                        Algorithm::hierarchical}) {
      p.latency_of(a, pr).base = base;
      p.latency_of(a, pr).step_scale_up = step;
    }
    p.protocol_of(pr).slice = slice;
    (pr == Protocol::ll ? p.protocol_of(pr).max_per_gpu : p.protocol_of(pr).max_per_channel) =
        ceiling;
  };
  ops(CollectiveOp::all_reduce, CollectiveOp::all_reduce, 0.77084);
  ops(CollectiveOp::all_gather, CollectiveOp::all_gather, 0.6509);
  ops(CollectiveOp::reduce_scatter, CollectiveOp::reduce_scatter, 0.661456);
  ops(CollectiveOp::broadcast, CollectiveOp::reduce, 1.01267);
  ops(CollectiveOp::all_to_all, CollectiveOp::send_recv, 0.733789);
  set(Protocol::ll, us(5.75102), us(0.001), sim::Bytes(1), sim::Bandwidth::gb_per_s(30588.6));
  set(Protocol::ll128, us(11.6146), us(1.24882), sim::Bytes(7), sim::Bandwidth::gb_per_s(3049.15));
  set(Protocol::simple, us(7.81019), us(3.17961), sim::Bytes(35818),
      sim::Bandwidth::gb_per_s(19.5369));
  p.source = "fit to NCCL 2.28.9 on 2x H200 (calibration/fit/collective_fit_h200_2026-11-22.md)";
}

}  // namespace

bool apply_fitted_params(std::string_view gpu_name, CollectiveParams& params) {
  if (gpu_name == "h200-sxm") {
    h200(params);
    return true;
  }
  return false;
}

}  // namespace gcsim::models::collectives
