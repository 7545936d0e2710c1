// report.html of `gcsim run` (training, inference, collective, graph),
// `gcsim sweep` and `gcsim plan`: well-formed and self-contained
// (html_check.h), rendered by headless Chromium with every chart in its DOM,
// and its charts carrying the run's own figures (a bar's tooltip is the
// summary.json number, one marker per simulated layout, one line per
// latency distribution).
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/html_check.h"
#include "scenario/run_gcsim.h"
#include "scenario/small_training.h"
#include "sim/report/format.h"

namespace fs = std::filesystem;
using gcsim::test::count_of;
using gcsim::test::html_problem;
using gcsim::test::read_json;
using gcsim::test::small_training_config;
using gcsim::test::read_text;
using gcsim::test::render_in_chromium;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// The page loads in Chromium, and its DOM holds every chart of the file.
void check_renders(const fs::path& page) {
  const std::string html = read_text(page);
  INFO(page.string());
  CHECK(html_problem(html) == "");
  const auto r = render_in_chromium(page);
  INFO("chromium stderr: " << r.err);
  REQUIRE(r.found);  // scripts/setup installs Debian's chromium
  CHECK(r.exit_status == 0);
  CHECK(count_of(r.dom, "<svg") == count_of(html, "<svg"));
  CHECK(count_of(r.dom, "</figure>") == count_of(html, "</figure>"));
  CHECK(count_of(r.dom, "<h1>") == 1);
}

}  // namespace

TEST_CASE("report.html of a training run: breakdown per pipeline rank, memory, timeline, links",
          "[scenario][html]") {
  TempDir tmp;
  write_text(tmp / "t.yaml", small_training_config("flow"));
  const auto r = run_gcsim({"run", (tmp / "t.yaml").string(), "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const fs::path page = tmp / "out" / "report.html";
  check_renders(page);
  const std::string html = read_text(page);
  const auto s = read_json(tmp / "out" / "summary.json");
  // One bar per simulated pipeline rank, each part's tooltip its figure.
  for (const auto& pr : s["per_rank"]) {
    const std::string bar = "PP " + std::to_string(pr["pipeline_rank"].get<int>()) + " (GPU " +
                            std::to_string(pr["rank"].get<int>()) + ")";
    CHECK(html.find(bar + ": compute " + gcsim::cli::human_time(pr["compute_s"].get<double>())) != std::string::npos);
    CHECK(html.find(bar + ": bubble " + gcsim::cli::human_time(pr["bubble_s"].get<double>())) != std::string::npos);
  }
  // The fullest rank's weights against the 80 GB capacity line.
  const int worst = s["memory"]["worst_pipeline_rank"].get<int>();
  CHECK(html.find("PP " + std::to_string(worst) + ": weights " +
                  gcsim::cli::human_bytes(s["memory"]["breakdown"]["weights"].get<double>())) != std::string::npos);
  CHECK(html.find("HBM capacity " + gcsim::cli::gib(s["memory"]["capacity_bytes"].get<double>())) !=
        std::string::npos);
  CHECK(html.find("One step, per simulated GPU and stream") != std::string::npos);
  CHECK(html.find("Busiest links (utilization over the run)") != std::string::npos);
}

TEST_CASE("report.html of a serving run: latency CDFs, throughput over time, memory", "[scenario][html]") {
  TempDir tmp;
  const auto r = run_gcsim({"run", source_path("configs/examples/inference_llama3_8b.yaml"), "-o",
                            (tmp / "out").string(), "-q", "-s", "workload.requests.count=40"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const fs::path page = tmp / "out" / "report.html";
  check_renders(page);
  const std::string html = read_text(page);
  // TTFT, TPOT, E2E distributions and the prefill and decode rates.
  CHECK(count_of(html, "<polyline") == 5);
  CHECK(html.find("TTFT and TPOT, cumulative distribution") != std::string::npos);
  CHECK(html.find("Tokens processed per second, all replicas") != std::string::npos);
  CHECK(html.find("serving replicas: KV cache") != std::string::npos);
  // The p50 TTFT of the facts is summary.json's.
  const auto s = read_json(tmp / "out" / "summary.json");
  CHECK(html.find(gcsim::cli::human_time(s["ttft_s"]["p50"].get<double>())) != std::string::npos);
}

TEST_CASE("report.html of collective and graph runs", "[scenario][html]") {
  TempDir tmp;
  for (const char* example : {"collective_allreduce_8xh100", "quickstart"}) {
    const fs::path out = tmp / example;
    const auto r = run_gcsim({"run", source_path(std::string("configs/examples/") + example + ".yaml"), "-o",
                              out.string(), "-q"});
    INFO(r.err);
    REQUIRE(r.exit_status == 0);
    check_renders(out / "report.html");
  }
  // One bus-bandwidth line for the one op swept over 8 sizes.
  const std::string coll = read_text(tmp / "collective_allreduce_8xh100" / "report.html");
  CHECK(count_of(coll, "<polyline") == 1);
  CHECK(coll.find("all_reduce (8 GPUs)") != std::string::npos);
  CHECK(read_text(tmp / "quickstart" / "report.html").find("Ops per GPU and stream") != std::string::npos);
}

TEST_CASE("report.html of a sweep and a plan: throughput scatter with the Pareto front", "[scenario][html]") {
  TempDir tmp;
  write_text(tmp / "base.yaml", small_training_config("flow"));
  write_text(tmp / "study.yaml", R"(
name: tiny
base: base.yaml
axes:
  workload.parallelism.tp: [8, 4]
  workload.recompute: [full, none]
)");
  const auto sw = run_gcsim({"sweep", (tmp / "study.yaml").string(), "-o", (tmp / "sweep").string(), "-j", "2", "-q"});
  INFO(sw.err);
  REQUIRE(sw.exit_status == 0);
  check_renders(tmp / "sweep" / "report.html");
  const std::string sweep = read_text(tmp / "sweep" / "report.html");
  // Four points, each a marker, a bar and a row; the front joins some of them.
  CHECK(count_of(sweep, "<circle") == 4);
  CHECK(count_of(sweep, "class=\"front\"") == 1);
  CHECK(sweep.find("#4: compute") != std::string::npos);

  const auto pl = run_gcsim({"plan", (tmp / "base.yaml").string(), "-o", (tmp / "plan").string(), "-j", "2",
                             "--top", "2", "-q"});
  INFO(pl.err);
  REQUIRE(pl.exit_status == 0);
  check_renders(tmp / "plan" / "report.html");
  const std::string plan = read_text(tmp / "plan" / "report.html");
  const auto j = read_json(tmp / "plan" / "plan.json");
  size_t simulated = 0;
  for (const auto& l : j["simulated"]) simulated += l["status"] == "ok";
  // Thousands of estimated candidates become a density grid; each simulated
  // layout is one marker.
  CHECK(j["candidates_scored"].get<size_t>() > 1500);
  CHECK(count_of(plan, "<circle") == simulated);
  CHECK(count_of(plan, "class=\"front\"") == 1);
  CHECK(plan.find("Why the well-known layouts lose") != std::string::npos);
}

TEST_CASE("html_problem finds what is not well-formed or not self-contained", "[html]") {
  const std::string head = "<!DOCTYPE html>\n<html><body>";
  CHECK(html_problem(head + "<p>a &amp; b</p></body></html>") == "");
  CHECK(html_problem(head + "<p>a & b</p></body></html>").find("entity") != std::string::npos);
  CHECK(html_problem(head + "<p><b>x</p></b></body></html>").find("closes <b>") != std::string::npos);
  CHECK(html_problem(head + "<svg><rect x=\"1\"/></svg>") .find("never closed") != std::string::npos);
  CHECK(html_problem(head + "<script>1</script></body></html>").find("<script>") != std::string::npos);
  CHECK(html_problem(head + "<img src=\"a.png\"/></body></html>").find("fetches a.png") != std::string::npos);
  CHECK(html_problem(head + "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg></body></html>") == "");
  CHECK(html_problem(head + "<rect fill=red/></body></html>").find("unquoted") != std::string::npos);
}
