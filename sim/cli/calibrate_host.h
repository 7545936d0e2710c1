// `gcsim calibrate --host-fit BENCH.json [--host-run TAG] -o HOST.yaml`:
// fits this machine's host profile (calibration/fit/host_fit.h) to
// calibration/microbench/eager_host_bench.py's output and writes the file
// that `cluster.host: HOST.yaml` reads.
#pragma once

#include <ostream>
#include <string>

namespace gcsim::cli {

// Exit status: 0, or 2 for bad input (an unreadable or foreign file, a
// missing reading, a cost outside its physical range, an unwritable -o).
int calibrate_host(const std::string& bench_file, const std::string& run_tag, const std::string& out_path,
                   std::ostream& out, std::ostream& err);

}  // namespace gcsim::cli
