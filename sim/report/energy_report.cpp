#include "sim/report/energy_report.h"

#include "sim/report/format.h"

namespace gcsim::cli {

std::optional<EnergyFigures> energy_figures(const std::vector<double>& energy_j,
                                            const std::vector<int>& observed, int gpus,
                                            double seconds, double tokens) {
  if (energy_j.empty()) return std::nullopt;
  double sum = 0;
  int n = 0;
  if (observed.empty()) {
    for (double e : energy_j) sum += e, ++n;
  } else {
    for (int r : observed) sum += energy_j.at(static_cast<size_t>(r)), ++n;
  }
  EnergyFigures e;
  e.per_gpu_j = n > 0 ? sum / n : 0.0;
  e.total_j = e.per_gpu_j * gpus;
  e.per_token_j = tokens > 0 ? e.total_j / tokens : 0.0;
  e.mean_power_w = seconds > 0 ? e.per_gpu_j / seconds : 0.0;
  return e;
}

sim::config::Json energy_json(const EnergyFigures& e, const std::string& per) {
  sim::config::Json j = sim::config::Json::object();
  j["per_" + per + "_j"] = e.total_j;
  j["per_token_j"] = e.per_token_j;
  j["per_gpu_j"] = e.per_gpu_j;
  j["mean_power_w_per_gpu"] = e.mean_power_w;
  j["source"] = "power model (cluster.clocks: model): board power of every GPU, idle included";
  return j;
}

std::string energy_rows(const EnergyFigures& e, const std::string& per) {
  return "| energy per " + per + " (all GPUs) | " + fmt("%.4g J", e.total_j) + " |\n" +
         "| energy per token | " + fmt("%.4g J", e.per_token_j) + " |\n" +
         "| mean board power per GPU | " + fmt("%.0f W", e.mean_power_w) + " |\n";
}

}  // namespace gcsim::cli
