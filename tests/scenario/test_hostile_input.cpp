// Hostile input through the real command line: files that are not what
// they claim (devices, directories, binary data, YAML that yaml-cpp reads
// in a way the user did not mean) and command-line overrides whose path is
// wrong. Each must end quickly with exit status 2 and one message naming
// the file (or the -s option), the line where there is one, and what to
// change; never exit 1, a hang or an out-of-memory crash.
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

// Runs gcsim and requires exit status 2 with every fragment in stderr.
GcsimResult expect_bad(const std::vector<std::string>& args,
                       const std::vector<std::string>& fragments) {
  const GcsimResult r = run_gcsim(args);
  std::string command = "gcsim";
  for (const auto& a : args) command += " " + a;
  INFO(command << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(!contains(r.err, "internal error"));
  for (const auto& f : fragments) CHECK(contains(r.err, f));
  return r;
}

const char* kSmallGraph = R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2}
workload:
  kind: graph
  ops:
    - {name: a, rank: 0, op: delay, duration: 1us}
    - {name: b, rank: 1, op: gemm, m: 64, n: 64, k: 64}
)";

}  // namespace

TEST_CASE("hostile input: devices, directories and binary files as the config", "[cli]") {
  // /dev/zero and /dev/urandom never end: the read stops at the first NUL
  // byte (the 16 MiB cap stops a text stream: tests/unit/test_input_file.cpp).
  expect_bad({"check", "/dev/zero"}, {"/dev/zero", "byte 0 is NUL"});
  expect_bad({"run", "/dev/urandom", "-q"}, {"/dev/urandom", "is not a text config file"});
  TempDir tmp;
  expect_bad({"run", tmp.path().string(), "-q"}, {tmp.path().string(), "is a directory"});
  write_text(tmp / "binary.yaml", std::string("cluster: {gpu: h100-sxm}\n\0\1\2", 28));
  expect_bad({"check", (tmp / "binary.yaml").string()}, {"binary.yaml", "byte 25 is NUL"});
  // A regular file over the cap is refused from its size, before reading.
  write_text(tmp / "big.yaml", "# " + std::string((16 << 20), 'x') + "\n");
  expect_bad({"check", (tmp / "big.yaml").string()}, {"big.yaml", "over the 16 MiB limit"});
}

TEST_CASE("hostile input: every file a command reads is capped", "[cli]") {
  expect_bad({"quiz", "--check", "/dev/zero"}, {"/dev/zero", "not a text answers file"});
  expect_bad({"sweep", "/dev/zero", "-q"}, {"/dev/zero", "not a text study file"});
  expect_bad({"calibrate", "--validate", "/dev/zero"},
             {"/dev/zero", "not a text calibration profile file"});
  TempDir tmp;
  expect_bad({"calibrate", "--fit", "/dev/zero", "-o", (tmp / "p.yaml").string()},
             {"/dev/zero"});
  // A serving trace is streamed with a line cap; /dev/zero is binary at byte 0.
  const std::string serving = source_path("configs/examples/inference_trace_v0.yaml");
  expect_bad({"run", serving, "-q", "-o", (tmp / "out").string(), "-s",
              "workload.requests.trace=/dev/zero"},
             {"/dev/zero", "workload.requests.trace", "not a text serving trace"});
  write_text(tmp / "long.csv", "0.1,100,20\n" + std::string(70000, '1') + "\n");
  expect_bad({"run", serving, "-q", "-o", (tmp / "out").string(), "-s",
              "workload.requests.trace=" + (tmp / "long.csv").string()},
             {"long.csv", "line 2 of the serving trace file is longer than 64 KiB"});
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

TEST_CASE("hostile input: calibrate --validate on what is not a profile", "[cli]") {
  TempDir tmp;
  // Valid YAML that is not a map (was a yaml-cpp exception, exit 1).
  write_text(tmp / "scalar.yaml", "just words\n");
  expect_bad({"calibrate", "--validate", (tmp / "scalar.yaml").string()},
             {"scalar.yaml", "the top level must be a map"});
  write_text(tmp / "list_gpu.yaml", "gpu: [1, 2]\n");
  expect_bad({"calibrate", "--validate", (tmp / "list_gpu.yaml").string()},
             {"list_gpu.yaml:1:", "'gpu'", "expected a string"});
  write_text(tmp / "bad_records.json", R"({"schema": "gcsim.microbench.v1", "meta": {},
  "results": [{"kind": 3}]})");
  expect_bad({"calibrate", "--fit", (tmp / "bad_records.json").string(), "-o",
              (tmp / "p.yaml").string()},
             {"bad_records.json"});
}

TEST_CASE("hostile input: a key written twice is an error naming both lines", "[cli]") {
  TempDir tmp;
  // yaml-cpp keeps the first of two equal keys; the second used to vanish.
  write_text(tmp / "c.yaml", std::string(kSmallGraph) + "cluster: {gpu: h200-sxm}\n");
  expect_bad({"check", (tmp / "c.yaml").string()},
             {"c.yaml:7:", "key 'cluster'", "duplicate key: also set on line 1"});
  write_text(tmp / "nested.yaml", "cluster: {gpu: h100-sxm, nodes: 1, nodes: 2}\n");
  expect_bad({"check", (tmp / "nested.yaml").string()},
             {"nested.yaml:1:", "key 'cluster.nodes'", "duplicate key"});
  // In an -s value too.
  write_text(tmp / "ok.yaml", kSmallGraph);
  expect_bad({"check", (tmp / "ok.yaml").string(), "-s", "cluster.scale_up={kind: none, kind: pcie}"},
             {"command line (-s cluster.scale_up=", "duplicate key"});
}

TEST_CASE("hostile input: a second YAML document is an error, not ignored", "[cli]") {
  TempDir tmp;
  write_text(tmp / "two.yaml", std::string(kSmallGraph) + "---\ncluster: {gpu: h200-sxm}\n");
  expect_bad({"check", (tmp / "two.yaml").string()}, {"two.yaml:8:", "a second YAML document"});
  // A trailing `---` opens an empty document: nothing is ignored, so it runs.
  write_text(tmp / "trailing.yaml", std::string(kSmallGraph) + "---\n");
  CHECK(run_gcsim({"check", (tmp / "trailing.yaml").string()}).exit_status == 0);
}

TEST_CASE("hostile input: nesting and alias expansion are bounded", "[cli]") {
  TempDir tmp;
  // 1,000 levels of flow lists (yaml-cpp's guard said only "bad file").
  write_text(tmp / "deep.yaml", "a: " + std::string(1000, '[') + std::string(1000, ']') + "\n");
  expect_bad({"check", (tmp / "deep.yaml").string()},
             {"deep.yaml:1:", "nesting depth exceeded", "64 levels"});
  // 100 levels of block maps: within yaml-cpp's guard, beyond ours, named at its line.
  std::string block;
  for (int i = 0; i < 100; ++i) block += std::string(2 * i, ' ') + "k:\n";
  write_text(tmp / "block.yaml", block);
  expect_bad({"check", (tmp / "block.yaml").string()},
             {"block.yaml:65:", "nesting depth exceeded"});
  // A "billion laughs": 40 nodes written, 10^10 once aliases expand.
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  write_text(tmp / "laughs.yaml", laughs + kSmallGraph);
  expect_bad({"check", (tmp / "laughs.yaml").string()}, {"laughs.yaml", "aliases (*name) expand"});
}

TEST_CASE("hostile input: a bad -s path names the option, not the file", "[cli]") {
  TempDir tmp;
  const std::string config = (tmp / "c.yaml").string();
  write_text(config, kSmallGraph);
  const std::vector<std::pair<std::string, std::string>> cases{
      // An empty key between two dots (blamed on the file before).
      {"cluster..nodes=3", "an empty key in the path"},
      {".cluster=3", "an empty key in the path"},
      // A key under a map the override itself created (blamed on the file before).
      {"workload.ops.0.m.k=3", "key 'workload.ops[0].m'"},
      // "1e9" is not an index (stoul read it as 1 and set op 1's m).
      {"workload.ops.1e9.m=3", "expected a list index from 0 to 1, got '1e9'"},
      {"workload.ops.7.m=3", "list index 7 out of range: 'workload.ops' has 2 items"},
  };
  for (const auto& [set, fragment] : cases) {
    const GcsimResult r = expect_bad({"check", config, "-s", set},
                                     {"command line (-s " + set + ")", fragment});
    CHECK(!contains(r.err, config));
  }
}

namespace {

// configs/examples/failures_small.yaml with `extra` -s overrides.
GcsimResult run_failures_small(const TempDir& tmp, std::vector<std::string> extra) {
  std::vector<std::string> args{"run", source_path("configs/examples/failures_small.yaml"), "-q",
                                "-o", (tmp / "out").string()};
  for (const auto& e : extra) {
    args.push_back("-s");
    args.push_back(e);
  }
  return run_gcsim(args);
}

}  // namespace

TEST_CASE("hostile input: failure rates that would draw millions of failures", "[cli]") {
  TempDir tmp;
  // 4 nodes at one failure per 10 ms for 14 days x 5 seeds: 4 x 100/s x
  // 1,209,600 s x 5 = 2.42e9 expected, over the 1e6 cap (it took 4 GB and
  // an out-of-memory crash).
  for (const char* rate : {"1/10ms", "1/1ps", "1000000/1s"}) {
    const std::string set = std::string("failures.rates.node=") + rate;
    expect_bad({"run", source_path("configs/examples/failures_small.yaml"), "-q", "-o",
                (tmp / "out").string(), "-s", set},
               {"command line (-s " + set + ")", "key 'failures.rates.node'", "failures expected",
                "at most 1000000"});
  }
  const GcsimResult r = run_failures_small(tmp, {"failures.rates.node=1/10ms"});
  CHECK(contains(r.err, "2.42e+09 failures expected"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

TEST_CASE("hostile input: numbers outside the stated ranges name their key", "[cli]") {
  TempDir tmp;
  // A Weibull shape of 1e-9 printed "-nan ps".
  GcsimResult r = run_failures_small(tmp, {"failures.rates.lifetime=weibull", "failures.rates.weibull_shape=1e-9"});
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, "key 'failures.rates.weibull_shape': must lie in [0.1, 10], got 1e-09"));
  // 1 B/s was blamed on simulation.duration: the checkpoint's 105 GiB
  // (Llama 3 8B: 8.03e9 params x 14 B) over 106 days needs 12.3 KB/s.
  r = run_failures_small(tmp, {"checkpoint.storage.bandwidth=1B/s"});
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, "key 'checkpoint.storage.bandwidth'"));
  CHECK(contains(r.err, "at least 12.3 KB/s"));
  CHECK(!contains(r.err, "simulation.duration"));
  // Days are a duration unit everywhere, up to 106 of them however written
  // (106d was refused while 2544h overflowed the failure timeline).
  CHECK(run_failures_small(tmp, {"simulation.duration=106d", "simulation.seeds=1"}).exit_status == 0);
  CHECK(run_failures_small(tmp, {"simulation.duration=2544h", "simulation.seeds=1"}).exit_status == 0);
  r = run_failures_small(tmp, {"simulation.duration=107d"});
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, "exceeds the simulator's time range (106 days)"));
  // Recovery spans that add up past the clock saturate: the job just never
  // recovers within the horizon.
  CHECK(run_failures_small(tmp, {"simulation.duration=106d", "simulation.seeds=1",
                                 "failures.detection=100d", "failures.recovery.repair=106d"})
            .exit_status == 0);
}

TEST_CASE("hostile input: a failure study too long to walk is refused with its size", "[cli]") {
  TempDir tmp;
  // A one-layer toy model steps in 2.259 ms (its collectives as NCCL runs
  // them, FlashAttention-2's tiles, Megatron's one launch queue, few-CTA
  // GEMMs paying a setup per CTA, the causal grid's tail, the optimizer's
  // scalar all-reduces) and checkpoints in ~1.06 ms: checkpointing every
  // step for 106 days over 5 seeds is 9.16e6 s / 3.32 ms x 5 = 1.38e10
  // timeline steps, over the 1e9 cap.
  const GcsimResult r = run_failures_small(
      tmp, {"workload.model.layers=1", "workload.model.seq_len=32", "workload.model.hidden=256",
            "workload.model.heads=8", "workload.model.kv_heads=8", "workload.model.ffn_hidden=512",
            "workload.model.vocab=64", "workload.attention_kernel=flash2", "checkpoint.interval=1ps",
            "simulation.duration=106d"});
  INFO(r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, "command line (-s checkpoint.interval=1ps): key 'checkpoint.interval'"));
  CHECK(contains(r.err, "1.38e+10 timeline steps"));
  CHECK(contains(r.err, "at most 1000000000"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

TEST_CASE("hostile input: a sweep that cannot run its points exits 2 with the reasons", "[cli]") {
  TempDir tmp;
  write_text(tmp / "base.yaml", kSmallGraph);
  // A misspelt axis key: every point is refused alike, so the first one
  // stops the sweep (it printed "0 of 2 points ran" and exited 0).
  write_text(tmp / "typo.yaml", "base: base.yaml\naxes:\n  cluster.nodez: [1, 2]\n");
  GcsimResult r = expect_bad({"sweep", (tmp / "typo.yaml").string(), "-q", "-o", (tmp / "o1").string()},
                             {"none of 2 points ran", "cluster.nodez (line 3)",
                              "unknown key in 'cluster' (did you mean 'nodes'?)"});
  CHECK(contains(r.out, "0 of 2 points ran"));
  CHECK_FALSE(fs::exists(tmp / "o1" / "points" / "0001" / "stderr.txt"));  // never started
  // A study that is its own base.
  write_text(tmp / "self.yaml", "base: self.yaml\naxes:\n  cluster.nodes: [1, 2]\n");
  expect_bad({"sweep", (tmp / "self.yaml").string(), "-q", "-o", (tmp / "o2").string()},
             {"self.yaml:1:", "key 'base'", "this study itself"});
  // One case with a misspelt key among good ones: the good one runs, the
  // sweep still exits 2 and names the key.
  write_text(tmp / "cases.yaml",
             "base: base.yaml\ncases:\n  - {name: ok, set: {cluster.nodes: 1}}\n"
             "  - {name: typo, set: {workload.opz: []}}\n");
  r = expect_bad({"sweep", (tmp / "cases.yaml").string(), "-q", "-o", (tmp / "o3").string()},
                 {"1 of 2 points ran", "1 refused because a key of the study is not a config key",
                  "key 'workload.opz'"});
  CHECK(fs::exists(tmp / "o3" / "points" / "0000" / "summary.json"));
  // Impossible points alone are an answer, not an error: exit 0.
  write_text(tmp / "impossible.yaml", "base: base.yaml\naxes:\n  cluster.gpus_per_node: [2, 0]\n");
  r = run_gcsim({"sweep", (tmp / "impossible.yaml").string(), "-q", "-o", (tmp / "o4").string()});
  INFO(r.err);
  CHECK(r.exit_status == 0);
  CHECK(contains(r.out, "1 of 2 points ran"));
}

TEST_CASE("hostile input: an output directory that takes no files is the -o option's fault", "[cli]") {
  // As root, /proc/self passes access() but refuses files (was exit 1,
  // "internal error: cannot write /proc/self/summary.json").
  for (const char* config : {"configs/examples/quickstart.yaml", "configs/examples/inference_llama3_8b.yaml"}) {
    expect_bad({"run", source_path(config), "-q", "-o", "/proc/self"},
               {"command line: key '-o'", "/proc/self"});
  }
  expect_bad({"run", source_path("configs/examples/quickstart.yaml"), "-q", "-o", "/dev/null"},
             {"command line: key '-o'", "Not a directory"});
}
