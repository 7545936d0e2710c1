// How gcsim knows it was started by an MPI launcher (sim/cli/mpi_world.h):
// the job size from Open MPI's, MPICH's or PMIx's environment, 1 without.
#include <cstdlib>

#include "catch.h"
#include "sim/cli/mpi_world.h"

TEST_CASE("mpi: the launcher's job size from its environment", "[mpi]") {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) unsetenv(v);
  CHECK(gcsim::cli::launcher_world_size() == 1);
  setenv("PMI_SIZE", "4", 1);  // MPICH's Hydra
  CHECK(gcsim::cli::launcher_world_size() == 4);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);  // Open MPI's mpirun, read first
  CHECK(gcsim::cli::launcher_world_size() == 3);
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) unsetenv(v);
  // Alone, the world is this process.
  const gcsim::cli::MpiWorld world;
  CHECK(world.size() == 1);
  CHECK(world.root());
  CHECK(world.owns(0));
  CHECK(world.owns(7));
  CHECK(world.all_gather("x") == std::vector<std::string>{"x"});
}
