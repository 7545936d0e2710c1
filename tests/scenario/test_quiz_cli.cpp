// `gcsim quiz` through the real command line (issue 9): the same seed prints
// the same quiz, the simulated check runs through `gcsim run`'s loader, and
// `--check` grades answers files (tests/data/quiz/) with exit status 0 when
// every answer passes, 3 when some are wrong or unanswered, or exit 2 naming
// file, line and key when the answers file is bad.
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::GcsimResult;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;

using gcsim::test::contains;

namespace {

std::string data(const std::string& name) { return source_path("tests/data/quiz/" + name); }

}  // namespace

TEST_CASE("gcsim quiz: same seed, same output; the simulation fills the check", "[quiz][scenario]") {
  const GcsimResult a = run_gcsim({"quiz", "--topic", "network", "--seed", "1"});
  const GcsimResult b = run_gcsim({"quiz", "--topic", "network", "--seed", "1"});
  REQUIRE(a.exit_status == 0);
  CHECK(a.out == b.out);
  CHECK(contains(a.out, "## Worked answer"));
  CHECK(contains(a.out, "| ring_time_ms | 0.06983 | "));
  // The ring row has a simulated value, not "-": the collective ran.
  CHECK_FALSE(contains(a.out, "| ring_time_ms | 0.06983 | - |"));
  CHECK(contains(a.out, "ring_time_ms:    # ring all-reduce time (ms)"));  // the template
  const GcsimResult other = run_gcsim({"quiz", "--topic", "network", "--seed", "2", "--no-verify"});
  REQUIRE(other.exit_status == 0);
  CHECK(other.out != a.out);
}

TEST_CASE("gcsim quiz: every topic prints, without a topic one is drawn", "[quiz][scenario]") {
  for (const char* topic : {"training", "inference", "reliability"}) {
    const GcsimResult r = run_gcsim({"quiz", "--topic", topic, "--seed", "3", "--no-verify"});
    INFO(topic << ": " << r.err);
    CHECK(r.exit_status == 0);
    CHECK(contains(r.out, std::string("# gcsim quiz: ") + topic + ", seed 3"));
  }
  const GcsimResult any = run_gcsim({"quiz", "--seed", "5", "--no-verify"});
  CHECK(any.exit_status == 0);
  CHECK(contains(any.out, "# gcsim quiz: "));
  const GcsimResult t = run_gcsim({"quiz", "--topic", "training", "--seed", "1", "--answers-template"});
  CHECK(t.exit_status == 0);
  CHECK(t.out.rfind("topic: training\nseed: 1\nanswers:\n", 0) == 0);
  CHECK(contains(t.out, "  peak_memory_gib:    # peak HBM per GPU (GiB)"));
}

TEST_CASE("gcsim quiz --check: right answers score full marks, wrong ones do not",
          "[quiz][scenario]") {
  const GcsimResult right = run_gcsim({"quiz", "--check", data("network_seed1_right.yaml")});
  INFO(right.err);
  REQUIRE(right.exit_status == 0);
  CHECK(contains(right.out, "Score: 6 / 6"));
  const GcsimResult wrong = run_gcsim({"quiz", "--check", data("network_seed1_wrong.yaml")});
  REQUIRE(wrong.exit_status == 3);  // graded, not all right: a CI script sees it
  CHECK(contains(wrong.out, "Score: 0 / 6"));
  CHECK(contains(wrong.out, "| ring_time_ms (ms) | 0.0098 | 0.06983 +-15% |"));
  // Training: the layout is judged by the memory model, the memory and step
  // time against the simulated step as well.
  const GcsimResult train = run_gcsim({"quiz", "--check", data("training_seed1_right.yaml")});
  INFO(train.err);
  REQUIRE(train.exit_status == 0);
  CHECK(contains(train.out, "| layout (dp pp tp) | given | must fit | - | pass |"));
  CHECK(contains(train.out, "Score: 6 / 6"));
}

TEST_CASE("gcsim quiz --check: bad answers files exit 2 naming file, line and key",
          "[quiz][scenario]") {
  struct Bad {
    const char* file;
    const char* where;  // "file:line"
    const char* what;   // key or fragment
  };
  const std::vector<Bad> cases{
      {"bad_unknown_key.yaml", "bad_unknown_key.yaml:6", "did you mean 'ring_time_ms'?"},
      {"bad_unknown_top_key.yaml", "bad_unknown_top_key.yaml:4", "did you mean 'answers'?"},
      {"bad_missing_topic.yaml", "bad_missing_topic.yaml:", "missing required key 'topic'"},
      {"bad_missing_seed.yaml", "bad_missing_seed.yaml:", "missing required key 'seed'"},
      {"bad_non_numeric.yaml", "bad_non_numeric.yaml:6", "answers.peak_memory_gib"},
      {"bad_unknown_topic.yaml", "bad_unknown_topic.yaml:2", "did you mean 'network'?"},
      {"bad_probability.yaml", "bad_probability.yaml:6",
       "'answers.ecmp_collision_probability': a probability lies in [0, 1], got 1.5"},
      {"bad_negative_time.yaml", "bad_negative_time.yaml:5",
       "'answers.ring_time_ms': cannot be negative (ms)"},
      {"bad_layout.yaml", "bad_layout.yaml:5", "'answers.tp': a parallel size is a positive integer"},
  };
  for (const auto& c : cases) {
    const GcsimResult r = run_gcsim({"quiz", "--check", data(c.file)});
    INFO(c.file << ": " << r.err);
    CHECK(r.exit_status == 2);
    CHECK(contains(r.err, c.where));
    CHECK(contains(r.err, c.what));
    CHECK(r.out.empty());
  }
  const GcsimResult missing = run_gcsim({"quiz", "--check", data("no_such_file.yaml")});
  CHECK(missing.exit_status == 2);
  CHECK(contains(missing.err, "no_such_file.yaml"));
  const GcsimResult topic = run_gcsim({"quiz", "--topic", "networking"});
  CHECK(topic.exit_status == 2);
  CHECK(contains(topic.err, "--topic"));
  const GcsimResult both = run_gcsim({"quiz", "--check", data("network_seed1_right.yaml"),
                                      "--seed", "2"});
  CHECK(both.exit_status == 2);
}

TEST_CASE("gcsim quiz --check accepts its own blank template: everything unanswered, exit 3",
          "[quiz][scenario]") {
  gcsim::test::TempDir tmp;
  for (const char* topic : {"network", "training", "inference", "reliability"}) {
    INFO(topic);
    const GcsimResult t =
        run_gcsim({"quiz", "--answers-template", "--topic", topic, "--seed", "1"});
    REQUIRE(t.exit_status == 0);
    gcsim::test::write_text(tmp / "blank.yaml", t.out);
    const GcsimResult g = run_gcsim({"quiz", "--check", (tmp / "blank.yaml").string(), "--no-verify"});
    INFO(g.err);
    CHECK(g.exit_status == 3);
    CHECK(contains(g.out, "not answered"));
    CHECK_FALSE(contains(g.out, "| pass"));
    CHECK(contains(g.out, "Score: 0 / "));
  }
}
