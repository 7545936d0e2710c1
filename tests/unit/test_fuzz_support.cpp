// The fuzzers' own parts: the mutator is deterministic and keeps tree
// mutations well-formed, the sandbox classifies each way a child can end,
// the finding log applies the known list, the minimizer keeps the finding,
// and the harness loads configs the way `gcsim check` does.
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.h"
#include "sim/engine/random.h"
#include "tests/fuzz/config_harness.h"
#include "tests/fuzz/config_mutator.h"
#include "tests/fuzz/finding_log.h"
#include "tests/fuzz/minimizer.h"
#include "tests/fuzz/sandbox.h"

using namespace gcsim::fuzz;

namespace {

const std::string kGraphConfig =
    "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2}\n"
    "workload:\n  kind: graph\n  ops:\n"
    "    - {name: g, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096}\n"
    "    - {name: x, op: p2p, src: 0, dst: 1, bytes: 64MiB, after: [g]}\n";

}  // namespace

TEST_CASE("normalize_message blanks digits, quoted values and bracketed paths", "[fuzz]") {
  CHECK(normalize_message("rank 12 of 1024") == "rank N of N");
  CHECK(normalize_message("unknown GPU 'h900'; presets: a") == "unknown GPU '?'; presets: a");
  CHECK(normalize_message("status: File name too long [/tmp/x[[[]]]") ==
        "status: File name too long [?]");
  CHECK(normalize_message(std::string(500, 'a'), 160).size() == 160);
}

TEST_CASE("the mutator is deterministic and its tree mutations stay YAML maps", "[fuzz]") {
  const ConfigMutator mutator({kGraphConfig});
  gcsim::sim::RandomStream a(7, "test"), b(7, "test");
  int changed = 0, maps = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string x = mutator.mutate_tree(kGraphConfig, a);
    REQUIRE(x == mutator.mutate_tree(kGraphConfig, b));  // same seed, same inputs
    changed += x != kGraphConfig;
    try {
      maps += YAML::Load(x).IsMap();
    } catch (const YAML::Exception&) {
    }
  }
  // A deletion of a key that another key repeats can leave the text equal;
  // everything else changes it. Every tree mutation of a map emits a map.
  CHECK(changed >= 290);
  CHECK(maps == 300);
}

TEST_CASE("stacked mutations respect the size limit", "[fuzz]") {
  const ConfigMutator mutator({kGraphConfig});
  gcsim::sim::RandomStream rng(3, "test");
  for (int i = 0; i < 200; ++i) CHECK(mutator.mutate(kGraphConfig, rng, 512).size() <= 512);
}

TEST_CASE("the mutator mines keys from its seeds", "[fuzz]") {
  const ConfigMutator mutator({kGraphConfig, "not: [valid"});
  const auto& k = mutator.keys();
  for (const char* key : {"cluster", "gpu", "ops", "after", "bytes"}) {
    CHECK(std::find(k.begin(), k.end(), key) != k.end());
  }
}

TEST_CASE("the sandbox classifies how a child ends", "[fuzz]") {
  const SandboxLimits limits{2, 512};
  SECTION("accepted and rejected") {
    CHECK(run_sandboxed({{"check", [] { return true; }}}, limits).kind == Verdict::Kind::accepted);
    const Verdict v = run_sandboxed({{"check", [] { return true; }}, {"run", [] { return false; }}},
                                    limits);
    CHECK(v.kind == Verdict::Kind::rejected);
    CHECK(v.stage == "run");
    CHECK(!v.is_finding());
  }
  SECTION("an exception names its type, stage and message") {
    const Verdict v = run_sandboxed(
        {{"check", []() -> bool { throw std::out_of_range("index 42 past 'x'"); }}}, limits);
    CHECK(v.kind == Verdict::Kind::exception);
    CHECK(v.signature == "exception (check) std::out_of_range: index N past '?'");
  }
  SECTION("a segfault and an abort are crashes with their signal") {
    const Verdict segv = run_sandboxed({{"check", [] { return std::raise(SIGSEGV) == 0; }}}, limits);
    CHECK(segv.kind == Verdict::Kind::crash);
    CHECK(segv.signature.rfind("crash (check) SIGSEGV", 0) == 0);
    const Verdict abrt = run_sandboxed({{"run", []() -> bool { std::abort(); }}}, limits);
    CHECK(abrt.signature.rfind("crash (run) SIGABRT", 0) == 0);
  }
  SECTION("an allocation beyond the limit is out-of-memory") {
    const Verdict v = run_sandboxed({{"check", [] {
                                        std::vector<char> big(size_t{1} << 30, 1);
                                        return big[12345] == 1;
                                      }}},
                                    limits);
    CHECK(v.kind == Verdict::Kind::out_of_memory);
    CHECK(v.is_resource());
    // The allocating caller, not std::vector's internals, names the site.
    CHECK(v.signature.rfind("out-of-memory (check) at ", 0) == 0);
    CHECK(v.signature.find("std::") == std::string::npos);
  }
  SECTION("a loop past the CPU limit is a timeout") {
    const Verdict v = run_sandboxed({{"check", [] {
                                        volatile uint64_t x = 0;
                                        while (true) x = x + 1;
                                        return false;
                                      }}},
                                    SandboxLimits{1, 512});
    CHECK(v.kind == Verdict::Kind::timeout);
    // Where it was spinning (this test's lambda) follows.
    CHECK(v.signature.rfind("timeout (check) at ", 0) == 0);
  }
}

TEST_CASE("the finding log fails unknown crashes and exceptions only", "[fuzz]") {
  const auto dir = std::filesystem::temp_directory_path() / "gcsim-test-findings";
  std::filesystem::remove_all(dir);
  FindingLog log(dir, {{"std::out_of_range", "routed to the loaders"}}, false);
  Verdict known{Verdict::Kind::exception, "check", "", "exception (check) std::out_of_range: x"};
  Verdict fresh{Verdict::Kind::crash, "check", "", "crash (check) SIGSEGV"};
  Verdict slow{Verdict::Kind::timeout, "run", "", "timeout (run)"};
  CHECK(log.record(known, "a: 1\n").second);
  CHECK(!log.record(known, "a: 2\n").second);  // same class, not new
  log.record(fresh, "b: 1\n");
  log.record(slow, "c: 1\n");
  CHECK(log.failing() == 1);  // the crash; the known exception and the timeout do not fail
  const auto& e = log.entries().at(known.signature);
  CHECK(e.count == 2);
  CHECK(e.known != nullptr);
  std::ifstream saved(e.file);
  std::string text((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
  CHECK(text == "a: 1\n");  // the first input of the class
  std::filesystem::remove_all(dir);
}

TEST_CASE("the minimizer keeps only what the finding needs", "[fuzz]") {
  const std::string input =
      "cluster: {gpu: h100-sxm, nodes: 4}\nnetwork: {model: flow}\n"
      "workload:\n  kind: graph\n  ops:\n    - {name: a, bad: 1}\n    - {name: b}\n";
  int trials = 0;
  const auto has_bad = [&](const std::string& t) {
    ++trials;
    try {
      return YAML::Load(t)["workload"]["ops"][0]["bad"].as<int>(0) == 1;
    } catch (const YAML::Exception&) {
      return false;
    }
  };
  const std::string small = minimize(input, has_bad, 500);
  CHECK(has_bad(small));
  const YAML::Node n = YAML::Load(small);
  CHECK(n.size() == 1);                           // cluster and network dropped
  CHECK(n["workload"].size() == 1);               // kind dropped
  CHECK(n["workload"]["ops"].size() == 1);        // op b dropped
  CHECK(n["workload"]["ops"][0].size() == 1);     // name dropped
  CHECK(trials < 500);
}

TEST_CASE("the minimizer halves a long value while the finding stays", "[fuzz]") {
  // The finding needs a path of at least 300 characters; 16384 shrink by
  // halves to 512 (256 would be too short).
  const std::string input = "cluster:\n  calibration: " + std::string(16384, 'x') + "\n";
  const auto long_path = [](const std::string& t) {
    try {
      return YAML::Load(t)["cluster"]["calibration"].as<std::string>().size() >= 300;
    } catch (const YAML::Exception&) {
      return false;
    }
  };
  const std::string small = minimize(input, long_path, 100);
  CHECK(YAML::Load(small)["cluster"]["calibration"].as<std::string>().size() == 512);
}

TEST_CASE("the harness loads configs as gcsim check does", "[fuzz]") {
  const FuzzWorkspace ws(GCSIM_SOURCE_DIR);
  CHECK(ws.check(kGraphConfig));
  CHECK(!ws.check("cluster: {gpu: h100-sxm}\nworkload: {kind: grpah}\n"));  // ConfigError
  CHECK(!ws.check("cluster: [\n"));                                          // YAML syntax
  // The data files configs name sit beside the fuzzed config.
  CHECK(std::filesystem::exists(ws.dir() / "inference_trace.csv"));
  CHECK(std::filesystem::exists(ws.dir() / "two_ranks.0.et"));
}
