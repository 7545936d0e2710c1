// The gcsim command: run | check | list. Exit status 0 on success, 2 on bad
// input (with file, line and key), 1 on an internal error.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#ifndef GCSIM_NO_CHAKRA
#include "sim/cli/export_command.h"
#endif
#include "sim/cli/calibrate_command.h"
#include "sim/cli/explain_command.h"
#include "sim/cli/list_command.h"
#include "sim/cli/plan_command.h"
#include "sim/cli/quiz_command.h"
#include "sim/cli/run_command.h"
#include "sim/cli/sweep_command.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"

namespace po = boost::program_options;
using gcsim::sim::config::ConfigError;

namespace {

constexpr int kBadInput = 2;

const char* kUsage =
    "usage: gcsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run CONFIG.yaml [-s key=value]... [-o OUTDIR] [--seed N] [--trace]\n"
    "                      simulate; write summary.json, report.md (and trace.json)\n"
    "  check CONFIG.yaml [-s key=value]...\n"
    "                      validate and print the fully resolved config\n"
    "  sweep STUDY.yaml [-o OUTDIR] [-j N] [-q]\n"
    "                      run a base config over axes of overrides; results.csv and a\n"
    "                      ranked table (impossible points skipped with the reason)\n"
    "  plan CONFIG.yaml [--gpus N] [-o DIR] [-j N] [--top K] [-s key=value]... [-q]\n"
    "                      search the training layout (TP, CP, PP, DP, EP, micro-batch,\n"
    "                      schedule, recompute, ZeRO, SP); plan.json, plan.csv, best.yaml\n"
    "  mpirun -n N gcsim sweep|plan ...\n"
    "                      the same, spread over MPI ranks (one merged result)\n"
    "  export CONFIG.yaml -o DIR [-s key=value]...\n"
    "                      write the generated workload as per-rank Chakra ET files\n"
    "  calibrate -o PROFILE.yaml | --fit MEASUREMENTS.json -o PROFILE.yaml | --validate PROFILE.yaml\n"
    "                      measure this GPU (or fit measurements) into a calibration profile\n"
    "  explain CONFIG.yaml [-s key=value]... [-o DIR] [--seed N]\n"
    "                      back-of-envelope worksheet beside the simulation (markdown; DIR/explain.md)\n"
    "  quiz [--topic training|inference|network|reliability] [--seed N] | --check ANSWERS.yaml\n"
    "                      interview-style question, worked answer and simulated check; grade answers\n"
    "  list [gpus|models|topologies|workloads|networks]\n"
    "                      show presets and registered models\n"
    "\n"
    "Examples:\n"
    "  gcsim run configs/examples/quickstart.yaml --trace\n"
    "  gcsim run configs/examples/quickstart.yaml -s cluster.gpu=h200-sxm -o out/h200\n";

struct Parsed {
  std::vector<std::string> positional;
  std::vector<std::string> sets;
  std::string out_dir;
  std::optional<uint64_t> seed;
  bool trace = false;
  bool quiet = false;
};

Parsed parse(const std::vector<std::string>& args, bool allow_run_options) {
  po::options_description opts("options");
  int64_t seed = -1;
  opts.add_options()("set,s", po::value<std::vector<std::string>>(),
                     "override a config key: -s a.b.c=value")(
      "out,o", po::value<std::string>(), "output directory")(
      "seed", po::value<int64_t>(&seed), "random seed (overrides simulation.seed)")(
      "trace", po::bool_switch(), "write trace.json (Perfetto)")(
      "quiet,q", po::bool_switch(), "no progress lines on stderr")(
      "args", po::value<std::vector<std::string>>(), "positional");
  po::positional_options_description pos;
  pos.add("args", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  Parsed p;
  if (vm.count("args")) p.positional = vm["args"].as<std::vector<std::string>>();
  if (vm.count("set")) p.sets = vm["set"].as<std::vector<std::string>>();
  if (!allow_run_options && (vm.count("out") || vm.count("seed") || vm["trace"].as<bool>())) {
    throw po::error("-o, --seed and --trace apply to `gcsim run` only");
  }
  if (vm.count("out")) p.out_dir = vm["out"].as<std::string>();
  if (vm.count("seed")) {
    if (seed < 0) throw po::error("--seed must not be negative");
    p.seed = static_cast<uint64_t>(seed);
  }
  p.trace = vm["trace"].as<bool>();
  p.quiet = vm["quiet"].as<bool>();
  return p;
}

int dispatch(const std::string& command, const std::vector<std::string>& rest) {
  using namespace gcsim::cli;
  if (command == "run" || command == "check") {
    Parsed p = parse(rest, command == "run");
    if (p.positional.size() != 1) {
      std::fprintf(stderr, "gcsim %s: expected one CONFIG.yaml\n\n%s", command.c_str(), kUsage);
      return kBadInput;
    }
    LoadOptions load{p.sets, p.seed};
    if (command == "check") return check_command(p.positional[0], load, std::cout);
    RunOptions run{load, p.out_dir, p.trace, !p.quiet};
    return run_command(p.positional[0], run, std::cout);
  }
#ifndef GCSIM_NO_CHAKRA
  if (command == "export") {
    Parsed p = parse(rest, true);
    if (p.positional.size() != 1 || p.out_dir.empty() || p.trace) {
      std::fprintf(stderr, "gcsim export: expected one CONFIG.yaml and -o DIR\n\n%s", kUsage);
      return kBadInput;
    }
    return export_command(p.positional[0], LoadOptions{p.sets, p.seed}, p.out_dir, std::cout);
  }
#endif
  if (command == "explain") {
    Parsed p = parse(rest, true);
    if (p.positional.size() != 1 || p.trace) {
      std::fprintf(stderr, "gcsim explain: expected one CONFIG.yaml (no --trace)\n\n%s", kUsage);
      return kBadInput;
    }
    return explain_command(p.positional[0], ExplainOptions{LoadOptions{p.sets, p.seed}, p.out_dir}, std::cout);
  }
  if (command == "sweep") return sweep_command(rest, std::cout);
  if (command == "plan") return plan_command(rest, std::cout);
  if (command == "quiz") return quiz_command(rest, std::cout);
  if (command == "calibrate") return calibrate_command(rest, std::cout, std::cerr);
  if (command == "list") {
    Parsed p = parse(rest, false);
    return list_command(p.positional.empty() ? "" : p.positional[0], std::cout);
  }
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "gcsim: unknown command '%s'%s\n\n%s", command.c_str(),
               gcsim::sim::config::did_you_mean(command, {"run", "check", "calibrate", "export", "explain", "list", "quiz", "sweep", "plan"}).c_str(),
               kUsage);
  return kBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return kBadInput;
  }
  const std::vector<std::string> rest(argv + 2, argv + argc);
  try {
    return dispatch(argv[1], rest);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "gcsim: error: %s\n", e.what());
    return kBadInput;
  } catch (const po::error& e) {
    std::fprintf(stderr, "gcsim: %s\n\n%s", e.what(), kUsage);
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcsim: internal error: %s\n(this is a bug in gcsim; please report it "
                         "with the config that triggered it)\n", e.what());
    return 1;
  }
}
