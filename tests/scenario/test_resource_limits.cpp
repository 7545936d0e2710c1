// Runs too big for the machine through the real command line: each is
// refused before its workload is built (in well under a second), with exit
// status 2, the estimate, and the key that drives it; or, when only running
// shows it, stopped at --max-events with the same contract. Limits are
// given explicitly where the machine's default would make the outcome
// depend on the machine the tests run on.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using gcsim::test::write_text;

using gcsim::test::contains;

namespace {

struct Timed {
  GcsimResult r;
  double seconds;
};

// `gcsim run CONFIG -q -o TMP/out` plus `extra`; requires exit 2, no
// summary.json and every fragment in stderr.
Timed expect_refused(const std::string& config, const std::vector<std::string>& extra,
                     const std::vector<std::string>& fragments) {
  TempDir tmp;
  std::vector<std::string> args{"run", config, "-q", "-o", (tmp / "out").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto start = std::chrono::steady_clock::now();
  Timed t{run_gcsim(args), 0};
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("stderr: " << t.r.err);
  CHECK(t.r.exit_status == 2);
  CHECK(!contains(t.r.err, "internal error"));
  for (const auto& f : fragments) CHECK(contains(t.r.err, f));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
  return t;
}

const std::string kFailuresSmall = source_path("configs/examples/failures_small.yaml");

}  // namespace

TEST_CASE("resource limits: a hundred million sequences per step is refused before generation",
          "[cli]") {
  // 1e8 / (micro 1 x dp 4) = 2.5e7 micro-batches x 32 layers x ~30 ops:
  // 2.4e10 ops, ~16.6 TB: beyond any machine (it took 3.3 GB and 20 s
  // before the allocation failed, exit 1).
  const Timed t = expect_refused(kFailuresSmall, {"-s", "workload.batch.global=100000000"},
                                 {"key 'workload.batch.global'", "25000000 micro-batches",
                                  "2.44e+10 ops", "Lower workload.batch.global"});
  CHECK(t.seconds < 5);
}

TEST_CASE("resource limits: a million layers is refused, and said not to fit in HBM", "[cli]") {
  // 8 micro-batches x 1e6 layers x ~30 ops = 2.4e8 ops, ~153 GiB; 1.5e9
  // events also pass the default 1e9. Llama 3 8B's layer holds 218M
  // parameters: 1e6 of them need ~5e5 GiB per GPU at TP 8.
  const Timed t = expect_refused(kFailuresSmall, {"-s", "workload.model.layers=1000000"},
                                 {"key 'workload.model.layers'", "2.42e+08 ops",
                                  "--max-events 1e+09 (the default",
                                  "The model does not fit in HBM either"});
  CHECK(t.seconds < 5);
}

TEST_CASE("resource limits: --max-memory and --max-events set the limits", "[cli]") {
  // 10,000 layers: 2.42e6 ops, about 1.6 GiB; a 1 GiB limit refuses it.
  expect_refused(kFailuresSmall, {"-s", "workload.model.layers=10000", "--max-memory", "1GiB"},
                 {"about 1.6 GiB of memory", "more than --max-memory 1 GiB"});
  // Every rank of a 16,384-GPU step: 7.7e7 ops on 16,384 simulated GPUs.
  expect_refused(source_path("configs/studies/llama3-405b-16k.yaml"),
                 {"-s", "workload.simulate=all", "--max-memory", "4GiB"},
                 {"key 'workload.simulate'", "16384 simulated GPUs", "Use workload.simulate: auto"});
  expect_refused(kFailuresSmall, {"--max-events", "10000"},
                 {"47280 events", "more than --max-events 10000"});
  // The flags themselves are checked.
  expect_refused(kFailuresSmall, {"--max-memory", "lots"}, {"key '--max-memory'", "lots"});
  expect_refused(kFailuresSmall, {"--max-events", "1.5"}, {"key '--max-events'", "whole number"});
  expect_refused(kFailuresSmall, {"--max-events", "-3"}, {"key '--max-events'"});
}

TEST_CASE("resource limits: a graph too large is refused before its ops are read", "[cli]") {
  TempDir tmp;
  std::string yaml = "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}\nworkload:\n  kind: graph\n  ops:\n";
  for (int i = 0; i < 2000; ++i) {
    yaml += "    - {name: d" + std::to_string(i) + ", rank: 0, op: delay, duration: 1us}\n";
  }
  // One all-ranks collective counts 8 ops.
  yaml += "    - {name: ar, op: all_reduce, bytes: 1MiB}\n";
  write_text(tmp / "g.yaml", yaml);
  // 2001 written ops x 10 kB + 2008 ops x 680 B + 64 MiB = 88.5 MB.
  expect_refused((tmp / "g.yaml").string(), {"--max-memory", "80MB"},
                 {"g.yaml:4:", "key 'workload.ops'", "the graph's 2001 ops (2008 once collectives",
                  "more than --max-memory 76.3 MiB"});
  const GcsimResult ok = run_gcsim({"run", (tmp / "g.yaml").string(), "-q", "-o",
                                    (tmp / "out").string(), "--max-memory", "100MB"});
  CHECK(ok.exit_status == 0);
}

TEST_CASE("resource limits: serving too many requests is refused; a run past --max-events stops",
          "[cli]") {
  const std::string serving = source_path("configs/examples/inference_llama3_8b.yaml");
  // 1e8 requests x ~4 kB: ~373 GiB.
  expect_refused(serving, {"-s", "workload.requests.count=100000000"},
                 {"key 'workload.requests.count'", "100000000 requests", "373 GiB"});
  // 200 requests of 128 output tokens take more than 1,000 events (the
  // estimate, 3 per request, is 600): the engine stops at the limit.
  expect_refused(serving, {"--max-events", "1000"},
                 {"command line: key '--max-events'", "reached --max-events 1000",
                  "nothing was written"});
}

#ifndef GCSIM_NO_CHAKRA
TEST_CASE("resource limits: a Chakra trace is weighed by its files before it is read", "[cli]") {
  // two_ranks.{0,1}.et hold 753 + 678 = 1431 B: 64 MiB + 7 x 1431 B =
  // 67,118,881 B. A limit just under refuses it; just over runs it.
  const std::string config = source_path("tests/data/chakra/two_ranks.chakra.yaml");
  expect_refused(config, {"--max-memory", "67110000B"},
                 {"key 'workload.prefix'", "the trace's 2 files hold 1431 B"});
  TempDir tmp;
  const GcsimResult r = run_gcsim({"run", config, "-q", "-o", (tmp / "out").string(),
                                   "--max-memory", "67120000B"});
  INFO(r.err);
  CHECK(r.exit_status == 0);
}
#endif
