// `gcsim calibrate --collectives SWEEP.json --fit-groups 2 -o DIR`: fits the
// collective model's physical parameters (calibration/fit/collective_fit.h)
// to NCCL sweeps on the chosen group sizes and reports the error on the
// group sizes held out, per op: DIR/collective_fit.md and
// DIR/collective_fit.json.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gcsim::cli {

struct CollectiveCalibration {
  std::vector<std::string> files;  // gcsim.nccl_sweep.v1 files
  std::string fit_groups;          // "2" or "2,3": group sizes to fit on
  std::string gpu;                 // preset; "" = from the sweep's device name
  std::string out_dir;
  int iterations = 0;              // Nelder-Mead iterations per restart; 0 = the default
};

// Exit status: 0, or 2 for bad input (a file, a group size, a preset).
int calibrate_collectives(const CollectiveCalibration& c, std::ostream& out, std::ostream& err);

}  // namespace gcsim::cli
