// The capped reader every user file goes through (sim/config/input_file.h):
// what it refuses, and that it stops at its cap on files whose size is not
// known in advance.
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "sim/config/input_file.h"

using gcsim::sim::config::InputLines;
using gcsim::sim::config::read_input_file;

namespace {
bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}
}  // namespace

TEST_CASE("input file: a file of unknown size stops at the cap", "[config]") {
  // /proc files report size 0, so only the bounded read can stop them;
  // /proc/self/maps of any process is longer than 100 bytes.
  std::string text, error;
  CHECK_FALSE(read_input_file("/proc/self/maps", 100, "config", text, error));
  CHECK(contains(error, "goes on past the 100 B limit for config files"));
  CHECK(text.size() <= 100);
  CHECK(read_input_file("/proc/self/maps", 1 << 20, "config", text, error));
  CHECK(text.size() > 100);
}

TEST_CASE("input file: refusals say why", "[config]") {
  gcsim::test::TempDir tmp;
  std::string text, error;
  CHECK_FALSE(read_input_file((tmp / "none.yaml").string(), 1000, "config", text, error));
  CHECK(contains(error, "No such file or directory"));
  CHECK_FALSE(read_input_file(tmp.path().string(), 1000, "config", text, error));
  CHECK(error == "is a directory, not a config file");
  gcsim::test::write_text(tmp / "big.yaml", std::string(2000, 'x'));
  CHECK_FALSE(read_input_file((tmp / "big.yaml").string(), 1000, "config", text, error));
  CHECK(error == "the config file is 2.0 KiB, over the 1000 B limit for config files");
  CHECK(gcsim::sim::config::describe_cap(16 << 20) == "16 MiB");
  CHECK(gcsim::sim::config::describe_cap(1536) == "1.5 KiB");
}

TEST_CASE("input file: lines are read one at a time, each capped", "[config]") {
  gcsim::test::TempDir tmp;
  gcsim::test::write_text(tmp / "t.csv", "a\n\nlast without newline");
  InputLines lines((tmp / "t.csv").string(), 1000, "serving trace");
  REQUIRE(lines.ok());
  CHECK(*lines.next() == "a");
  CHECK(*lines.next() == "");
  CHECK(*lines.next() == "last without newline");
  CHECK(lines.line_number() == 3);
  CHECK_FALSE(lines.next());
  CHECK(lines.ok());

  // A regular file over the cap is refused from its size; one of unknown
  // size (/proc reports 0) when the lines read pass the cap.
  gcsim::test::write_text(tmp / "many.csv", std::string(50, 'x') + "\n" + std::string(60, 'y') + "\n");
  InputLines sized((tmp / "many.csv").string(), 100, "serving trace");
  CHECK(sized.error() == "the serving trace file is 112 B, over the 100 B limit for serving trace files");
  InputLines capped("/proc/self/maps", 100, "serving trace");
  REQUIRE(capped.ok());
  while (capped.next()) {
  }
  CHECK(contains(capped.error(), "past the 100 B limit for serving trace files"));

  InputLines zero("/dev/zero", 1000, "serving trace");
  CHECK_FALSE(zero.next());
  CHECK(contains(zero.error(), "byte 0 is NUL"));
}
