// `gcsim calibrate`: measure the local GPU with gcsim_microbench and fit a
// profile, fit one from measurement files (--fit), or print a profile's
// held-out prediction errors (--validate).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gcsim::cli {

// `args` are the words after `calibrate`. Exit status: 0 done; 2 bad input
// or no GPU to measure (said on `err`); 1 the benchmark failed.
int calibrate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gcsim::cli
