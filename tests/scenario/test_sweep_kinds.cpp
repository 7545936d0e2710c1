// `gcsim sweep` fits its output to the workload kind: serving points get
// TTFT/TPOT percentiles, goodput and throughput per GPU, ranked by goodput
// per GPU; hand-written graphs their simulated time (not a "step"); axes
// over list items keep their whole key; and the size of the study and the
// time it will take are said before the rest runs.
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::GcsimResult;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using gcsim::test::write_text;

using gcsim::test::contains;

TEST_CASE("sweep of a serving config: the serving table, ranked by goodput per GPU",
          "[scenario][cli]") {
  TempDir tmp;
  // Llama 3 8B on one H100, 40 requests (short), SLOs TTFT 2 s and TPOT
  // 50 ms that both rates meet: goodput is then the request rate, so 8 req/s
  // ranks above 2 req/s.
  write_text(tmp / "study.yaml",
             "name: serving\nbase: " + source_path("configs/examples/inference_llama3_8b.yaml") +
                 "\naxes:\n  workload.requests.arrival.rate: [2, 8]\n"
                 "cases:\n  - {name: short, set: {workload.requests.count: 40}}\n");
  const GcsimResult r = run_gcsim({"sweep", (tmp / "study.yaml").string(), "-o",
                                   (tmp / "out").string(), "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const std::string md = read_text(tmp / "out" / "results.md");
  CHECK(contains(md, "Ranked: by goodput per GPU"));
  CHECK(contains(md, "| # | point | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | goodput (req/s) | "
                     "SLO met | output tok/s/GPU | req/s |"));
  CHECK_FALSE(contains(md, "| step |"));
  CHECK(contains(md, "| 1 | short, rate=8 |"));
  CHECK(contains(md, "| 2 | short, rate=2 |"));
  const std::string csv = read_text(tmp / "out" / "results.csv");
  CHECK(csv.rfind("point,case,workload.requests.arrival.rate,status,ttft_p50_s,ttft_p99_s,"
                  "tpot_p50_s,tpot_p99_s,goodput_requests_per_s,slo_attainment,requests_per_s,"
                  "output_tokens_per_s_per_gpu,reason\n",
                  0) == 0);
  CHECK(contains(r.err, ": TTFT p99 "));
}

TEST_CASE("sweep of a graph over list items: whole keys as labels, ranked by simulated time",
          "[scenario][cli]") {
  TempDir tmp;
  // Two axes over list items of the quickstart: both end in a word that
  // says nothing alone (bytes of op 7, the all-reduce; bytes of op 5, the
  // memcpy), so each shows its whole key.
  write_text(tmp / "study.yaml",
             "name: graph\nbase: " + source_path("configs/examples/quickstart.yaml") +
                 "\naxes:\n  workload.ops.7.bytes: [256MiB, 64MiB]\n  workload.ops.5.bytes: [1GiB]\n");
  const GcsimResult r =
      run_gcsim({"sweep", (tmp / "study.yaml").string(), "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const std::string md = read_text(tmp / "out" / "results.md");
  CHECK(contains(md, "Ranked: configurations that fit first, then by simulated time."));
  CHECK(contains(md, "| # | point | simulated time | memory/GPU | fits |"));
  // The smaller all-reduce ends sooner: ranked first.
  CHECK(contains(md, "| 1 | workload.ops.7.bytes=64MiB, workload.ops.5.bytes=1GiB |"));
  CHECK(contains(md, "| 2 | workload.ops.7.bytes=256MiB, workload.ops.5.bytes=1GiB |"));
  CHECK_FALSE(contains(md, "| bytes="));
  // The size first, then the estimate from the first point (even with -q).
  CHECK(contains(r.err, "[sweep] graph: 2 points (2 axes x 1 case), 1 at a time\n"));
  CHECK(contains(r.err, "[sweep] the first point took "));
  CHECK(contains(r.err, ": if the others cost as much, the other 1 take about "));
  CHECK(r.err.find("2 points") < r.err.find("the first point took"));
}
