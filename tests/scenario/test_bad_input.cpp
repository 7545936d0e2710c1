// Bad input through the real command line: every class of mistake a user
// can make in a config or on the command line must end with exit status 2,
// one message on stderr naming the file, the line and the key, and no
// summary.json (DESIGN.md, "Command line (contract)"). A crash, exit 1 or a
// half-written output directory is a failure here.
//
// Each config lives in tests/data/bad/ with a header comment saying what is
// wrong and on which line.
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

using gcsim::test::contains;

namespace {

constexpr int kBadInput = 2;
constexpr int kOverride = -1;

struct Expect {
  const char* file;                      // under tests/data/bad/
  int line;  // 1-based line the message must name; 0: the file but no line;
             // kOverride: the -s override stands in for file and line
  const char* key;                       // dotted key the message must name ("" = none)
  std::vector<const char*> also;         // further fragments the message must contain
  std::vector<std::string> extra_args;   // e.g. -s overrides
};

// Runs `gcsim run tests/data/bad/FILE -o TMP/out` and checks the contract.
void expect_bad_config(const Expect& e) {
  TempDir tmp;
  const std::string config = source_path(std::string("tests/data/bad/") + e.file);
  const fs::path out = tmp / "out";
  std::vector<std::string> args{"run", config, "-o", out.string(), "-q"};
  args.insert(args.end(), e.extra_args.begin(), e.extra_args.end());
  const GcsimResult r = run_gcsim(args);
  INFO("gcsim run " << e.file << "\nstderr: " << r.err << "\nstdout: " << r.out);
  CHECK(r.exit_status == kBadInput);
  // The file as the user named it, then the line: "path/file.yaml:7:".
  if (e.line > 0) {
    CHECK(contains(r.err, config + ":" + std::to_string(e.line) + ":"));
  } else if (e.line == kOverride) {
    CHECK(contains(r.err, "command line (-s "));
    CHECK(!contains(r.err, config));
  } else {
    CHECK(contains(r.err, config));
  }
  if (*e.key) CHECK(contains(r.err, std::string("'") + e.key + "'"));
  for (const char* fragment : e.also) CHECK(contains(r.err, fragment));
  CHECK(!contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(out / "summary.json"));
}

}  // namespace

TEST_CASE("bad input: unknown key suggests the nearest known one", "[cli]") {
  expect_bad_config({"bad_unknown_key.yaml", 7, "cluster.nodez", {"did you mean 'nodes'?"}, {}});
}

TEST_CASE("bad input: unknown key inside an op", "[cli]") {
  expect_bad_config(
      {"bad_unknown_op_key.yaml", 9, "workload.ops[1].dtyp", {"did you mean 'dtype'?"}, {}});
}

TEST_CASE("bad input: wrong type", "[cli]") {
  expect_bad_config(
      {"bad_wrong_type.yaml", 5, "cluster.nodes", {"expected an integer", "eight"}, {}});
}

TEST_CASE("bad input: missing required keys", "[cli]") {
  SECTION("m of a gemm: the op's map and the missing key are named") {
    expect_bad_config({"bad_missing_gemm_m.yaml", 8, "workload.ops[1]",
                       {"missing required key 'm'"}, {}});
  }
  SECTION("the workload section") {
    // The top-level map starts on line 2 (after the comment).
    expect_bad_config(
        {"bad_missing_workload.yaml", 2, "", {"missing required key 'workload'"}, {}});
  }
}

TEST_CASE("bad input: impossible values", "[cli]") {
  SECTION("zero GPUs") {
    expect_bad_config({"bad_zero_nodes.yaml", 4, "cluster.nodes", {"at least 1"}, {}});
  }
  SECTION("2^32 + 1 nodes is refused, not narrowed to 1") {
    expect_bad_config({"bad_nodes_overflow.yaml", 4, "cluster.nodes", {"million"}, {}});
  }
  SECTION("negative bytes") {
    expect_bad_config(
        {"bad_negative_bytes.yaml", 7, "workload.ops[0].bytes", {"negative"}, {}});
  }
  SECTION("unknown unit") {
    expect_bad_config(
        {"bad_unknown_unit.yaml", 8, "workload.ops[0].bytes", {"unknown unit 'MiBs'", "MiB"}, {}});
  }
  SECTION("kv_len shorter than q_len") {
    expect_bad_config({"bad_kv_len.yaml", 13, "workload.ops[0].kv_len", {"q_len"}, {}});
  }
  SECTION("freeing more than was allocated") {
    expect_bad_config({"bad_free_unallocated.yaml", 9, "workload.ops[2].bytes",
                       {"rank 1 frees 1073741824 bytes more"}, {}});
  }
  SECTION("a kernel longer than the simulator's time range") {
    expect_bad_config(
        {"bad_kernel_too_long.yaml", 7, "workload.ops[0].op", {"time range"}, {}});
  }
  SECTION("a run longer than the simulator's time range (found while running: no line)") {
    expect_bad_config({"bad_run_too_long.yaml", 0, "workload", {"time range"}, {}});
  }
}

TEST_CASE("bad input: ranks that do not exist", "[cli]") {
  SECTION("rank 8 of 8 GPUs") {
    expect_bad_config({"bad_rank_out_of_range.yaml", 8, "workload.ops[0].rank",
                       {"rank 8 does not exist", "0..7"}, {}});
  }
  SECTION("p2p destination") {
    expect_bad_config(
        {"bad_p2p_dst.yaml", 8, "workload.ops[0].dst", {"rank 12 does not exist"}, {}});
  }
  SECTION("collective group") {
    expect_bad_config(
        {"bad_collective_ranks.yaml", 9, "workload.ops[0].ranks", {"rank 9 does not exist"}, {}});
  }
}

TEST_CASE("bad input: op names and dependencies", "[cli]") {
  SECTION("duplicate name") {
    expect_bad_config(
        {"bad_duplicate_name.yaml", 7, "workload.ops[1].name", {"'step' is used twice"}, {}});
  }
  SECTION("after names an unknown op") {
    expect_bad_config({"bad_after_unknown.yaml", 15, "workload.ops[2].after",
                       {"no op named 'qkv_prj'", "did you mean 'qkv_proj'?"}, {}});
  }
  SECTION("dependency cycle") {
    expect_bad_config(
        {"bad_cycle.yaml", 9, "workload.ops[1].after", {"dependency cycle", "a -> b -> a"}, {}});
  }
  SECTION("a compute op after another rank's op") {
    expect_bad_config(
        {"bad_after_other_rank.yaml", 8, "workload.ops[1].after", {"'produce'", "no rank"}, {}});
  }
}

TEST_CASE("bad input: hardware", "[cli]") {
  SECTION("fp8 GEMM on an A100") {
    expect_bad_config({"bad_fp8_a100.yaml", 7, "workload.ops[0].op", {"fp8", "a100-sxm-80gb"}, {}});
  }
  SECTION("unknown GPU preset") {
    expect_bad_config(
        {"bad_unknown_gpu.yaml", 4, "cluster.gpu", {"'h100-sxn'", "did you mean 'h100-sxm'?"}, {}});
  }
  SECTION("several nodes and no scale-out network") {
    expect_bad_config(
        {"bad_multinode_no_scale_out.yaml", 6, "cluster.scale_out", {"2 nodes", "none"}, {}});
  }
}

TEST_CASE("bad input: YAML syntax error names a line", "[cli]") {
  // The flow map opened on line 4 is unclosed; yaml-cpp notices on line 5
  // (where the next key appears). Either is a useful pointer.
  TempDir tmp;
  const std::string config = source_path("tests/data/bad/bad_yaml_syntax.yaml");
  const GcsimResult r = run_gcsim({"run", config, "-o", (tmp / "out").string()});
  INFO(r.err);
  CHECK(r.exit_status == kBadInput);
  CHECK((contains(r.err, config + ":4:") || contains(r.err, config + ":5:")));
  CHECK(contains(r.err, "YAML syntax error"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

TEST_CASE("bad input: unreadable config file", "[cli]") {
  TempDir tmp;
  const std::string missing = (tmp / "no_such_config.yaml").string();
  const GcsimResult r = run_gcsim({"run", missing, "-o", (tmp / "out").string()});
  INFO(r.err);
  CHECK(r.exit_status == kBadInput);
  CHECK(contains(r.err, missing));
  CHECK(contains(r.err, "cannot open"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));

  const GcsimResult c = run_gcsim({"check", missing});
  CHECK(c.exit_status == kBadInput);
  CHECK(contains(c.err, missing));
}

TEST_CASE("bad input: -s overrides name the override, not the file", "[cli]") {
  const std::string good = "good_small.yaml";
  SECTION("wrong type") {
    expect_bad_config({good.c_str(), kOverride, "cluster.nodes",
                       {"command line (-s cluster.nodes=abc)", "expected an integer"},
                       {"-s", "cluster.nodes=abc"}});
  }
  SECTION("a key under a scalar (was an internal error)") {
    expect_bad_config({good.c_str(), kOverride, "cluster.gpu.sm_count",
                       {"command line (-s cluster.gpu.sm_count=100)", "not a map"},
                       {"-s", "cluster.gpu.sm_count=100"}});
  }
  SECTION("a name where a list index belongs (was an internal error)") {
    expect_bad_config({good.c_str(), kOverride, "workload.ops.first",
                       {"command line (-s workload.ops.first.rank=1)", "list index"},
                       {"-s", "workload.ops.first.rank=1"}});
  }
  SECTION("list index out of range") {
    expect_bad_config({good.c_str(), kOverride, "workload.ops.5",
                       {"command line (-s workload.ops.5.rank=1)", "out of range"},
                       {"-s", "workload.ops.5.rank=1"}});
  }
  SECTION("no '='") {
    expect_bad_config({good.c_str(), kOverride, "", {"-s key.path=value"}, {"-s", "cluster.nodes"}});
  }
  SECTION("an error inside a subtree the override replaced blames the override") {
    expect_bad_config({good.c_str(), kOverride, "workload.ops[0]",
                       {"command line (-s workload.ops=[{name: g, rank: 0, op: gemm}])",
                        "missing required key 'm'"},
                       {"-s", "workload.ops=[{name: g, rank: 0, op: gemm}]"}});
  }
  SECTION("an override on a valid file is applied (control)") {
    TempDir tmp;
    const GcsimResult r =
        run_gcsim({"run", source_path("tests/data/bad/good_small.yaml"), "-o",
                   (tmp / "out").string(), "-q", "-s", "cluster.nodes=2"});
    INFO(r.err);
    CHECK(r.exit_status == 0);
    CHECK(fs::exists(tmp / "out" / "summary.json"));
  }
}

TEST_CASE("bad input: command line", "[cli]") {
  SECTION("unknown command suggests run") {
    const GcsimResult r = run_gcsim({"rnu", source_path("configs/examples/quickstart.yaml")});
    INFO(r.err);
    CHECK(r.exit_status == kBadInput);
    CHECK(contains(r.err, "unknown command 'rnu'"));
    CHECK(contains(r.err, "did you mean 'run'?"));
  }
  SECTION("run without a config") {
    const GcsimResult r = run_gcsim({"run"});
    INFO(r.err);
    CHECK(r.exit_status == kBadInput);
    CHECK(contains(r.err, "expected one CONFIG.yaml"));
    CHECK(r.out.empty());
  }
  SECTION("no command at all prints usage") {
    const GcsimResult r = run_gcsim({});
    CHECK(r.exit_status == kBadInput);
    CHECK(contains(r.err, "usage: gcsim"));
  }
  SECTION("negative --seed") {
    const GcsimResult r =
        run_gcsim({"run", source_path("tests/data/bad/good_small.yaml"), "--seed", "-1"});
    CHECK(r.exit_status == kBadInput);
    CHECK(contains(r.err, "--seed"));
  }
  SECTION("run-only options on check") {
    const GcsimResult r =
        run_gcsim({"check", source_path("tests/data/bad/good_small.yaml"), "--trace"});
    CHECK(r.exit_status == kBadInput);
    CHECK(contains(r.err, "apply to `gcsim run` only"));
  }
}

TEST_CASE("every command's --help prints its usage and exits 0; --version", "[cli]") {
  std::vector<std::string> commands{"run", "check", "sweep", "explain", "calibrate", "quiz", "list"};
#ifndef GCSIM_NO_CHAKRA
  commands.push_back("export");
#endif
  for (const std::string& command : commands) {
    for (const std::string flag : {"--help", "-h"}) {
      INFO(command << " " << flag);
      const GcsimResult r = run_gcsim({command, flag});
      CHECK(r.exit_status == 0);
      CHECK(r.out.rfind("usage: gcsim " + command, 0) == 0);
      CHECK(contains(r.out, "-h, --help"));
      CHECK(r.err.empty());
    }
  }
  // --help wins over whatever else is on the line.
  const GcsimResult late = run_gcsim({"run", "missing.yaml", "-o", "x", "--help"});
  CHECK(late.exit_status == 0);
  CHECK(contains(late.out, "--trace"));
  const GcsimResult top = run_gcsim({"--help"});
  CHECK(top.exit_status == 0);
  CHECK(contains(top.out, "commands:"));
  // The version is CMake's project version (CMakeLists.txt: project(gcsim VERSION ...)).
  const GcsimResult v = run_gcsim({"--version"});
  CHECK(v.exit_status == 0);
  const std::string cmake = gcsim::test::read_text(source_path("CMakeLists.txt"));
  const size_t at = cmake.find("project(gcsim VERSION ") + std::string("project(gcsim VERSION ").size();
  CHECK(v.out == "gcsim " + cmake.substr(at, cmake.find(' ', at) - at) + "\n");
}

TEST_CASE("an option error prints only that command's usage line", "[cli]") {
  const GcsimResult r =
      run_gcsim({"run", source_path("tests/data/bad/good_small.yaml"), "--bogus"});
  CHECK(r.exit_status == kBadInput);
  CHECK(r.err ==
        "gcsim run: unrecognised option '--bogus'\n"
        "usage: gcsim run CONFIG.yaml [-s key=value]... [-o OUTDIR] [--seed N] [--trace] [-q] [--max-memory SIZE] [--max-events N]\n"
        "(gcsim run --help for the options)\n");
  const GcsimResult s = run_gcsim({"sweep", "-j", "0", "x.yaml"});
  CHECK(s.exit_status == kBadInput);
  CHECK(contains(s.err, "usage: gcsim sweep STUDY.yaml"));
  CHECK_FALSE(contains(s.err, "commands:"));  // not the whole overview
  CHECK_FALSE(contains(s.err, "gcsim run"));
}

TEST_CASE("a study given to run, or a config to sweep, gets the right command", "[cli]") {
  const std::string study = source_path("configs/studies/gpt3-175b-1024.yaml");
  for (const char* command : {"run", "check", "explain"}) {
    INFO(command);
    const GcsimResult r = run_gcsim({command, study});
    CHECK(r.exit_status == kBadInput);
    CHECK(contains(r.err, study + ":8: key 'base'"));
    CHECK(contains(r.err, "this is a study (base, axes), not a config: use `gcsim sweep " + study));
  }
  TempDir tmp;
  const std::string config = source_path("configs/examples/quickstart.yaml");
  const GcsimResult s = run_gcsim({"sweep", config, "-o", (tmp / "sw").string()});
  CHECK(s.exit_status == kBadInput);
  CHECK(contains(s.err, "key 'workload'"));
  CHECK(contains(s.err, "this is a config, not a study: use `gcsim run " + config));
}
