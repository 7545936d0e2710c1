// One serving step of a calibration/validation config, as the serving
// tests against measurements (test_serving_measured.cpp,
// test_serving_graph_parts.cpp, test_serving_predicted.cpp) run and read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace gcsim::test {

// calibration/validation/<dir>/: tp<T>_decode_b<B>_kv<K>.yaml or
// tp<T>_prefill_s<K>.yaml (calibration/fit/serving_configs.py's names),
// relative to the source tree.
inline std::string serving_config(const std::string& dir, int tp, const std::string& kind, int64_t batch,
                                  int64_t kv) {
  const std::string name = kind == "decode"
                               ? "tp" + std::to_string(tp) + "_decode_b" + std::to_string(batch) + "_kv" +
                                     std::to_string(kv)
                               : "tp" + std::to_string(tp) + "_prefill_s" + std::to_string(kv);
  return "calibration/validation/" + dir + "/" + name + ".yaml";
}

// summary.json's breakdown.<kind>_steps (kind: decode | prefill) of
// `config` (relative to the source tree) run with `overrides` (-s each);
// the run must succeed with one step of that kind.
inline nlohmann::ordered_json serving_step(const std::string& config, const std::string& kind,
                                           const std::vector<std::string>& overrides) {
  TempDir tmp;
  std::vector<std::string> args = {"run", source_path(config), "-o", (tmp / "out").string(), "-q"};
  for (const auto& o : overrides) args.insert(args.end(), {"-s", o});
  const auto r = run_gcsim(args);
  REQUIRE(r.exit_status == 0);
  const auto summary = read_json(tmp / "out" / "summary.json");
  nlohmann::ordered_json b = summary["breakdown"][kind + "_steps"];
  REQUIRE(b["steps"].get<int>() == 1);
  return b;
}

// A serving_graph_parts_bench.py point on its model's TP4 batch-8 config:
// the overrides for the point's TP, batch and KV length.
inline std::vector<std::string> graph_parts_point(int tp, int64_t batch, int64_t kv) {
  return {"workload.serving.cuda_graphs=true", "workload.serving.tp=" + std::to_string(tp),
          "workload.requests.count=" + std::to_string(batch),
          "workload.requests.prompt_len=" + std::to_string(kv - 1)};
}

// Signed relative error of a simulated figure against a measured one.
inline double rel(double sim, double meas) { return (sim - meas) / meas; }

}  // namespace gcsim::test
