// `gcsim run` on a training step with expert parallelism: summary.json's
// `ep` names the routing spread, the hot rank and the EP all-to-all time;
// with uneven routing the step is rerun with every expert equally popular
// (balanced_routing/) and the difference is what balance would save. Bad
// routing keys end with exit status 2 and the key.
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::contains;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// Mixtral cut to 2 layers of 1024 tokens on 2 x 8 H100s: EP 16 over both
// nodes (DP 16), one micro-batch each; `moe` keys go into the model's moe map.
std::string config(const std::string& moe) {
  return R"(cluster:
  gpu: h100-sxm
  nodes: 2
  gpus_per_node: 8
  scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps}
network: {model: analytical}
workload:
  kind: training
  model:
    preset: mixtral-8x7b
    layers: 2
    seq_len: 1024
    moe: {experts: 16, top_k: 2, )" + moe + R"(}
  batch: {global: 16, micro: 1}
  parallelism: {tp: 1, pp: 1, dp: 16, ep: 16}
)";
}

}  // namespace

TEST_CASE("training EP run: routing spread, hot rank, EP time and what balance saves",
          "[scenario][training][moe]") {
  TempDir tmp;
  write_text(tmp / "ep.yaml", config("skew: 1.0, balance: 0.5, max_route_nodes: 1"));
  const GcsimResult r = run_gcsim({"run", (tmp / "ep.yaml").string(), "-o", (tmp / "out").string()});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const auto s = read_json(tmp / "out" / "summary.json");
  const auto& ep = s.at("ep");
  CHECK(ep.at("ranks") == 16);
  CHECK(ep.at("routing").at("skew") == 1.0);
  CHECK(ep.at("routing").at("balance") == 0.5);
  CHECK(ep.at("routing").at("dispatch_legs") == 2);  // IB leg, then NVLink
  // Zipf 1.0 over 16 experts, half removed: expert 0 gets 0.5 x 1/3.3807 +
  // 0.5 / 16 = 0.17915 of the copies, 2.866x the mean 1/16 (under the cap 1/2).
  CHECK(ep.at("routing").at("expert_imbalance_max").get<double>() == Approx(2.866).epsilon(2e-3));
  // Index placement: EP rank 0 holds experts 0 and 1, hot in both layers.
  CHECK(ep.at("hot_rank").at("ep_index") == 0);
  CHECK(ep.at("hot_rank").at("hot_in_layers") == 2);
  const double a2a = ep.at("all_to_all_s").get<double>();
  CHECK(a2a > 0);
  CHECK(ep.at("exposed_s").get<double>() <= a2a + ep.at("wait_for_peers_s").get<double>() + 1e-12);
  // The balanced rerun: the same step with equal expert shares, faster.
  REQUIRE(ep.contains("balanced"));
  const auto& b = ep.at("balanced");
  CHECK(b.at("step_time_s").get<double>() < s.at("step_time_s").get<double>());
  CHECK(b.at("all_to_all_s").get<double>() < a2a);
  CHECK(ep.at("balance_saves").at("step_s").get<double>() ==
        Approx(s.at("step_time_s").get<double>() - b.at("step_time_s").get<double>()));
  const auto bs = read_json(tmp / "out" / "balanced_routing" / "summary.json");
  CHECK(bs.at("step_time_s") == b.at("step_time_s"));
  CHECK(bs.at("ep").at("routing").at("skew") == 0.0);
  CHECK(bs.at("ep").at("routing").at("rank_imbalance_max") == 1.0);
  CHECK(!bs.at("ep").contains("balanced"));
  // The report and stdout say it too.
  const std::string report = read_text(tmp / "out" / "report.md");
  CHECK(contains(report, "## Expert parallelism"));
  CHECK(contains(report, "balance would save"));
  CHECK(contains(r.out, "EP balanced routing"));
  CHECK(contains(r.out, "hot EP rank 0"));
}

TEST_CASE("training EP run: balanced routing makes no rerun", "[scenario][training][moe]") {
  TempDir tmp;
  write_text(tmp / "ep.yaml", config("skew: 0"));
  const GcsimResult r = run_gcsim({"run", (tmp / "ep.yaml").string(), "-o", (tmp / "out").string(), "-q"});
  REQUIRE(r.exit_status == 0);
  const auto s = read_json(tmp / "out" / "summary.json");
  CHECK(s.at("ep").at("routing").at("rank_imbalance_max") == 1.0);
  CHECK(!s.at("ep").contains("balanced"));
  CHECK(!fs::exists(tmp / "out" / "balanced_routing"));
}

TEST_CASE("training EP run: bad routing keys name the key", "[scenario][training][moe][bad_input]") {
  const auto expect_bad = [](const std::string& moe, const std::string& key, const std::string& why) {
    TempDir tmp;
    write_text(tmp / "bad.yaml", config(moe));
    const GcsimResult r = run_gcsim({"run", (tmp / "bad.yaml").string(), "-o", (tmp / "out").string(), "-q"});
    INFO(moe << "\n" << r.err);
    CHECK(r.exit_status == 2);
    CHECK(contains(r.err, (tmp / "bad.yaml").string() + ":13:"));
    CHECK(contains(r.err, "'workload.model.moe." + key + "'"));
    CHECK(contains(r.err, why));
    CHECK(!fs::exists(tmp / "out" / "summary.json"));
  };
  expect_bad("balance: 1.5", "balance", "[0, 1]");
  expect_bad("balance: -0.1", "balance", "[0, 1]");
  expect_bad("placement: random", "placement", "permuted");
  expect_bad("sample: maybe", "sample", "true or false");
  expect_bad("capacity_factor: -1", "capacity_factor", "[0, 1000]");
  expect_bad("capacity_factor: 2000", "capacity_factor", "[0, 1000]");
  expect_bad("capacity_factor: lots", "capacity_factor", "number");
  expect_bad("pad_to_capacity: true", "pad_to_capacity", "capacity_factor");
  expect_bad("pad_to_capacity: often", "pad_to_capacity", "true or false");
}
