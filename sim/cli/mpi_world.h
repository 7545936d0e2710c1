// The processes one `gcsim sweep` or `gcsim plan` runs as: this process
// alone, or the ranks of an MPI job (`mpirun -n N gcsim sweep ...`). Work
// item i belongs to rank i mod N, each rank does its share, and
// all_gather() hands every rank everyone's results, so that rank 0 writes
// one merged result equal to a run on one machine. MPI is optional at build
// time (CMake's find_package(MPI)); a build without it that finds itself
// started by mpirun (Open MPI's, MPICH's or PMIx's environment) says so and
// stops with exit status 2 instead of running the whole job N times.
#pragma once

#include <string>
#include <vector>

namespace gcsim::cli {

class MpiWorld {
 public:
  // Joins the MPI job when started by mpirun; alone otherwise. Throws
  // ConfigError when mpirun started a build without MPI.
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  // Whether work item `index` is this rank's.
  bool owns(size_t index) const { return index % static_cast<size_t>(size_) == static_cast<size_t>(rank_); }
  // Every rank's `mine`, indexed by rank (a copy of `mine` alone without MPI).
  std::vector<std::string> all_gather(const std::string& mine) const;

  // Whether this binary was built with MPI.
  static bool built_in();

 private:
  int rank_ = 0;
  int size_ = 1;
  bool joined_ = false;  // MPI_Init was called (and MPI_Finalize is owed)
};

// Ranks of the job this process was started in by a launcher (mpirun's
// environment), 1 when none; what MpiWorld checks before joining.
int launcher_world_size();

}  // namespace gcsim::cli
