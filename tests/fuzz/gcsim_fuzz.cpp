// gcsim_fuzz: the fuzz driver that builds with any compiler. Replays a
// corpus of configs, then feeds the loaders inputs made by a seeded,
// structure-aware mutator (tests/fuzz/config_mutator.h), each input in a
// sandboxed child process (tests/fuzz/sandbox.h). The iteration count, not
// the wall clock, bounds a session, so the same seed gives the same inputs.
//
//   gcsim_fuzz [options] CORPUS_DIR_OR_FILE...
//
// Exit status: 0 when no finding fails the session, 1 when one does
// (a crash or a non-ConfigError exception not listed in --known; with
// --strict also timeouts and out-of-memory), 2 on a usage error.
#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/engine/random.h"
#include "tests/fuzz/config_harness.h"
#include "tests/fuzz/config_mutator.h"
#include "tests/fuzz/finding_log.h"
#include "tests/fuzz/minimizer.h"
#include "tests/fuzz/sandbox.h"

namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace gcsim::fuzz;

namespace {

struct Options {
  std::vector<std::string> corpus;
  uint64_t iterations = 0;
  uint64_t seed = 1;
  SandboxLimits limits;
  std::string findings_dir;
  std::string known_file;
  bool minimize = false;
  int minimize_trials = 300;
  bool run_stage = false;
  bool strict = false;
  size_t max_size = 64 * 1024;
  size_t pool_cap = 512;
  std::string source_root = GCSIM_SOURCE_DIR;
  uint64_t report_every = 1000;
  std::string save_inputs;  // folder for every generated input (debugging the mutator)
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::pair<std::string, std::string>> load_corpus(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> corpus;  // name, text
  for (const auto& p : paths) {
    std::vector<fs::path> files;
    if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p)) {
        // Notes beside the inputs (findings/README.md, known.txt) are not inputs.
        const auto ext = e.path().extension();
        if (e.is_regular_file() && ext != ".md" && ext != ".txt") files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());  // directory order is not stable
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    } else {
      throw po::error("no such corpus file or folder: " + p);
    }
    for (const auto& f : files) corpus.emplace_back(f.string(), read_file(f));
  }
  return corpus;
}

class Session {
 public:
  Session(const Options& o, const std::vector<std::string>& seeds)
      : o_(o),
        workspace_(o.source_root),
        mutator_(seeds),
        log_(o.findings_dir,
             o.known_file.empty() ? std::vector<KnownFinding>{} : read_known_findings(o.known_file),
             o.strict) {
    workspace_.warm_up();
  }

  Verdict judge(const std::string& text) {
    std::vector<Stage> stages{{"check", [&] { return workspace_.check(text); }}};
    if (o_.run_stage) stages.push_back({"run", [&] { return workspace_.run(text); }});
    return run_sandboxed(stages, o_.limits);
  }

  // Judges one input; a new finding is printed, minimized and saved.
  Verdict feed(const std::string& text, const std::string& origin) {
    const Verdict v = judge(text);
    ++counts_[static_cast<int>(v.kind)];  // inputs fed, not minimization trials
    if (!v.is_finding()) return v;
    auto [entry, fresh] = log_.record(v, text);
    if (!fresh) return v;
    std::printf("[gcsim_fuzz] new %s: %s\n  from %s\n", entry->fails ? "FAILING finding" : "finding",
                first_lines(v.signature, 1).c_str(), origin.c_str());
    if (!v.detail.empty()) std::printf("  %s\n", first_lines(v.detail, 6).c_str());
    // A timeout's trials would each cost up to the CPU limit: not minimized.
    if (o_.minimize && v.kind != Verdict::Kind::timeout) {
      const std::string small = minimize(
          text, [&](const std::string& t) { return judge(t).signature == v.signature; },
          o_.minimize_trials);
      log_.replace_input(*entry, small);
      std::printf("  minimized %zu -> %zu bytes\n", text.size(), small.size());
    }
    if (!entry->file.empty()) std::printf("  saved %s\n", entry->file.c_str());
    std::fflush(stdout);
    return v;
  }

  const ConfigMutator& mutator() const { return mutator_; }
  const FindingLog& log() const { return log_; }
  std::string counts() const {
    std::string s;
    for (int k = 0; k < 6; ++k) {
      if (counts_[k] == 0) continue;
      s += std::string(s.empty() ? "" : ", ") + kind_name(static_cast<Verdict::Kind>(k)) + " " +
           std::to_string(counts_[k]);
    }
    return s;
  }

 private:
  // The first `n` lines of `s`, each cut at 300 characters.
  static std::string first_lines(const std::string& s, int n) {
    std::istringstream in(s);
    std::string out, line;
    for (int i = 0; i < n && std::getline(in, line); ++i) {
      if (line.size() > 300) line = line.substr(0, 300) + "...";
      out += (i ? "\n  " : "") + line;
    }
    return out;
  }

  const Options& o_;
  FuzzWorkspace workspace_;
  ConfigMutator mutator_;
  FindingLog log_;
  uint64_t counts_[6] = {};
};

int fuzz(const Options& o) {
  const auto corpus = load_corpus(o.corpus);
  if (corpus.empty()) throw po::error("the corpus is empty");
  std::vector<std::string> pool;
  for (const auto& [name, text] : corpus) pool.push_back(text);
  Session session(o, pool);
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };

  for (const auto& [name, text] : corpus) session.feed(text, name);
  const double replay_s = seconds();
  std::printf("[gcsim_fuzz] replayed %zu corpus files in %.1f s (%s)\n", corpus.size(), replay_s,
              session.counts().c_str());

  // Inputs that loaded join the pool: valid configs unlike any seed are
  // the best parents for the next mutations.
  gcsim::sim::RandomStream rng(o.seed, "gcsim_fuzz");
  const size_t seeds = pool.size();
  for (uint64_t i = 1; i <= o.iterations; ++i) {
    const size_t parent = rng.uniform_int(pool.size());
    const std::string input = session.mutator().mutate(pool[parent], rng, o.max_size);
    if (!o.save_inputs.empty()) {
      std::ofstream(fs::path(o.save_inputs) / ("input-" + std::to_string(i) + ".yaml")) << input;
    }
    const Verdict v = session.feed(input, "iteration " + std::to_string(i) + " (seed " +
                                              std::to_string(o.seed) + ")");
    if (v.kind == Verdict::Kind::accepted) {
      if (pool.size() < seeds + o.pool_cap) {
        pool.push_back(input);
      } else {
        pool[seeds + rng.uniform_int(o.pool_cap)] = input;
      }
    }
    if (i % o.report_every == 0 || i == o.iterations) {
      const double s = seconds() - replay_s;
      std::printf("[gcsim_fuzz] %llu/%llu inputs, %.1f s, %.1f inputs/s, pool %zu (%s)\n",
                  static_cast<unsigned long long>(i), static_cast<unsigned long long>(o.iterations),
                  s, static_cast<double>(i) / s, pool.size(), session.counts().c_str());
      std::fflush(stdout);
    }
  }
  std::printf("[gcsim_fuzz] findings (%zu classes, %d failing):\n%s", session.log().entries().size(),
              session.log().failing(), session.log().summary().c_str());
  return session.log().failing() > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  po::options_description opts(
      "gcsim_fuzz [options] CORPUS_DIR_OR_FILE...\n"
      "Replays each corpus file through `gcsim check`'s loader, then mutates the corpus");
  int cpu_s = o.limits.cpu_s;
  size_t memory_mb = o.limits.memory_mb;
  opts.add_options()("help,h", "this message")(
      "iterations,n", po::value(&o.iterations), "mutated inputs after the replay (default 0)")(
      "seed", po::value(&o.seed), "mutation seed (default 1)")(
      "cpu-limit", po::value(&cpu_s), "CPU seconds per input (default 10)")(
      "memory-limit", po::value(&memory_mb), "MiB of address space per input (default 2048)")(
      "findings", po::value(&o.findings_dir), "folder for one reproducer per new finding class")(
      "known", po::value(&o.known_file), "file of known open findings (signature substrings)")(
      "minimize", po::bool_switch(&o.minimize), "shrink each new finding's input (not timeouts) before saving")(
      "minimize-trials", po::value(&o.minimize_trials), "sandboxed runs per minimization (300)")(
      "run", po::bool_switch(&o.run_stage), "also simulate each input that loads (gcsim run)")(
      "strict", po::bool_switch(&o.strict), "timeouts and out-of-memory fail the session too")(
      "max-size", po::value(&o.max_size), "largest input in bytes (default 65536)")(
      "report-every", po::value(&o.report_every), "progress line every N inputs (1000)")(
      "save-inputs", po::value(&o.save_inputs), "write every generated input to this folder")(
      "source-root", po::value(&o.source_root), "the repository (for the files configs name)")(
      "corpus", po::value(&o.corpus), "corpus folders or files");
  po::positional_options_description pos;
  pos.add("corpus", -1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || o.corpus.empty()) {
      std::cout << opts;
      return vm.count("help") ? 0 : 2;
    }
    if (cpu_s < 1 || memory_mb < 64 || o.report_every == 0) {
      throw po::error("--cpu-limit >= 1, --memory-limit >= 64, --report-every >= 1");
    }
    o.limits = SandboxLimits{cpu_s, memory_mb};
    for (auto& c : o.corpus) c = fs::absolute(c).string();
    return fuzz(o);
  } catch (const po::error& e) {
    std::fprintf(stderr, "gcsim_fuzz: %s\n", e.what());
    return 2;
  }
}
