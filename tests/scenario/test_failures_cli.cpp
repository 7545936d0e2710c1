// Failures through the real command line: bad failure/checkpoint input ends
// with exit 2 naming file, line and key; a training run with failures on
// writes summary.json `failures` (DESIGN.md), deterministically per seed.
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

using gcsim::test::contains;

namespace {

void expect_bad(const char* file, int line, const std::string& key,
                std::vector<std::string> also) {
  TempDir tmp;
  const std::string config = source_path(std::string("tests/data/bad/") + file);
  const GcsimResult r = run_gcsim({"run", config, "-o", (tmp / "out").string(), "-q"});
  INFO("gcsim run " << file << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, config + ":" + std::to_string(line) + ":"));
  CHECK(contains(r.err, "'" + key + "'"));
  for (const auto& a : also) CHECK(contains(r.err, a));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("bad input: failures and checkpoint blocks", "[cli][failures]") {
  SECTION("negative rate") {
    expect_bad("fail_negative_rate.yaml", 6, "failures.rates.gpu", {"negative"});
  }
  SECTION("unknown component class") {
    expect_bad("fail_unknown_class.yaml", 6, "failures.rates.gpuu", {"did you mean 'gpu'?"});
  }
  SECTION("spares < 0") {
    expect_bad("fail_negative_spares.yaml", 6, "failures.recovery.spares", {"negative"});
  }
  SECTION("unknown policy") {
    expect_bad("fail_unknown_policy.yaml", 6, "failures.recovery.policy", {"reboot"});
  }
  SECTION("interval <= 0") {
    expect_bad("fail_zero_interval.yaml", 7, "checkpoint.interval", {"positive"});
  }
  SECTION("a duration that overflows simulated time") {
    expect_bad("fail_duration_overflow.yaml", 7, "simulation.duration", {"time range"});
  }
  SECTION("failures without a training workload") {
    expect_bad("fail_not_training.yaml", 5, "failures.enabled", {"training"});
  }
}

TEST_CASE("failures: a small training job reports summary.json failures", "[scenario][failures]") {
  TempDir tmp;
  const std::string config = source_path("configs/examples/failures_small.yaml");
  const GcsimResult a = run_gcsim({"run", config, "-o", (tmp / "a").string(), "-q"});
  const GcsimResult b = run_gcsim({"run", config, "-o", (tmp / "b").string(), "-q"});
  INFO(a.err);
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  const auto s = read_json(tmp / "a" / "summary.json");
  REQUIRE(s.contains("failures"));
  const auto& f = s["failures"];
  for (const char* key : {"interruptions", "lost_work_s", "checkpoint_cost_s",
                          "checkpoint_overhead_s", "recovery_s",
                          "optimal_checkpoint_interval_s"}) {
    CHECK(f.contains(key));
  }
  // The failures ride on the DES step time of this very run.
  CHECK(f["step_time_s"].get<double>() == Approx(s["step_time_s"].get<double>()));
  const double mean = f["effective_training_time_fraction"]["mean"];
  const double lo = f["effective_training_time_fraction"]["ci95"][0];
  const double hi = f["effective_training_time_fraction"]["ci95"][1];
  CHECK(lo <= mean);
  CHECK(mean <= hi);
  CHECK(mean > 0.5);
  CHECK(mean < 1.0);
  // 4 nodes/200 h + 32 GPUs/2000 h + 4 software/500 h + 64 links (32 NICs x
  // 2 tiers)/20000 h = 0.0472 failures per hour: job MTBF 21.19 h.
  CHECK(f["job_mtbf_s"].get<double>() / 3600 == Approx(1.0 / (4.0 / 200 + 32.0 / 2000 + 4.0 / 500 + 64.0 / 20000)));
  // Same config and seed: byte-identical summary apart from wall time.
  auto sa = s;
  auto sb = read_json(tmp / "b" / "summary.json");
  sa.erase("wall_time_s");
  sb.erase("wall_time_s");
  CHECK(sa.dump() == sb.dump());
}

TEST_CASE("failures: a Llama-3-like run sees about 419 interruptions in 54 days",
          "[scenario][failures]") {
  // Dubey et al. 2024: 419 unexpected interruptions in 54 days on 16,384
  // H100. The llama3 preset's rates over the same cluster shape; 5 seeds,
  // mean within 5% (1 sigma of the mean = sqrt(419 / 5) = 9.2 = 2.2%).
  TempDir tmp;
  const std::string config = source_path("configs/examples/failures_llama3_16k.yaml");
  const GcsimResult r = run_gcsim({"run", config, "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const auto f = read_json(tmp / "out" / "summary.json")["failures"];
  CHECK(f["interruptions"].get<double>() == Approx(419.0).epsilon(0.05));
  CHECK(f["job_mtbf_s"].get<double>() / 3600 == Approx(54.0 * 24 / 419).epsilon(1e-3));
  // Each interruption costs 2 min detection + 10 min restart + the load
  // (5.67 TB from 2 TB/s storage: 2.8 s) plus any wait for a spare; lost
  // work averages half the 30 min interval. A failure during a recovery cuts
  // it short (and starts a new one), so recovery is near, a little under,
  // interruptions x 722.8 s, and the effective fraction about
  // 1 - 422 x (723 + 900) / 4.67e6 = 0.85.
  CHECK(f["recovery_s"].get<double>() ==
        Approx(f["interruptions"].get<double>() * 722.8).epsilon(0.05));
  const double eff = f["effective_training_time_fraction"]["mean"];
  CHECK(eff > 0.80);
  CHECK(eff < 0.90);
}

TEST_CASE("failures: every rate 0 reads 'none', null in summary.json", "[cli][failures]") {
  // No failure can occur: the job MTBF and Young's and Daly's intervals do
  // not exist. They once printed as "inf h" and "inf s".
  TempDir tmp;
  const std::string config = source_path("configs/examples/failures_small.yaml");
  std::vector<std::string> zero;
  for (const char* k : {"node", "gpu", "link", "software"}) {
    zero.insert(zero.end(), {"-s", std::string("failures.rates.") + k + "=0"});
  }
  std::vector<std::string> run{"run", config, "-q", "-o", (tmp / "out").string(),
                               "-s", "simulation.duration=1d", "-s", "simulation.seeds=2"};
  run.insert(run.end(), zero.begin(), zero.end());
  const GcsimResult r = run_gcsim(run);
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  CHECK(contains(r.out, "job MTBF none (no failures configured"));
  CHECK(contains(r.out, "Young / Daly none (no failures configured"));
  CHECK_FALSE(contains(r.out, "inf"));
  const auto f = read_json(tmp / "out" / "summary.json")["failures"];
  CHECK(f["job_mtbf_s"].is_null());
  CHECK(f["young_interval_s"].is_null());
  CHECK(f["daly_interval_s"].is_null());
  // Every seed trains all the time but for checkpoints: a point interval.
  const auto& frac = f["effective_training_time_fraction"];
  CHECK(frac["ci95"][0] <= frac["mean"]);
  CHECK(frac["ci95"][1] <= 1.0);
  CHECK(contains(gcsim::test::read_text(tmp / "out" / "report.md"), "| job MTBF (1 / sum count x rate) | none"));
  // explain once stopped here with an internal error reading the nulls.
  std::vector<std::string> explain{"explain", config, "-s", "simulation.duration=1d",
                                   "-s", "simulation.seeds=2", "-o", (tmp / "ex").string()};
  explain.insert(explain.end(), zero.begin(), zero.end());
  const GcsimResult e = run_gcsim(explain);
  INFO(e.err);
  CHECK(e.exit_status == 0);
  CHECK(contains(e.out, "job MTBF: none (no failures configured"));
}

TEST_CASE("failures: two seeds' interval stays inside [0, 1]", "[cli][failures]") {
  // Two short seeds differ a lot; Student's t with one degree of freedom
  // (12.7) once gave [0.1472, 1.6731] for 12 h here.
  TempDir tmp;
  const GcsimResult r = run_gcsim({"run", source_path("configs/examples/failures_small.yaml"),
                                   "-q", "-o", (tmp / "out").string(), "-s",
                                   "simulation.duration=12h", "-s", "simulation.seeds=2"});
  REQUIRE(r.exit_status == 0);
  const auto frac = read_json(tmp / "out" / "summary.json")["failures"]
                                ["effective_training_time_fraction"];
  CHECK(frac["ci95"][0].get<double>() > 0.0);
  CHECK(frac["ci95"][1].get<double>() < 1.0);
  CHECK(frac["ci95"][0] <= frac["mean"]);
  CHECK(frac["mean"] <= frac["ci95"][1]);
}
