// `cluster.host: FILE` and `gcsim calibrate --host-fit`: a host profile
// file round-trips from the bench's output into a run; every mistake in
// either (a missing file, another kind of file, a cost missing or out of
// range, an unknown key, a foreign or broken bench file) ends with exit
// status 2 and a message naming the file (line and key where it has them).
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::contains;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

const char* kCosts =
    "costs:\n"
    "  router: 30us\n"
    "  permute: 35us\n"
    "  launch: 20us\n"
    "  nccl: 80us\n"
    "  sync: 40us\n"
    "  expert: 18us\n"
    "  loop_fwd: 60us\n"
    "  loop_bwd: 50us\n"
    "  slowest_rank: 1.1\n";

std::string config_with_host(const std::string& host) {
  return "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2, host: " + host + "}\n"
         "workload:\n  kind: graph\n  ops:\n"
         "    - {name: moe, op: moe, tokens: 64, hidden: 64, expert_ffn: 64, experts: 2}\n";
}

// A config on line 1 naming `profile`; the run must fail with every `also`.
void expect_bad_file(const std::string& profile_text, const std::vector<std::string>& also) {
  TempDir tmp;
  write_text(tmp / "host.yaml", profile_text);
  const fs::path config = tmp / "run.yaml";
  write_text(config, config_with_host("host.yaml"));
  const GcsimResult r = run_gcsim({"run", config.string(), "-o", (tmp / "out").string(), "-q"});
  INFO(profile_text << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  for (const auto& a : also) CHECK(contains(r.err, a));
  CHECK_FALSE(contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("cluster.host: a host profile file beside the config", "[cli][moe][host]") {
  TempDir tmp;
  write_text(tmp / "host.yaml", std::string("kind: host_profile\nmeasured_on: \"a machine\"\n") + kCosts +
                                    "fit: {ranks: 4}\nreadings: {sync_us: 40}\nprovenance: {hostname: m}\n");
  const fs::path config = tmp / "run.yaml";
  write_text(config, config_with_host("host.yaml"));
  const GcsimResult r = run_gcsim({"run", config.string(), "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const auto host = read_json(tmp / "out" / "summary.json")["moe"][0]["host"];
  CHECK(host["profile"] == (tmp / "host.yaml").string());
  CHECK(host["router_us"].get<double>() == Approx(30));
  CHECK(host["nccl_us"].get<double>() == Approx(80));
  CHECK(host["loop_bwd_us"].get<double>() == Approx(50));
  CHECK(host["slowest_rank"].get<double>() == Approx(1.1));
  // A map starts from the file and replaces some costs.
  write_text(config, config_with_host("{profile: host.yaml, sync: 45us}"));
  const GcsimResult e = run_gcsim({"run", config.string(), "-o", (tmp / "out2").string(), "-q"});
  REQUIRE(e.exit_status == 0);
  const auto edited = read_json(tmp / "out2" / "summary.json")["moe"][0]["host"];
  CHECK(edited["profile"] == (tmp / "host.yaml").string() + " (edited)");
  CHECK(edited["sync_us"].get<double>() == Approx(45));
  CHECK(edited["router_us"].get<double>() == Approx(30));
}

TEST_CASE("cluster.host bad input: the host profile file", "[cli][moe][host]") {
  {
    TempDir tmp;
    const fs::path config = tmp / "run.yaml";
    write_text(config, config_with_host("missing/host.yaml"));
    const GcsimResult r = run_gcsim({"run", config.string(), "-q"});
    CHECK(r.exit_status == 2);
    CHECK(contains(r.err, config.string() + ":1:"));
    CHECK(contains(r.err, "'cluster.host'"));
    CHECK(contains(r.err, "host profile file '" + (tmp / "missing/host.yaml").string() + "' not found"));
    CHECK(contains(r.err, "gcsim calibrate --host-fit"));
  }
  // Another kind of file: a GPU calibration profile.
  expect_bad_file("gpu: h100-sxm\nkernel_launch_latency: 2us\n", {"host.yaml:1:", "'kind'"});
  expect_bad_file(std::string("kind: calibration\n") + kCosts, {"host.yaml:1:", "'kind'", "not a host profile"});
  // Every cost is required in a file.
  std::string no_sync = std::string("kind: host_profile\n") + kCosts;
  no_sync.erase(no_sync.find("  sync: 40us\n"), 13);
  expect_bad_file(no_sync, {"host.yaml:3:", "'costs'", "missing required key 'sync'"});
  expect_bad_file("kind: host_profile\n", {"host.yaml", "costs"});
  // Out of range, located at its line.
  std::string slow = std::string("kind: host_profile\n") + kCosts;
  slow.replace(slow.find("nccl: 80us"), 10, "nccl: 2ms");
  expect_bad_file(slow, {"host.yaml:6:", "'costs.nccl'", "between 3 and 400 us"});
  std::string pace = std::string("kind: host_profile\n") + kCosts;
  pace.replace(pace.find("slowest_rank: 1.1"), 17, "slowest_rank: 0.5");
  expect_bad_file(pace, {"host.yaml:11:", "'costs.slowest_rank'", "between 1 and 2"});
  // Unknown keys, in costs and at the top.
  expect_bad_file(std::string("kind: host_profile\n") + kCosts + "  lanuch: 3us\n", {"host.yaml:12:", "costs.lanuch"});
  expect_bad_file(std::string("kind: host_profile\nspeed: fast\n") + kCosts, {"host.yaml:2:", "'speed'"});
  // Not YAML.
  expect_bad_file("kind: [host_profile\n", {"host.yaml"});
}

TEST_CASE("calibrate --host-fit bad input", "[cli][host]") {
  TempDir tmp;
  const std::string out = (tmp / "host.yaml").string();
  auto bad = [&](const std::vector<std::string>& args, const std::vector<std::string>& also) {
    const GcsimResult r = run_gcsim(args);
    INFO(r.err);
    CHECK(r.exit_status == 2);
    for (const auto& a : also) CHECK(contains(r.err, a));
    CHECK_FALSE(contains(r.err, "internal error"));
    CHECK_FALSE(fs::exists(out));
  };
  const std::string missing = (tmp / "none.json").string();
  bad({"calibrate", "--host-fit", missing, "-o", out}, {missing});
  write_text(tmp / "text.json", "not json");
  bad({"calibrate", "--host-fit", (tmp / "text.json").string(), "-o", out}, {"text.json", "not JSON"});
  write_text(tmp / "other.json", "{\"schema\": \"gcsim.microbench.v1\", \"results\": []}");
  bad({"calibrate", "--host-fit", (tmp / "other.json").string(), "-o", out},
      {"other.json", "not calibration/microbench/eager_host_bench.py's output"});
  write_text(tmp / "empty.json", "{\"schema\": \"gcsim.eager_host_bench.v1\", \"runs\": [{\"tag\": \"a\", \"blocks\": "
                                 "[{\"per_rank\": [{\"op_us\": {\"mm\": 10}}]}]}]}");
  bad({"calibrate", "--host-fit", (tmp / "empty.json").string(), "-o", out},
      {"empty.json", "runs[0].blocks[0].per_rank[0].op_us.cast: missing"});
  bad({"calibrate", "--host-fit", (tmp / "empty.json").string(), "--host-run", "b", "-o", out},
      {"no run tagged 'b' (the file has 'a')"});
  bad({"calibrate", "--host-fit", (tmp / "empty.json").string()}, {"-o PROFILE.yaml is required"});
  bad({"calibrate", "--host-run", "a", "-o", out}, {"--host-run goes with --host-fit"});
  bad({"calibrate", "--host-fit", (tmp / "empty.json").string(), "--fit", "x.json", "-o", out},
      {"--host-fit is a fit of its own"});
}
