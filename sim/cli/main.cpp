// The gcsim command: run | check | sweep | explain | export | calibrate |
// quiz | list. Exit status 0 on success, 2 on bad input (with file, line and
// key; an option error prints that command's usage line), 1 on an internal
// error. `gcsim <command> --help` and `gcsim --version` exit 0.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include "sim/cli/usage.h"
#include "sim/config/config_error.h"
#include "sim/config/did_you_mean.h"
#include "sim/engine/time.h"
#include "sim/config/unit_parse.h"

namespace po = boost::program_options;
using gcsim::sim::config::ConfigError;

namespace {

constexpr int kBadInput = 2;

struct Parsed {
  std::vector<std::string> positional;
  std::vector<std::string> sets;
  std::string out_dir;
  std::optional<uint64_t> seed;
  bool trace = false;
  bool quiet = false;
  gcsim::cli::ResourceLimits limits = gcsim::cli::ResourceLimits::machine();
  gcsim::cli::LoadOptions load() const { return {sets, seed, limits}; }
};

// --max-memory SIZE (4GiB, 500MB) and --max-events N (1e9 or 1000000000).
void parse_limits(const po::variables_map& vm, gcsim::cli::ResourceLimits& limits) {
  if (vm.count("max-memory")) {
    const std::string text = vm["max-memory"].as<std::string>();
    std::string error;
    const auto b = gcsim::sim::parse_bytes(text, &error);
    if (!b || b->count() <= 0) {
      throw ConfigError("command line", 0, "--max-memory",
                        b ? "must be positive, got '" + text + "'" : error);
    }
    limits.max_memory_bytes = static_cast<double>(b->count());
    limits.memory_source = "--max-memory";
  }
  if (vm.count("max-events")) {
    const std::string text = vm["max-events"].as<std::string>();
    char* end = nullptr;
    const double n = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(n >= 1) || n > 1e18 || n != std::floor(n)) {
      throw ConfigError("command line", 0, "--max-events",
                        "expected a whole number of events from 1 to 1e18 (e.g. 2e9), got '" + text + "'");
    }
    limits.max_events = static_cast<uint64_t>(n);
    limits.events_from_flag = true;
  }
}

Parsed parse(const std::vector<std::string>& args, bool allow_run_options) {
  po::options_description opts("options");
  int64_t seed = -1;
  opts.add_options()("set,s", po::value<std::vector<std::string>>(),
                     "override a config key: -s a.b.c=value")(
      "out,o", po::value<std::string>(), "output directory")(
      "seed", po::value<int64_t>(&seed), "random seed (overrides simulation.seed)")(
      "trace", po::bool_switch(), "write trace.json (Perfetto)")(
      "quiet,q", po::bool_switch(), "no progress lines on stderr")(
      "max-memory", po::value<std::string>(), "refuse a run estimated above SIZE (default: this machine's memory)")(
      "max-events", po::value<std::string>(), "stop a run at N events (default 1e9)")(
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
  parse_limits(vm, p.limits);
  return p;
}

// `args` asks for help: -h or --help anywhere (no command takes a value
// that could be spelled so).
bool wants_help(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

int dispatch(const std::string& command, const std::vector<std::string>& rest) {
  using namespace gcsim::cli;
  if (command == "run" || command == "check") {
    Parsed p = parse(rest, command == "run");
    if (p.positional.size() != 1) throw po::error("expected one CONFIG.yaml");
    const LoadOptions load = p.load();
    if (command == "check") return check_command(p.positional[0], load, std::cout);
    RunOptions run{load, p.out_dir, p.trace, !p.quiet};
    return run_command(p.positional[0], run, std::cout);
  }
#ifndef GCSIM_NO_CHAKRA
  if (command == "export") {
    Parsed p = parse(rest, true);
    if (p.positional.size() != 1 || p.out_dir.empty() || p.trace) {
      throw po::error("expected one CONFIG.yaml and -o DIR");
    }
    return export_command(p.positional[0], p.load(), p.out_dir, std::cout);
  }
#endif
  if (command == "explain") {
    Parsed p = parse(rest, true);
    if (p.positional.size() != 1 || p.trace) throw po::error("expected one CONFIG.yaml (no --trace)");
    return explain_command(p.positional[0], ExplainOptions{p.load(), p.out_dir}, std::cout);
  }
  if (command == "sweep") return sweep_command(rest, std::cout);
  if (command == "plan") return plan_command(rest, std::cout);
  if (command == "quiz") return quiz_command(rest, std::cout);
  if (command == "calibrate") return calibrate_command(rest, std::cout, std::cerr);
  if (command == "list") {
    Parsed p = parse(rest, false);
    return list_command(p.positional.empty() ? "" : p.positional[0], std::cout);
  }
  throw std::logic_error("command '" + command + "' has help but no dispatch");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gcsim::cli;
  if (argc < 2) {
    std::fputs(overview().c_str(), stderr);
    return kBadInput;
  }
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  if (command == "-h" || command == "--help" || command == "help") {
    const CommandHelp* c = rest.empty() ? nullptr : find_command_help(rest[0]);
    std::fputs((c ? help_text(*c) : overview()).c_str(), stdout);
    return 0;
  }
  if (command == "--version" || command == "version") {
    std::printf("%s\n", version_line().c_str());
    return 0;
  }
  const CommandHelp* help = find_command_help(command);
  if (help == nullptr) {
    std::vector<std::string> names;
    for (const auto& c : command_helps()) names.push_back(c.name);
    std::fprintf(stderr, "gcsim: unknown command '%s'%s\n(gcsim --help lists the commands)\n",
                 command.c_str(), gcsim::sim::config::did_you_mean(command, names).c_str());
    return kBadInput;
  }
  if (wants_help(rest)) {
    std::fputs(help_text(*help).c_str(), stdout);
    return 0;
  }
  try {
    return dispatch(command, rest);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "gcsim: error: %s\n", e.what());
    return kBadInput;
  } catch (const gcsim::sim::TimeOverflow& e) {
    // Simulated time is int64 picoseconds: only a config's durations, rates
    // or speeds can push it past 106 days (the loaders name the key where
    // they can; this is the backstop).
    std::fprintf(stderr, "gcsim: error: the run leaves the simulator's time range (106 days of "
                         "simulated time): %s; a duration, rate or speed in the config is out of "
                         "range\n", e.what());
    return kBadInput;
  } catch (const std::bad_alloc&) {
    // The limits' estimates missed (README "Limits"): the config asks for
    // more memory than the process may have. Not a bug of the input's
    // syntax, but not gcsim's either.
    std::fprintf(stderr, "gcsim: error: out of memory: the config needs more memory than this "
                         "process may use (physical memory, cgroup or ulimit -v); shrink the "
                         "workload, or lower --max-memory so that it is refused before it runs\n");
    return kBadInput;
  } catch (const po::error& e) {
    // Only this command's usage: the whole overview would bury the message.
    std::fprintf(stderr, "gcsim %s: %s\n%s", command.c_str(), e.what(), usage_lines(*help).c_str());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcsim: internal error: %s\n(this is a bug in gcsim; please report it "
                         "with the config that triggered it)\n", e.what());
    return 1;
  }
}
