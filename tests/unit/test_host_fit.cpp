// The host profile fit (calibration/fit/host_fit.h) on a hand-made
// eager_host_bench.py file whose answer is worked by hand: each kind the
// mean of its ops, the loop's call-weighted cost, the slowest rank's pace,
// and every refusal (foreign file, missing reading, cost out of range).
#include <string>

#include "calibration/fit/host_fit.h"
#include "catch.h"

using gcsim::calibration::fit_host_bench;
using gcsim::calibration::HostFitError;
using nlohmann::json;

namespace {

// Op i of the catalogue costs 10 + i us on every rank; rank r's loop costs
// 20 + r us per forward call and 15 + r per backward call.
json rank_reading(int r) {
  const char* ops[] = {"mm", "mm_t", "cast", "softmax", "topk", "gather", "scale",
                       "zero", "index_add", "silu", "mul", "cat", "a2a", "a2a_splits"};
  json op_us;
  for (int i = 0; i < 14; ++i) op_us[ops[i]] = 10.0 + i;
  return {{"op_us", op_us},
          {"loop_us", {{"fwd", 20.0 + r}, {"bwd", 15.0 + r}, {"fwd_first_extra", 60.0}, {"bwd_first_extra", 40.0}}},
          {"sync_us", 50.0}, {"tolist_idle_us", 30.0}, {"a2a_splits_after_tolist_us", 80.0},
          {"launch_after_sync_us", 25.0}, {"rank", r}};
}

json bench(int blocks = 3) {
  json run = {{"tag", "before"},
              {"meta", {{"device_name", "NVIDIA H100 80GB HBM3"}, {"cpu_model", "Xeon"}, {"hostname", "m1"},
                        {"date_utc", "2026-11-27T01:40:00Z"}}},
              {"blocks", json::array()}};
  for (int b = 0; b < blocks; ++b) {
    json ranks = json::array();
    for (int r = 0; r < 4; ++r) ranks.push_back(rank_reading(r));
    run["blocks"].push_back({{"per_rank", ranks}});
  }
  return {{"schema", "gcsim.eager_host_bench.v1"}, {"runs", json::array({run})}};
}

std::string fit_error(const json& doc, const std::string& tag = "") {
  try {
    fit_host_bench(doc, tag);
  } catch (const HostFitError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("host fit: each kind the mean of its ops, worked by hand", "[calibration][host]") {
  const auto fit = fit_host_bench(bench(), "");
  const auto& c = fit.cost;
  // mm 10, mm_t 11, cast 12, softmax 13, topk 14, gather 15, scale 16,
  // zero 17, index_add 18, a2a 22, a2a_splits 23.
  CHECK(c.router_us == Approx((10 + 12 + 13 + 14) / 4.0));                          // 12.25
  CHECK(c.permute_us == Approx((2 * 15 + 16) / 3.0));                               // 15.33
  CHECK(c.launch_us == Approx((4 * 15 + 2 * 17 + 16 + 2 * 18 + 10 + 11) / 11.0));  // 15.18
  CHECK(c.collective_us == Approx((22 + 4 * 23) / 5.0));                            // 22.8
  // Loop: ranks' medians 21.5 forward, 16.5 backward; 4 and 9 calls.
  CHECK(c.expert_us == Approx((4 * 21.5 + 9 * 16.5) / 13.0));  // 18.04
  CHECK(c.loop_fwd_us == Approx(60.0));
  CHECK(c.loop_bwd_us == Approx(40.0));
  CHECK(c.sync_us == Approx(50.0));
  // Rank r's call cost (215 + 13 r) / 13: the slowest (r = 3) over the median
  // of the four (r = 1.5).
  CHECK(c.slowest_rank == Approx((215.0 + 39) / (215.0 + 19.5)));  // 1.083
  CHECK(fit.ranks == 4);
  CHECK(fit.blocks == 3);
  CHECK(fit.measured_on == "4x NVIDIA H100 80GB HBM3, Xeon, host m1, 2026-11-27T01:40:00Z");
  // The profile file says so and records the readings.
  const std::string y = gcsim::calibration::host_profile_yaml(fit, "gcsim calibrate --host-fit X -o Y");
  CHECK(y.find("kind: host_profile\n") != std::string::npos);
  CHECK(y.find("  router: 12.25us") != std::string::npos);
  CHECK(y.find("  slowest_rank: 1.083") != std::string::npos);
  CHECK(y.find("\"a2a_splits_after_tolist_us\":80.0") != std::string::npos);
}

TEST_CASE("host fit: a block where a rank failed is left out; runs by tag", "[calibration][host]") {
  json doc = bench(2);
  doc["runs"][0]["blocks"][1]["per_rank"][2] = {{"error", "RuntimeError('x')"}, {"rank", 2}};
  CHECK(fit_host_bench(doc, "").blocks == 1);
  json after = doc["runs"][0];
  after["tag"] = "after";
  for (auto& p : after["blocks"][0]["per_rank"]) p["sync_us"] = 70.0;
  doc["runs"].push_back(after);
  CHECK(fit_host_bench(doc, "").cost.sync_us == Approx(50.0));  // the first run
  CHECK(fit_host_bench(doc, "after").cost.sync_us == Approx(70.0));
  CHECK(fit_error(doc, "later") == "runs: no run tagged 'later' (the file has 'before', 'after')");
}

TEST_CASE("host fit: refuses what it cannot use", "[calibration][host]") {
  CHECK(fit_error(json{{"schema", "gcsim.microbench.v1"}}).find("not calibration/microbench/eager_host_bench.py") !=
        std::string::npos);
  json doc = bench();
  doc["runs"][0]["blocks"][1]["per_rank"][3]["op_us"].erase("topk");
  CHECK(fit_error(doc) == "runs[0].blocks[1].per_rank[3].op_us.topk: missing");
  doc = bench();
  doc["runs"][0]["blocks"][0]["per_rank"][0]["loop_us"]["bwd"] = "slow";
  CHECK(fit_error(doc) == "runs[0].blocks[0].per_rank[0].loop_us.bwd: not a number");
  doc = bench();
  doc["runs"][0]["blocks"] = json::object();
  CHECK(fit_error(doc) == "runs[0].blocks: not a list");
  doc = bench();
  for (auto& b : doc["runs"][0]["blocks"]) b["per_rank"][0] = {{"error", "x"}};
  CHECK(fit_error(doc) == "runs[0].blocks: no block where every rank has readings");
  // A cost outside its physical range (moe_layer.h): 400 us per NCCL call is
  // the top; the bench's calls at 500 us are a broken run.
  doc = bench();
  for (auto& b : doc["runs"][0]["blocks"]) {
    for (auto& p : b["per_rank"]) {
      p["op_us"]["a2a"] = 500.0;
      p["op_us"]["a2a_splits"] = 500.0;
    }
  }
  CHECK(fit_error(doc).find("fitted nccl 500 us lies outside its physical range 3-400 us") == 0);
  // One rank at 3x its peers' pace: beyond the slowest rank's range (1-2).
  doc = bench();
  for (auto& b : doc["runs"][0]["blocks"]) {
    b["per_rank"][3]["loop_us"]["fwd"] = 80.0;
    b["per_rank"][3]["loop_us"]["bwd"] = 60.0;
  }
  CHECK(fit_error(doc).find("fitted slowest_rank") == 0);
}

TEST_CASE("host fit: a loop with no measurable fixed cost reads none", "[calibration][host]") {
  json doc = bench();
  for (auto& b : doc["runs"][0]["blocks"]) {
    for (auto& p : b["per_rank"]) p["loop_us"]["fwd_first_extra"] = -1.5;  // noise below zero
  }
  const auto fit = fit_host_bench(doc, "");
  CHECK(fit.cost.loop_fwd_us == 0.0);
  CHECK(fit.readings["loop_us"]["fwd_first_extra"].get<double>() == Approx(-1.5));
}
