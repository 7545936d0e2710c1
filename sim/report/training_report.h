// What a training run reports (DESIGN.md, summary.json for `training`):
// step time, tokens/s, TFLOP/s per GPU, MFU and HFU, the bubble fraction,
// memory per GPU with its breakdown and whether it fits, and where the step
// went (compute, exposed communication per parallel dimension, bubble,
// optimizer); report.md shows the same as tables.
#pragma once

#include <optional>
#include <string>

#include "sim/report/ep_report.h"
#include "sim/report/energy_report.h"
#include "sim/report/run_report.h"
#include "sim/scenario/training_workload_loader.h"
#include "workloads/training/kernel_classes.h"
#include "workloads/training/step_breakdown.h"

namespace gcsim::cli {

struct TrainingFigures {
  double step_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  // model FLOPs
  double mfu = 0, hfu = 0;
  double bubble_fraction = 0;  // bubble / step time
  double peak_bytes = 0;       // analytical, worst GPU
  workloads::training::BreakdownResult breakdown;
  workloads::training::KernelClassTimes kernel_classes;  // mean over the observed ranks
  std::vector<workloads::training::KernelClassTimes> kernel_classes_per_rank;  // as breakdown.ranks
  EpTimes ep;                          // with EP (has_ep)
  std::optional<EpTimes> ep_balanced;  // the balanced-routing rerun, when the routing is uneven
  std::optional<EnergyFigures> energy;  // under cluster.clocks: model
};

TrainingFigures training_figures(const RunFigures& f, const TrainingRun& run);

sim::config::Json build_training_summary(const RunFigures& f, const TrainingFigures& t);
std::string build_training_report(const RunFigures& f, const TrainingFigures& t);
std::string training_human_summary(const RunFigures& f, const TrainingFigures& t,
                                   const std::string& out_dir, bool trace);

}  // namespace gcsim::cli
