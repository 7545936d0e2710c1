#include "sim/cli/mpi_world.h"

#include <cstdlib>

#include "sim/config/config_error.h"

#ifdef GCSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace gcsim::cli {

int launcher_world_size() {
  // Open MPI, MPICH/Hydra and PMIx launchers each export the job size.
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

bool MpiWorld::built_in() {
#ifdef GCSIM_HAVE_MPI
  return true;
#else
  return false;
#endif
}

#ifdef GCSIM_HAVE_MPI

MpiWorld::MpiWorld() {
  // MPI joins only under a launcher: a singleton MPI_Init would start Open
  // MPI's runtime daemon for nothing on every plain `gcsim sweep`.
  if (launcher_world_size() <= 1) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  joined_ = !initialized;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiWorld::~MpiWorld() {
  if (joined_) MPI_Finalize();
}

std::vector<std::string> MpiWorld::all_gather(const std::string& mine) const {
  if (size_ == 1) return {mine};
  // Lengths first, then the bytes (MPI counts are ints: 2 GiB per rank).
  const int n = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size_));
  MPI_Allgather(&n, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<size_t>(size_), 0);
  size_t total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<size_t>(r)] = static_cast<int>(total);
    total += static_cast<size_t>(lengths[static_cast<size_t>(r)]);
  }
  std::string all(total, '\0');
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) {
    out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                             static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  }
  return out;
}

#else

MpiWorld::MpiWorld() {
  const int n = launcher_world_size();
  if (n > 1) {
    throw sim::config::ConfigError(
        "command line", 0, "mpirun",
        "started as one of " + std::to_string(n) +
            " MPI ranks, but this gcsim was built without MPI (install libopenmpi-dev and "
            "reconfigure); run it without mpirun, or with -j N on one machine");
  }
}

MpiWorld::~MpiWorld() = default;

std::vector<std::string> MpiWorld::all_gather(const std::string& mine) const { return {mine}; }

#endif

}  // namespace gcsim::cli
