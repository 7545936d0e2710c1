#include "tests/fuzz/config_harness.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "sim/scenario/presets.h"
#include "sim/cli/run_command.h"
#include "sim/config/config_error.h"

namespace gcsim::fuzz {

namespace fs = std::filesystem;

FuzzWorkspace::FuzzWorkspace(const fs::path& source_root) {
  static int made = 0;  // several workspaces in one process (tests) must not collide
  dir_ = fs::temp_directory_path() /
         ("gcsim-fuzz-" + std::to_string(::getpid()) + "-" + std::to_string(made++));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  for (const char* sub : {"configs/examples", "tests/data/chakra", "tests/data/bad"}) {
    const fs::path from = source_root / sub;
    if (!fs::is_directory(from)) continue;
    for (const auto& entry : fs::directory_iterator(from)) {
      if (entry.is_regular_file() && entry.path().extension() != ".yaml") {
        fs::copy_file(entry.path(), dir_ / entry.path().filename(),
                      fs::copy_options::overwrite_existing);
      }
    }
  }
}

FuzzWorkspace::~FuzzWorkspace() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string FuzzWorkspace::write_config(std::string_view text) const {
  const fs::path path = dir_ / "config.yaml";
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw std::runtime_error("fuzz harness: cannot write " + path.string());
  return path.string();
}

void FuzzWorkspace::warm_up() const {
  for (const std::string& gpu : cli::preset_names("hardware")) {
    check("cluster: {gpu: " + gpu + ", nodes: 1, gpus_per_node: 1}\n"
          "workload: {kind: graph, ops: [{name: a, rank: 0, op: delay, duration: 1us}]}\n");
  }
}

std::optional<std::string> FuzzWorkspace::resolve(std::string_view text) const {
  const std::string path = write_config(text);
  std::ostringstream out;
  try {
    cli::check_command(path, cli::LoadOptions{}, out);
  } catch (const sim::config::ConfigError&) {
    return std::nullopt;
  }
  return out.str();
}

namespace {

// The printout without its whole-line comments: the header naming the file
// and the notes (a default written out may add a note, e.g. "replicas is
// ignored with disaggregation", without changing what is simulated).
std::string config_lines(const std::string& printout) {
  std::istringstream in(printout);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) != 0) out += line + "\n";
  }
  return out;
}

// The first line where two printouts differ, with its neighbour above
// (which names the map it is in).
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb, above;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(sa, la));
    const bool gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "(none)";
    if (!ga || !gb || la != lb) {
      return "after '" + above + "': '" + (ga ? la : "(end)") + "' became '" + (gb ? lb : "(end)") + "'";
    }
    above = la;
  }
}

}  // namespace

bool FuzzWorkspace::check(std::string_view text) const {
  const std::optional<std::string> first = resolve(text);
  if (!first) return false;
  const std::string path = write_config(*first);
  std::ostringstream out;
  try {
    cli::check_command(path, cli::LoadOptions{}, out);
  } catch (const sim::config::ConfigError& e) {
    throw RoundTripError("the resolved config is rejected: " + std::string(e.what()));
  }
  const std::string a = config_lines(*first), b = config_lines(out.str());
  if (a != b) {
    throw RoundTripError("the resolved config resolves differently: " + first_difference(a, b));
  }
  return true;
}

bool FuzzWorkspace::run(std::string_view text) const {
  const std::string path = write_config(text);
  std::ostringstream out;
  cli::RunOptions options;
  options.out_dir = (dir_ / "out").string();
  options.progress = false;
  try {
    return cli::run_command(path, options, out) == 0;
  } catch (const sim::config::ConfigError&) {
    return false;
  }
}

}  // namespace gcsim::fuzz
