// Runs configs as child `gcsim run` processes, N at a time, spread over the
// ranks of an MPI job when there is one: the machinery `gcsim sweep` and
// `gcsim plan` share. A point is the base config plus `-s` overrides and an
// output directory; a point whose config is impossible (exit status 2) is
// skipped with the first line of its error, and any other failure is kept
// with its exit status. Also the summary.json figures both commands rank by.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cli/mpi_world.h"

namespace gcsim::cli {

struct RunPoint {
  std::vector<std::string> overrides;  // "key=value"
  std::filesystem::path dir;           // its summary.json, report.md, stdout.txt, stderr.txt
  std::string status = "pending";      // ok | skipped | failed
  std::string reason;                  // skipped or failed: why
  nlohmann::ordered_json summary;      // ok: its summary.json
};

// What the caller hears while points run (either may be empty).
struct RunHooks {
  // After each of this rank's points: how many of its own are done, of how many.
  std::function<void(const RunPoint&, size_t done, size_t mine)> on_done;
  // With it set, this rank's first point runs alone and is timed: the hook
  // gets its wall time (s) and how many of this rank's points are left, and
  // returns a reason to stop ("" runs the rest); every point not run is then
  // skipped with that reason.
  std::function<std::string(const RunPoint& first, double wall_s, size_t left)> on_first;
};

// Runs the points this rank owns (`world.owns(i)`) `jobs` at a time, then
// gathers every rank's results, so that every rank returns with all points
// filled in.
void run_points(const std::string& base_config, std::vector<RunPoint>& points, int jobs,
                const MpiWorld& world, const RunHooks& hooks);

// Figures of a point's summary.json; a negative number means "not reported".
double summary_number(const nlohmann::ordered_json& summary, const char* key);
double summary_step_time(const nlohmann::ordered_json& summary);  // else simulated_time_s
bool summary_fits(const nlohmann::ordered_json& summary);         // true when no memory key
double summary_memory_bytes(const nlohmann::ordered_json& summary);  // peak per GPU
double summary_exposed(const nlohmann::ordered_json& summary, const char* dim);  // 0 when absent
double summary_breakdown(const nlohmann::ordered_json& summary, const char* key);  // compute_s, ...

}  // namespace gcsim::cli
