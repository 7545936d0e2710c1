// Every example config runs, and writes the summary.json that scripts rely
// on (DESIGN.md, "Command line (contract)") and a well-formed report.html; runs are deterministic; `gcsim
// check` prints the resolved config; -s overrides change the simulation and
// are recorded in it.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/html_check.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using gcsim::test::write_text;
using Json = nlohmann::ordered_json;

using gcsim::test::contains;

namespace {

// configs/examples/*.yaml, globbed now so that a new example is covered
// without touching this file.
std::vector<fs::path> example_configs() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(source_path("configs/examples"))) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The contract keys of every run, and of kind graph.
void check_summary_contract(const Json& s) {
  REQUIRE(s.is_object());
  for (const char* key : {"kind", "simulated_time_s", "events", "wall_time_s", "config"}) {
    INFO("key " << key);
    CHECK(s.contains(key));
  }
  CHECK(s["kind"].is_string());
  CHECK(s["simulated_time_s"].is_number());
  CHECK(s["simulated_time_s"].get<double>() >= 0.0);
  CHECK(s["events"].is_number_unsigned());
  CHECK(s["wall_time_s"].is_number());
  CHECK(s["config"].is_object());
  CHECK(s["config"].contains("cluster"));
  CHECK(s["config"].contains("workload"));
  CHECK(s["config"]["workload"]["kind"] == s["kind"]);
  if (s["kind"] == "graph") {
    REQUIRE(s.contains("ops"));
    REQUIRE(s["ops"].is_array());
    CHECK_FALSE(s["ops"].empty());
    double last_end = 0.0;
    for (const auto& op : s["ops"]) {
      CHECK(op["name"].is_string());
      CHECK(op["rank"].is_number_integer());
      CHECK(op["start_s"].is_number());
      CHECK(op["end_s"].is_number());
      CHECK(op["end_s"].get<double>() >= op["start_s"].get<double>());
      last_end = std::max(last_end, op["end_s"].get<double>());
    }
    // A completed run's simulated time is when its last op ended.
    if (s.value("status", "ok") == "ok") CHECK(s["simulated_time_s"].get<double>() == last_end);
  }
}

// summary.json without its one non-deterministic line (wall_time_s).
std::string without_wall_time(const std::string& summary) {
  std::istringstream in(summary);
  std::string out, line;
  while (std::getline(in, line)) {
    if (!contains(line, "\"wall_time_s\"")) out += line + "\n";
  }
  return out;
}

const Json* find_op(const Json& s, const std::string& name, int rank) {
  for (const auto& op : s["ops"]) {
    if (op["name"] == name && op["rank"] == rank) return &op;
  }
  return nullptr;
}

double duration_of(const Json& s, const std::string& name, int rank) {
  const Json* op = find_op(s, name, rank);
  REQUIRE(op != nullptr);
  return (*op)["end_s"].get<double>() - (*op)["start_s"].get<double>();
}

}  // namespace

TEST_CASE("every example config runs and writes the summary contract", "[scenario]") {
  const auto files = example_configs();
  REQUIRE(files.size() >= 3);  // quickstart and the two added with these tests
  CHECK(std::find(files.begin(), files.end(), fs::path(source_path("configs/examples/quickstart.yaml"))) !=
        files.end());
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.filename().string()) {
      TempDir tmp;
      const GcsimResult r = run_gcsim({"run", file.string(), "-o", (tmp / "out").string(), "-q"});
      INFO("stderr: " << r.err);
      REQUIRE(r.exit_status == 0);
      REQUIRE(fs::exists(tmp / "out" / "summary.json"));
      CHECK(fs::exists(tmp / "out" / "report.md"));
      REQUIRE(fs::exists(tmp / "out" / "report.html"));
      CHECK(gcsim::test::html_problem(read_text(tmp / "out" / "report.html")) == "");
      CHECK_FALSE(fs::exists(tmp / "out" / "trace.json"));  // only with --trace
      check_summary_contract(read_json(tmp / "out" / "summary.json"));
      // A header comment saying what it shows and how to run it.
      const std::string text = read_text(file);
      CHECK(text.rfind("# ", 0) == 0);
      CHECK(contains(text, "gcsim run configs/examples/" + file.filename().string()));
    }
  }
}

TEST_CASE("the same seed gives byte-identical summary and trace", "[scenario]") {
  TempDir tmp;
  const std::string config = source_path("configs/examples/quickstart.yaml");
  for (const char* dir : {"a", "b"}) {
    const GcsimResult r = run_gcsim(
        {"run", config, "-o", (tmp / dir).string(), "--seed", "7", "--trace", "-q"});
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_status == 0);
  }
  const std::string sa = read_text(tmp / "a" / "summary.json");
  const std::string sb = read_text(tmp / "b" / "summary.json");
  CHECK(contains(sa, "\"wall_time_s\""));
  CHECK(without_wall_time(sa) == without_wall_time(sb));
  const std::string ta = read_text(tmp / "a" / "trace.json");
  CHECK_FALSE(ta.empty());
  CHECK(ta == read_text(tmp / "b" / "trace.json"));
  // The trace is JSON that Perfetto can load.
  const Json trace = Json::parse(ta);
  CHECK(trace.contains("traceEvents"));
  CHECK_FALSE(trace["traceEvents"].empty());
  // --seed wins over simulation.seed and is recorded.
  CHECK(read_json(tmp / "a" / "summary.json")["config"]["simulation"]["seed"] == 7);
}

TEST_CASE("gcsim check prints the resolved config with docs, and it round-trips", "[scenario]") {
  const std::string config = source_path("configs/examples/quickstart.yaml");
  const GcsimResult c = run_gcsim({"check", config});
  INFO("stderr: " << c.err);
  REQUIRE(c.exit_status == 0);
  CHECK(contains(c.out, "gpu: h100-sxm"));
  // Defaults filled in, each key with its one-line doc on its own line.
  CHECK(contains(c.out, "nodes: 1  # number of nodes"));
  CHECK(contains(c.out, "collective_sms: 24  # SMs a collective kernel holds per GPU"));
  CHECK(contains(c.out, "model: analytical"));
  // Units in canonical spelling: 400Gbps prints as 50GB/s.
  CHECK(contains(c.out, "nic_bandwidth: 50GB/s"));

  // The printed config is itself a config that simulates the same thing.
  TempDir tmp;
  write_text(tmp / "resolved.yaml", c.out);
  const GcsimResult again = run_gcsim(
      {"run", (tmp / "resolved.yaml").string(), "-o", (tmp / "resolved").string(), "-q"});
  INFO("stderr: " << again.err);
  REQUIRE(again.exit_status == 0);
  const GcsimResult orig = run_gcsim({"run", config, "-o", (tmp / "orig").string(), "-q"});
  REQUIRE(orig.exit_status == 0);
  const Json a = read_json(tmp / "resolved" / "summary.json");
  const Json b = read_json(tmp / "orig" / "summary.json");
  CHECK(a["simulated_time_s"] == b["simulated_time_s"]);
  CHECK(a["ops"] == b["ops"]);
  CHECK(a["config"] == b["config"]);
}

// The resolved config is the config: for every example, the text `gcsim
// check` prints, saved elsewhere and run, gives the same summary.json byte
// for byte (apart from wall_time_s), config included, and checking it again
// prints the same resolved config. Keys read in a shape-dependent way
// (a graph collective's `ranks:`) and config-relative files (an inference
// trace) once fell out of it. The examples are short (the slowest,
// failures_llama3_16k, takes about a second), so none needs shortening.
TEST_CASE("every example's resolved config reproduces its run", "[scenario]") {
  for (const auto& file : example_configs()) {
    DYNAMIC_SECTION(file.filename().string()) {
      TempDir tmp;
      const GcsimResult check = run_gcsim({"check", file.string()});
      INFO("stderr: " << check.err);
      REQUIRE(check.exit_status == 0);
      write_text(tmp / "resolved.yaml", check.out);
      const GcsimResult orig = run_gcsim({"run", file.string(), "-o", (tmp / "orig").string(), "-q"});
      const GcsimResult again = run_gcsim(
          {"run", (tmp / "resolved.yaml").string(), "-o", (tmp / "again").string(), "-q"});
      INFO("stderr: " << orig.err << again.err);
      REQUIRE(orig.exit_status == 0);
      REQUIRE(again.exit_status == 0);
      CHECK(without_wall_time(read_text(tmp / "again" / "summary.json")) ==
            without_wall_time(read_text(tmp / "orig" / "summary.json")));
      // A fixed point: the resolved config resolves to itself (the first
      // line names the file checked).
      const GcsimResult recheck = run_gcsim({"check", (tmp / "resolved.yaml").string()});
      REQUIRE(recheck.exit_status == 0);
      const auto body = [](const std::string& t) { return t.substr(t.find('\n') + 1); };
      CHECK(body(recheck.out) == body(check.out));
    }
  }
}

TEST_CASE("-s cluster.gpu=h200-sxm changes the simulation and is recorded", "[scenario]") {
  // H200 is the H100's die with HBM3e: 4.8 TB/s instead of 3.35 TB/s and
  // 143771 MiB instead of 81559 MiB, same SMs, tensor peak and NVLink. So
  // the memory-bound ops (rank 1's GELU and 1 GiB memcpy) get faster, the
  // all-reduce (NVLink alpha-beta) does not change, and the capacity grows.
  TempDir tmp;
  const std::string config = source_path("configs/examples/quickstart.yaml");
  const GcsimResult h100 = run_gcsim({"run", config, "-o", (tmp / "h100").string(), "-q"});
  const GcsimResult h200 = run_gcsim(
      {"run", config, "-o", (tmp / "h200").string(), "-q", "-s", "cluster.gpu=h200-sxm"});
  INFO("stderr: " << h100.err << h200.err);
  REQUIRE(h100.exit_status == 0);
  REQUIRE(h200.exit_status == 0);
  const Json a = read_json(tmp / "h100" / "summary.json");
  const Json b = read_json(tmp / "h200" / "summary.json");
  CHECK(a["simulated_time_s"] != b["simulated_time_s"]);
  CHECK(a["config"]["cluster"]["gpu"] == "h100-sxm");
  CHECK(b["config"]["cluster"]["gpu"] == "h200-sxm");
  CHECK(b["gpu"] == "h200-sxm");
  CHECK(b["memory"]["capacity_bytes"] == int64_t{143771} * 1024 * 1024);
  CHECK(duration_of(b, "act", 1) < duration_of(a, "act", 1));
  CHECK(duration_of(b, "cp", 1) < duration_of(a, "cp", 1));
  // 1 GiB memcpy reads and writes 2 GiB: nearly bandwidth-bound, so close
  // to the HBM ratio 3350/4800 (launch and per-wave overheads aside).
  CHECK(duration_of(b, "cp", 1) / duration_of(a, "cp", 1) == Approx(3350.0 / 4800.0).epsilon(0.05));
  // Equal up to the rounding of its start and end seconds (it starts at a
  // different time: the attention presets differ).
  CHECK(duration_of(b, "ar", 0) == Approx(duration_of(a, "ar", 0)).epsilon(1e-9));
}
