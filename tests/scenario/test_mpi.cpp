// `mpirun -n 2 gcsim sweep|plan` against `-j 1` on one process: the merged
// result is the same file for file (results.csv, results.md, plan.csv, every
// point's summary.json, plan.json apart from its wall-time keys). A build
// without MPI, started as mpirun starts its ranks, says MPI is not built in.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "scenario/small_training.h"
#include "sim/cli/mpi_world.h"

namespace fs = std::filesystem;
using gcsim::test::read_json;
using gcsim::test::small_training_config;
using gcsim::test::read_text;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// Runs a shell command line; its exit status.
int shell(const std::string& cmd) {
  const int s = std::system(cmd.c_str());
  return WIFEXITED(s) ? WEXITSTATUS(s) : 128;
}

// Open MPI refuses root unless told; CI containers run as root.
const std::string kMpirun =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -n 2 --oversubscribe ";

nlohmann::ordered_json without(nlohmann::ordered_json j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) j.erase(k);
  return j;
}

}  // namespace

TEST_CASE("mpirun -n 2 gcsim sweep and plan merge the same result as -j 1", "[scenario][mpi]") {
  TempDir tmp;
  write_text(tmp / "base.yaml", small_training_config("flow"));
  write_text(tmp / "study.yaml", R"(
name: tiny
base: base.yaml
axes:
  workload.parallelism.tp: [8, 4, 3]
  workload.recompute: [full, none]
)");
  const std::string exe = GCSIM_BINARY;
  if (!gcsim::cli::MpiWorld::built_in()) {
    // As mpirun would start rank 0 of 2: refused, exit status 2.
    const int rc = shell("OMPI_COMM_WORLD_SIZE=2 " + exe + " sweep " + (tmp / "study.yaml").string() + " -o " +
                         (tmp / "x").string() + " 2> " + (tmp / "err").string());
    CHECK(rc == 2);
    CHECK(read_text(tmp / "err").find("built without MPI") != std::string::npos);
    return;
  }
  REQUIRE(shell("command -v mpirun > /dev/null") == 0);  // scripts/setup installs openmpi-bin

  // Six points, two of them impossible (TP 3): three per rank.
  const std::string sweep = exe + " sweep " + (tmp / "study.yaml").string() + " -j 1 -o ";
  REQUIRE(shell(kMpirun + sweep + (tmp / "mpi").string() + " > /dev/null 2> " + (tmp / "mpi.err").string()) == 0);
  REQUIRE(shell(sweep + (tmp / "one").string() + " -q > /dev/null") == 0);
  CHECK(read_text(tmp / "mpi" / "results.csv") == read_text(tmp / "one" / "results.csv"));
  CHECK(read_text(tmp / "mpi" / "results.md") == read_text(tmp / "one" / "results.md"));
  size_t points = 0;
  for (const auto& e : fs::directory_iterator(tmp / "one" / "points")) {
    if (!fs::exists(e.path() / "summary.json")) continue;
    ++points;
    const auto mpi = tmp / "mpi" / "points" / e.path().filename() / "summary.json";
    CHECK(without(read_json(e.path() / "summary.json"), {"wall_time_s"}) == without(read_json(mpi), {"wall_time_s"}));
  }
  CHECK(points == 4);
  // Each rank ran and reported its three.
  const std::string err = read_text(tmp / "mpi.err");
  CHECK(err.find("[sweep] rank 0: 3/3") != std::string::npos);
  CHECK(err.find("[sweep] rank 1: 3/3") != std::string::npos);
  CHECK(read_text(tmp / "mpi" / "results.csv").find(",3,none,skipped,") != std::string::npos);

  const std::string plan = exe + " plan " + (tmp / "base.yaml").string() + " --top 2 -j 1 -q -o ";
  REQUIRE(shell(kMpirun + plan + (tmp / "pmpi").string() + " > /dev/null") == 0);
  REQUIRE(shell(plan + (tmp / "pone").string() + " > /dev/null") == 0);
  const auto wall = {"wall_time_s", "scoring_wall_s", "simulation_wall_s"};
  CHECK(without(read_json(tmp / "pmpi" / "plan.json"), wall) == without(read_json(tmp / "pone" / "plan.json"), wall));
  CHECK(read_text(tmp / "pmpi" / "plan.csv") == read_text(tmp / "pone" / "plan.csv"));
}
