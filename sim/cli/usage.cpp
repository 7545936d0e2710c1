#include "sim/cli/usage.h"

#ifndef GCSIM_VERSION
#define GCSIM_VERSION "unknown"
#endif

namespace gcsim::cli {

const std::vector<CommandHelp>& command_helps() {
  static const std::vector<CommandHelp> commands{
      {"run",
       {"run CONFIG.yaml [-s key=value]... [-o OUTDIR] [--seed N] [--trace] [-q] [--max-memory SIZE] [--max-events N]"},
       "simulate; write summary.json, report.md (and trace.json)",
       "  -s, --set key=value   override a config key (repeatable; list items by index)\n"
       "  -o, --out DIR         output directory (default out/<config name>)\n"
       "  --seed N              random seed (overrides simulation.seed)\n"
       "  --trace               also write trace.json (Perfetto)\n"
       "  -q, --quiet           no progress lines on stderr\n"
       "  --max-memory SIZE     refuse a run estimated above SIZE (default 80% of this machine)\n"
       "  --max-events N        refuse or stop a run above N events (default 1e9)\n"},
      {"check",
       {"check CONFIG.yaml [-s key=value]..."},
       "validate and print the fully resolved config (it reproduces the run)",
       "  -s, --set key=value   override a config key (repeatable)\n"},
      {"sweep",
       {"sweep STUDY.yaml [-o OUTDIR] [-j N] [-q]"},
       "run a base config over axes of overrides; results.csv and a ranked table",
       "  -o, --out DIR         output directory (default out/<study name>)\n"
       "  -j, --jobs N          points run at once (default 1; per rank under mpirun)\n"
       "  -q, --quiet           no progress lines\n"},
      {"plan",
       {"plan CONFIG.yaml [--gpus N] [-o DIR] [-j N] [--top K] [-s key=value]... [-q]"},
       "search the training layout or the serving deployment; plan.json, best.yaml, report.html",
       "  --gpus N              plan for this many GPUs (a multiple of gpus_per_node)\n"
       "  -o, --out DIR         output directory (default out/<config name>-plan)\n"
       "  -j, --jobs N          threads and simulations at once (per rank under mpirun)\n"
       "  --top K               candidates simulated after the estimate (default 8)\n"
       "  -s, --set key=value   override a config key (repeatable)\n"
       "  -q, --quiet           no progress lines\n"},
      {"explain",
       {"explain CONFIG.yaml [-s key=value]... [-o DIR] [--seed N]"},
       "back-of-envelope worksheet beside the simulation (markdown; DIR/explain.md)",
       "  -s, --set key=value   override a config key (repeatable)\n"
       "  -o, --out DIR         keep the run's output and explain.md there\n"
       "  --seed N              random seed\n"},
#ifndef GCSIM_NO_CHAKRA
      {"export",
       {"export CONFIG.yaml -o DIR [-s key=value]..."},
       "write the generated workload as per-rank Chakra ET files",
       "  -o, --out DIR         where the .et files go (required)\n"
       "  -s, --set key=value   override a config key (repeatable)\n"},
#endif
      {"calibrate",
       {"calibrate -o PROFILE.yaml [--gpu PRESET] [--bench PATH] [--quick]",
        "calibrate --fit MEASUREMENTS.json [--fit ...] [--kernel-grid RUN.json [--measured-fixed-costs]] -o PROFILE.yaml [--gpu PRESET]",
        "calibrate --validate PROFILE.yaml",
        "calibrate --collectives SWEEP.json [--collectives ...] [--fit-groups 2[,N...]] [--gpu PRESET] -o DIR",
        "calibrate --power-activity --gpu PRESET [--clock-bound-share S]",
        "calibrate --host-fit BENCH.json [--host-run TAG] -o HOST.yaml"},
       "measure this GPU (or fit measurements) into a calibration profile; validate one; "
       "fit the collective model to NCCL sweeps; fit this machine's host profile",
       "  -o, --out PROFILE     profile to write\n"
       "  --fit FILE            fit committed measurements instead of measuring (repeatable)\n"
       "  --validate PROFILE    print the profile's held-out error by kernel class\n"
       "  --gpu PRESET          preset the measurements are of\n"
       "  --bench PATH          path of gcsim_microbench\n"
       "  --quick               a few cases only (smoke test)\n"
       "  --collectives FILE    NCCL sweep (nccl_sweep.py) to fit the collective model to (repeatable);\n"
       "                        writes DIR/collective_fit.md and .json: held-out error per op\n"
       "  --fit-groups N[,N]    group sizes to fit on (default 2); the others are held out\n"
       "  --iterations N        Nelder-Mead iterations per restart (default 1500)\n"
       "  --power-activity      print (JSON) the runtime's activity of power_clock_bench.py's kernels\n"
       "                        at held clocks 0.50..1.00 of f_max, for calibration/fit/power_fit.py\n"
       "  --clock-bound-share S the share of arithmetic that follows the clock (default: the preset's)\n"
       "  --host-fit FILE       fit a host profile (cluster.host: HOST.yaml) to eager_host_bench.py's\n"
       "                        output (torchrun calibration/microbench/eager_host_bench.py on the machine)\n"
       "  --host-run TAG        with --host-fit: the run of the file to fit (default: its first)\n"},
      {"quiz",
       {"quiz [--topic training|inference|network|reliability] [--seed N] [--no-verify]",
        "quiz --answers-template [--topic T] [--seed N]", "quiz --check ANSWERS.yaml"},
       "interview-style question, worked answer and simulated check; grade answers",
       "  --topic T             training | inference | network | reliability (default: from the seed)\n"
       "  --seed N              quiz number (default 1)\n"
       "  --answers-template    print only the answers file to fill in\n"
       "  --check FILE          grade the answers file: exit 0 all pass, 3 some wrong or unanswered\n"
       "  --no-verify           skip the simulation (worked answer only)\n"},
      {"list",
       {"list [gpus|models|topologies|workloads|networks]"},
       "show presets and registered models",
       ""},
  };
  return commands;
}

const CommandHelp* find_command_help(const std::string& name) {
  for (const auto& c : command_helps()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string usage_lines(const CommandHelp& c) {
  std::string s;
  for (size_t i = 0; i < c.synopses.size(); ++i) {
    s += std::string(i == 0 ? "usage: " : "       ") + "gcsim " + c.synopses[i] + "\n";
  }
  return s + "(gcsim " + c.name + " --help for the options)\n";
}

std::string help_text(const CommandHelp& c) {
  std::string s;
  for (size_t i = 0; i < c.synopses.size(); ++i) {
    s += std::string(i == 0 ? "usage: " : "       ") + "gcsim " + c.synopses[i] + "\n";
  }
  s += "\n" + c.summary + "\n";
  if (!c.options.empty()) s += "\noptions:\n" + c.options;
  s += "  -h, --help            this text\n";
  return s;
}

std::string overview() {
  std::string s = "usage: gcsim <command> [options]    (gcsim <command> --help for one command)\n"
                  "       gcsim --version\n\ncommands:\n";
  for (const auto& c : command_helps()) {
    s += "  " + c.synopses.front() + "\n                      " + c.summary + "\n";
  }
  s += "\nExamples:\n"
       "  gcsim run configs/examples/quickstart.yaml --trace\n"
       "  gcsim run configs/examples/quickstart.yaml -s cluster.gpu=h200-sxm -o out/h200\n";
  return s;
}

std::string version_line() { return std::string("gcsim ") + GCSIM_VERSION; }

}  // namespace gcsim::cli
