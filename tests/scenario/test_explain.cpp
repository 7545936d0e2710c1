// `gcsim explain` through the command line: every example config explains
// with exit status 0, every estimate-vs-simulation row whose difference is
// above 10% carries a reason, -o writes explain.md equal to stdout, the same
// config gives the same worksheet, and bad input exits with status 2.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream ss(row.substr(1));
  std::string cell;
  while (std::getline(ss, cell, '|')) {
    const auto a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return out;
}

// Checks every comparison table; returns the number of rows seen.
int check_reasons(const std::string& markdown, const std::string& file) {
  std::stringstream in(markdown);
  std::string line;
  bool in_table = false;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.rfind("| quantity | estimate | simulated | difference | reason |", 0) == 0) {
      in_table = true;
      std::getline(in, line);  // |---|
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|", 0) != 0) {
      in_table = false;
      continue;
    }
    const auto c = cells(line);
    REQUIRE(c.size() >= 5);
    ++rows;
    const double diff = std::atof(c[3].c_str());  // "+12.3%" -> 12.3
    INFO(file << ": " << line);
    if (std::fabs(diff) > 10.0) {
      CHECK(!c[4].empty());
      CHECK(c[4] != "within 10%");
      // A mechanism with its figure, not the table's fallback text.
      CHECK(c[4].rfind("no specific cause found", 0) != 0);
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("gcsim explain: every example config, a reason for every difference above 10%",
          "[explain][scenario]") {
  int explained = 0;
  for (const auto& entry : fs::directory_iterator(source_path("configs/examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    TempDir tmp;
    const std::string config = entry.path().string();
    const auto r = run_gcsim({"explain", config, "-o", (tmp / "out").string()});
    INFO(config << "\nstderr: " << r.err);
    REQUIRE(r.exit_status == 0);
    CHECK(r.out.find("# gcsim explain: ") == 0);
    CHECK(check_reasons(r.out, config) > 0);
    CHECK(read_text(tmp / "out" / "explain.md") == r.out);
    CHECK(fs::exists(tmp / "out" / "summary.json"));
    ++explained;
  }
  CHECK(explained >= 10);
}

#ifndef GCSIM_NO_CHAKRA
TEST_CASE("gcsim explain: a Chakra trace is explained op by op", "[explain][scenario]") {
  const std::string config = source_path("tests/data/chakra/two_ranks.chakra.yaml");
  const auto r = run_gcsim({"explain", config});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  CHECK(check_reasons(r.out, config) > 0);
  CHECK(r.out.find("roofline") != std::string::npos);
}
#endif

TEST_CASE("gcsim explain: training worksheet in the issue's order, same output twice",
          "[explain][scenario]") {
  const std::string config = source_path("configs/examples/failures_small.yaml");
  const auto a = run_gcsim({"explain", config, "-s", "simulation.seeds=1"});
  const auto b = run_gcsim({"explain", config, "-s", "simulation.seeds=1"});
  REQUIRE(a.exit_status == 0);
  CHECK(a.out == b.out);
  size_t at = 0;
  for (const char* section : {"## 1. Model", "## 2. Memory per GPU", "## 3. Communication per step",
                              "## 4. Time per step", "## 5. Estimate vs simulation", "## 6. Reliability"}) {
    const auto p = a.out.find(section);
    INFO(section);
    REQUIRE(p != std::string::npos);
    CHECK(p > at);
    at = p;
  }
  // The formula is written out, then the numbers.
  CHECK(a.out.find("`2 l s (qk + pv widths) = 2 x 32 x 8192 x 8192`") != std::string::npos);
  CHECK(a.out.find("| step time |") != std::string::npos);
}

TEST_CASE("gcsim explain: bad input exits with status 2", "[explain][scenario]") {
  SECTION("a config with a bad key names file, line and key") {
    const std::string config = source_path("tests/data/bad/bad_unknown_gpu.yaml");
    const auto r = run_gcsim({"explain", config});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find(config + ":4:") != std::string::npos);
    CHECK(r.err.find("'cluster.gpu'") != std::string::npos);
    CHECK(r.out.empty());
  }
  SECTION("a file that does not exist") {
    const auto r = run_gcsim({"explain", "no/such/config.yaml"});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
  SECTION("no config, or --trace") {
    CHECK(run_gcsim({"explain"}).exit_status == 2);
    CHECK(run_gcsim({"explain", source_path("configs/examples/quickstart.yaml"), "--trace"}).exit_status == 2);
  }
  SECTION("a bad override") {
    const auto r = run_gcsim({"explain", source_path("configs/examples/quickstart.yaml"), "-s", "cluster.nodes=0"});
    CHECK(r.exit_status == 2);
  }
  SECTION("a mistyped command suggests explain") {
    const auto r = run_gcsim({"explian"});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find("explain") != std::string::npos);
  }
}
