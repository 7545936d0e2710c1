// A training step's expert parallelism: the routing spread it ran (Zipf
// skew, auxiliary-loss-free balance, placement, node-limited routing), the
// hot EP rank and the rank and expert imbalance that spread gives, the EP
// all-to-all time of the observed ranks (all of it and the part the compute
// stream waited for), and, when the routing is uneven, the same step rerun
// with every expert equally popular (`gcsim run` writes it to
// balanced_routing/): what perfectly balanced routing would save.
// summary.json `ep`, report.md "Expert parallelism", one stdout line.
#pragma once

#include <optional>
#include <string>

#include "sim/config/config_reader.h"
#include "sim/scenario/training_workload_loader.h"

namespace gcsim::cli {

struct RunFigures;
struct TrainingFigures;

// EP time of one simulated step, means over the observed (one per
// pipeline stage) ranks.
struct EpTimes {
  double step_s = 0;
  double all_to_all_s = 0;  // every EP all-to-all, from all peers there to done
  double wait_s = 0;        // EP all-to-alls waiting for their peers to arrive
  double exposed_s = 0;     // the compute stream idle for EP (breakdown.exposed_comm_s.ep)
};

// Whether the run has EP at all (a MoE model with ep > 1).
bool has_ep(const TrainingRun& run);
// Whether its routing is uneven (some EP rank gets more rows than the mean):
// then a balanced counterpart is worth running.
bool ep_routing_uneven(const TrainingRun& run);

EpTimes ep_times(const RunFigures& f, const TrainingFigures& t);

sim::config::Json ep_summary(const TrainingRun& run, const EpTimes& times,
                             const std::optional<EpTimes>& balanced);
std::string ep_report_section(const TrainingRun& run, const EpTimes& times,
                              const std::optional<EpTimes>& balanced);
// "  EP: ..." lines for stdout ("" without EP).
std::string ep_human_lines(const TrainingRun& run, const EpTimes& times,
                           const std::optional<EpTimes>& balanced);

}  // namespace gcsim::cli
