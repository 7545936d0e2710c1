// Energy of a run under the power model (cluster.clocks: model): what the
// boards drew, per step and per token (summary.json `energy`, report.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/config/config_reader.h"

namespace gcsim::cli {

struct EnergyFigures {
  double per_gpu_j = 0;     // mean over the observed GPUs, over the run
  double total_j = 0;       // every GPU of the cluster
  double per_token_j = 0;   // total over the tokens the run processed
  double mean_power_w = 0;  // per GPU: per_gpu_j over the run's time
};

// From per-rank energies (J), the ranks that stand for the rest (empty:
// all), the cluster's GPUs, the run's simulated seconds and its tokens.
// nullopt when no energy was recorded (clocks not modelled).
std::optional<EnergyFigures> energy_figures(const std::vector<double>& energy_j,
                                            const std::vector<int>& observed, int gpus,
                                            double seconds, double tokens);

// summary.json's `energy` object; `per` names the unit of work ("step", "run").
sim::config::Json energy_json(const EnergyFigures& e, const std::string& per);
// report.md rows of the `| what | value |` table.
std::string energy_rows(const EnergyFigures& e, const std::string& per);

}  // namespace gcsim::cli
