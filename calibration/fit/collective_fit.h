// Fits the collective engine's protocol and latency parameters to real
// NCCL runs (calibration/microbench/nccl_sweep.py, schema
// gcsim.nccl_sweep.v1) and predicts other group sizes with the fit, without
// refitting. Each prediction runs the engine (models/collectives/) on one
// host of n GPUs on the preset's NVSwitch, under the flow network model (no
// other traffic), with the algorithm and protocol NCCL chose for
// that run, or with gcsim's own tuner.
//
// Fitted, per protocol (LL, LL128, Simple): the launch latency (NCCL's
// baseLat), the per-step overhead over NVLink, the pipeline slice, and the
// ceiling the channels put on bandwidth (per channel for LL128 and Simple,
// per GPU for LL); Simple's ring chunk and per-loop turnaround; and the
// NVLink payload share. Every one is physical, shared by every op and group
// size, and held inside the range fit_ranges() states. The loss is the
// mean squared log ratio of predicted to measured time over every point kept.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "models/collectives/collective.h"
#include "models/collectives/collective_engine.h"
#include "models/collectives/collective_params.h"
#include "models/gpu/gpu_spec.h"

namespace gcsim::calibration {

// The physical range of one fitted field (its unit in the name).
struct FitRange {
  std::string name;
  double lo = 0.0;
  double hi = 0.0;
};
std::vector<FitRange> fit_ranges();
// The fitted fields of `p` that lie outside their range, as text; empty
// when every one is inside.
std::vector<std::string> out_of_range(const models::collectives::CollectiveParams& p);

struct NcclMeasurement {
  models::collectives::CollectiveOp op = models::collectives::CollectiveOp::all_reduce;
  int ranks = 2;
  int64_t bytes = 0;
  double time_us = 0.0;
  // What NCCL ran: forced (NCCL_ALGO/NCCL_PROTO) or its tuner's recorded
  // choice for that op, group size and message size (all-to-all: grouped
  // send/recv, LL up to NCCL_P2P_LL_THRESHOLD = 16 KiB per peer).
  models::collectives::Algorithm algorithm = models::collectives::Algorithm::ring;
  models::collectives::Protocol protocol = models::collectives::Protocol::simple;
  bool forced = false;
  bool in_place = false;
  int max_channels = 0;  // NCCL max_ctas when set, else 0 (NCCL's own: 24)
  // Calls per timed loop (nccl_sweep.py's "iters"): time_us is a loop of
  // that many back-to-back calls over the count, as nccl-tests times; 0 =
  // one call timed alone.
  int iters = 0;
  // A spike against both neighbouring sizes of its series (> 1.5x the
  // larger one): the VM's noise, not NCCL; left out of the fit and the
  // error figures, listed in the report.
  bool outlier = false;
  std::string source;  // file it came from
  std::string run;     // the run of a merged file (merge_nccl.py's "run"), "" if none
};

// A sweep file that cannot be used: the message names the file and the key.
class NcclSweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Every result of one sweep file, with NCCL's choices attached and
// outliers flagged; fenced rows (one call plus an 8-byte all-reduce, not a
// back-to-back loop) and rows run with NCCL's buffer size or channel count
// overridden ("forced_env") are left out. Throws NcclSweepError for a file that is missing, not
// JSON, of another schema, or with a row whose op, ranks, bytes, time_us or
// protocol is missing or wrong.
std::vector<NcclMeasurement> load_nccl_sweep(const std::string& path);

// The 1 GiB all-reduces on 2x H200 with NCCL max_ctas 16 and 8
// (calibration/measurements/h200-x2/README.md): what fewer channels cost.
std::vector<NcclMeasurement> h200_channel_points();

// The engine's time for `m`, in microseconds, as `m` was timed: one call,
// or per call of a loop of m.iters back-to-back calls (one run less the
// overlap of consecutive calls, CollectiveEngine::back_to_back_overlap, for
// all but the loop's last call). `use_tuner`: gcsim's tuner picks algorithm
// and protocol; otherwise NCCL's are forced. `plan`, when given, receives
// what ran.
double predict_us(const models::collectives::CollectiveParams& params,
                  const models::gpu::GpuSpec& gpu, const NcclMeasurement& m, bool use_tuner,
                  models::collectives::Plan* plan = nullptr);

// sqrt(mean (log(predicted / measured))^2) over the points not flagged.
double rms_log_error(const models::collectives::CollectiveParams& params,
                     const models::gpu::GpuSpec& gpu, const std::vector<NcclMeasurement>& points);

// Nelder-Mead iterations per restart that fit_collective_params runs by default.
inline constexpr int kFitIterations = 1500;

struct CollectiveFit {
  models::collectives::CollectiveParams params;
  double rms_log_error = 0.0;
  int points = 0;
  int evaluations = 0;
};

// Nelder-Mead in log space from `start` (three restarts of `iterations`
// each), deterministic, in two stages: the ring and protocol fields on the
// ring ops' points, then the grouped send/recv's fields ("p2p.*") on the
// all-to-all and send/recv points, the first stage's values held.
// `p2p_only`: the second stage alone, every other field held at `start`'s.
// `held`: fields whose range name starts with one of these ("LL.") stay at
// `start`'s values in both stages.
CollectiveFit fit_collective_params(const std::vector<NcclMeasurement>& points,
                                    const models::gpu::GpuSpec& gpu,
                                    const models::collectives::CollectiveParams& start,
                                    int iterations = kFitIterations, bool p2p_only = false,
                                    const std::vector<std::string>& held = {});
// Where the fit starts: NCCL's defaults for `gpu`, NVLS off (the sweeps run
// with it off), and the fields NCCL's model lacks (Simple's per-channel
// ceiling and loop turnaround, the p2p channel ceiling and round cost) at
// plain values inside their ranges.
models::collectives::CollectiveParams fit_start(const models::gpu::GpuSpec& gpu);
// Every fitted field of `p` with its value and range, for reports.
struct FittedValue {
  FitRange range;
  double value = 0.0;
};
std::vector<FittedValue> fitted_values(const models::collectives::CollectiveParams& p);

// Error of the model against NCCL per op and placement on one group size,
// NCCL's own choices (forced runs and outliers left out): busbw for
// messages >= 1 MiB as |measured time / predicted time - 1| (= |predicted
// busbw / measured busbw - 1|), latency for 8 B - 64 KiB as |predicted /
// measured time - 1|; median and largest of each.
struct SeriesError {
  std::string series;  // "all_to_all", "all_gather in-place"
  int ranks = 0;
  int bw_points = 0;
  double bw_median = 0.0;
  double bw_max = 0.0;
  int lat_points = 0;
  double lat_median = 0.0;
  double lat_max = 0.0;
};
std::vector<SeriesError> series_errors(const models::collectives::CollectiveParams& params,
                                       const models::gpu::GpuSpec& gpu,
                                       const std::vector<NcclMeasurement>& points, int ranks);
// The median busbw error over every series' points of `ranks` GPUs pooled.
double pooled_bw_median(const models::collectives::CollectiveParams& params,
                        const models::gpu::GpuSpec& gpu,
                        const std::vector<NcclMeasurement>& points, int ranks);

// The fitted fields of `p` as C++ assignments (for fitted_params.cpp).
std::string fitted_fields_cpp(const models::collectives::CollectiveParams& p);

// Markdown: the fitted parameters, then per op and size the measured and
// predicted busbw on each group size of `measured` (NCCL's choice forced,
// and gcsim's tuner), and gcsim's prediction for `predict_only_ranks`.
std::string fit_report(const models::collectives::CollectiveParams& params,
                       const models::gpu::GpuSpec& gpu,
                       const std::vector<NcclMeasurement>& measured,
                       const std::vector<int>& predict_only_ranks);

}  // namespace gcsim::calibration
