// `gcsim run` and `gcsim check`: load a scenario, simulate it, and write
// summary.json, report.md and (with --trace) trace.json.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "sim/scenario/scenario.h"

namespace gcsim::cli {

struct EpTimes;

struct RunOptions {
  LoadOptions load;
  std::string out_dir;  // "" = out/<config stem>
  bool trace = false;
  bool progress = true;  // progress lines on stderr for runs longer than a second
  // Set on the balanced-routing rerun a training run with uneven EP routing
  // makes of itself: where its EP times go (and it makes no rerun).
  EpTimes* balanced_out = nullptr;
};

// Returns the process exit status. ConfigError propagates to the caller.
int run_command(const std::string& config_path, const RunOptions& options, std::ostream& out);

// Writes one output file; a failure is the -o directory's (ConfigError).
void write_output_file(const std::filesystem::path& path, const std::string& text);

// Prints the fully resolved config with a doc comment per key.
int check_command(const std::string& config_path, const LoadOptions& options, std::ostream& out);

// Where a command that runs other runs (explain, quiz) puts their output:
// `keep` when given (left in place), else a temporary folder named `prefix`
// and the process id, created now and removed with this object.
class RunDirectory {
 public:
  RunDirectory(const std::string& keep, const std::string& prefix);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  bool keep_;
  std::filesystem::path path_;
};

}  // namespace gcsim::cli
