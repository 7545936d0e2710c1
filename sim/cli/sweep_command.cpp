#include "sim/cli/sweep_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/report/format.h"
#include "sim/cli/mpi_world.h"
#include "sim/report/study_html.h"
#include "sim/scenario/sweep_study.h"
#include "sim/report/sweep_tables.h"
#include "sim/config/config_error.h"
#include "sim/config/config_reader.h"
#include "sim/config/input_file.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using sim::config::ConfigError;
using sim::config::ConfigReader;
using sim::config::ConfigSource;

namespace {

std::string flow_yaml(const YAML::Node& n) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

SweepStudy read_study(const std::string& path, const fs::path& out_dir) {
  auto source = std::make_shared<ConfigSource>();
  YAML::Node root = sim::config::load_yaml_file(path, {}, *source, "study");
  sim::config::Json resolved;
  ConfigReader r(root, "", source, &resolved);
  if (!r.has("base") && !r.has("axes") && (r.has("workload") || r.has("cluster"))) {
    r.fail(r.has("workload") ? "workload" : "cluster",
           "this is a config, not a study: use `gcsim run " + path +
               "` (a study names it as `base:` and adds `axes:`)");
  }
  SweepStudy s;
  s.name = r.get_string("name", fs::path(path).stem().string(), "title of the study");
  YAML::Node base = r.raw("base", "base config: a path (relative to the study) or an inline map");
  if (!base.IsDefined() || base.IsNull()) r.fail_here("missing required key 'base' (the base config)");
  if (base.IsScalar()) {
    fs::path p = base.Scalar();
    if (p.is_relative()) p = fs::path(path).parent_path() / p;
    if (std::string why; !sim::config::path_exists(p.string(), &why)) {
      r.fail("base", "base config '" + p.string() + "' not found" + sim::config::why_suffix(why));
    }
    std::error_code ec;
    if (fs::equivalent(p, path, ec)) {
      r.fail("base", "the base config is this study itself; name the config whose keys the axes "
                     "vary (a path, or an inline map)");
    }
    s.base_path = p.string();
  } else if (base.IsMap()) {
    // An inline base is written out so that every point runs a file.
    fs::create_directories(out_dir);
    s.base_path = (out_dir / "base.yaml").string();
    std::ofstream f(s.base_path);
    YAML::Emitter e;
    e << base;
    f << "# The study's inline base config (" << path << ").\n" << e.c_str() << "\n";
  } else {
    r.fail("base", "expected a path or a map");
  }
  YAML::Node axes = r.raw("axes", "config keys and the values each takes (crossed)");
  if (axes.IsDefined() && !axes.IsNull()) {
    if (!axes.IsMap()) r.fail("axes", "expected a map of key: [values]");
    for (const auto& kv : axes) {
      SweepAxis a;
      a.key = kv.first.Scalar();
      a.line = kv.first.Mark().line + 1;
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        r.fail("axes", "axis '" + a.key + "' needs a non-empty list of values");
      }
      for (const auto& v : kv.second) a.values.push_back(v.IsScalar() ? v.Scalar() : flow_yaml(v));
      s.axes.push_back(std::move(a));
    }
  }
  if (r.has("cases")) {
    for (ConfigReader c : r.child_list("cases", "named sets of overrides, each crossed with the axes")) {
      SweepCase k;
      k.name = c.get_string("name", std::nullopt, "case name");
      YAML::Node set = c.raw("set", "overrides: key: value");
      if (set.IsDefined() && !set.IsNull()) {
        if (!set.IsMap()) c.fail("set", "expected a map of key: value");
        for (const auto& kv : set) {
          const YAML::Node& v = kv.second;
          k.overrides.push_back(kv.first.Scalar() + "=" + (v.IsScalar() ? v.Scalar() : flow_yaml(v)));
        }
      }
      c.finish();
      s.cases.push_back(std::move(k));
    }
  }
  r.finish();
  return s;
}

std::vector<SweepPoint> expand(const SweepStudy& s, const fs::path& out_dir) {
  std::vector<SweepCase> cases = s.cases;
  if (cases.empty()) cases.push_back({"", {}});
  std::vector<SweepPoint> points;
  size_t combos = 1;
  for (const auto& a : s.axes) combos *= a.values.size();
  for (const SweepCase& c : cases) {
    for (size_t n = 0; n < combos; ++n) {
      SweepPoint p;
      p.case_name = c.name;
      p.overrides = c.overrides;
      size_t rest = n;
      // The last axis varies fastest.
      std::vector<size_t> pick(s.axes.size());
      for (size_t i = s.axes.size(); i-- > 0;) {
        pick[i] = rest % s.axes[i].values.size();
        rest /= s.axes[i].values.size();
      }
      for (size_t i = 0; i < s.axes.size(); ++i) {
        const std::string& v = s.axes[i].values[pick[i]];
        p.axis_values.push_back(v);
        p.overrides.push_back(s.axes[i].key + "=" + v);
      }
      p.index = points.size();
      char name[32];
      std::snprintf(name, sizeof name, "%04zu", p.index);
      p.dir = out_dir / "points" / name;
      points.push_back(std::move(p));
    }
  }
  return points;
}

// "[sweep] the first point took 0.21 s: the other 262143 take about 15.3 h
// at -j 1", from the first point's wall time (runs of one study are alike:
// same base, a few keys changed), rounded up to whole rounds of `jobs`.
// A span of wall time for people: "40 s", "3.5 min", "15.3 h", "2.1 days".
std::string wall_span(double s) {
  return s < 120      ? fmt("%.2g s", s)
         : s < 7200   ? fmt("%.1f min", s / 60)
         : s < 172800 ? fmt("%.1f h", s / 3600)
                      : fmt("%.1f days", s / 86400);
}

// "[sweep] the first point took 0.21 s: if the others cost as much, the
// other 262143 take about 15.3 h at -j 1", rounded up to whole rounds of
// `jobs`. Points of one study differ (a deeper pipeline is more ops) and
// parallel runs share the machine, so the progress lines refine it.
std::string estimate_line(double first_s, size_t remaining, int jobs) {
  const double rounds = std::ceil(static_cast<double>(remaining) / jobs);
  const double total = first_s * rounds;
  return "[sweep] the first point took " + fmt("%.2f s", first_s) +
         ": if the others cost as much, the other " + std::to_string(remaining) +
         " take about " + wall_span(total) + " at -j " + std::to_string(jobs) +
         (total > 3600 ? " (Ctrl-C stops it; fewer axis values shorten it)" : "") + "\n";
}

// A point refused because a key of the study does not exist in the config
// (a misspelt axis or case key, a path through a value): every point with
// that key fails alike, so it is the study that is wrong, not the point.
bool is_key_error(const std::string& reason) {
  for (const char* phrase : {"unknown key", "list index", "an empty key in the path",
                             "cannot set a key under"}) {
    if (reason.find(phrase) != std::string::npos) return true;
  }
  return false;
}

// Exit status 2 when no point ran or when key errors kept points from
// running, with the distinct reasons on stderr (the tables still list every
// point); 0 otherwise (impossible points are an answer, not an error).
int sweep_status(const SweepStudy& s, const std::string& study_path,
                 const std::vector<SweepPoint>& points, size_t ran) {
  std::vector<std::string> reasons;
  size_t key_errors = 0;
  for (const SweepPoint& p : points) {
    if (p.status == "ok") continue;
    const bool key = is_key_error(p.reason) || p.reason.rfind("not run:", 0) == 0;
    key_errors += key;
    if ((key || ran == 0) && std::find(reasons.begin(), reasons.end(), p.reason) == reasons.end()) {
      reasons.push_back(p.reason);
    }
  }
  if (ran > 0 && key_errors == 0) return 0;
  std::string axes;
  for (const SweepAxis& a : s.axes) {
    axes += (axes.empty() ? "" : ", ") + a.key + " (line " + std::to_string(a.line) + ")";
  }
  std::fprintf(stderr, "gcsim: error: %s: %s of %zu points ran", study_path.c_str(),
               ran == 0 ? "none" : std::to_string(ran).c_str(), points.size());
  if (key_errors > 0) {
    std::fprintf(stderr, "; %zu refused because a key of the study is not a config key (check the "
                         "axes%s%s and cases)", key_errors, axes.empty() ? "" : ": ", axes.c_str());
  }
  std::fprintf(stderr, ". Reasons:\n");
  for (const auto& r : reasons) std::fprintf(stderr, "  - %s\n", r.c_str());
  return 2;
}

}  // namespace

int sweep_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description opts("sweep options");
  int jobs = 1;
  std::string out_dir;
  opts.add_options()("out,o", po::value<std::string>(&out_dir), "output directory")(
      "jobs,j", po::value<int>(&jobs), "points run at once (default 1; per rank under mpirun)")(
      "quiet,q", po::bool_switch(), "no progress lines")(
      "args", po::value<std::vector<std::string>>(), "study file");
  po::positional_options_description pos;
  pos.add("args", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (!vm.count("args") || vm["args"].as<std::vector<std::string>>().size() != 1) {
    throw po::error("expected one STUDY.yaml");
  }
  if (jobs < 1) throw po::error("-j must be at least 1");
  const bool quiet = vm["quiet"].as<bool>();
  const std::string study_path = vm["args"].as<std::vector<std::string>>()[0];
  if (out_dir.empty()) out_dir = (fs::path("out") / fs::path(study_path).stem()).string();
  const fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError("command line", 0, "-o", "cannot create '" + out_dir + "': " + ec.message());

  const MpiWorld world;
  const SweepStudy study = read_study(study_path, dir);
  // The size first, before expanding: a study of 2^18 points should say so
  // before it starts.
  const size_t cases = std::max<size_t>(1, study.cases.size());
  if (world.root()) std::fprintf(stderr, "[sweep] %s: %.0f points (%zu axes x %zu case%s), %d at a time\n",
               study.name.c_str(), study.point_count(), study.axes.size(), cases,
               cases == 1 ? "" : "s", jobs);
  std::vector<SweepPoint> points = expand(study, dir);

  // Each rank's first point runs alone and is timed: the estimate for the
  // rest is printed before they start, and a key error there (a misspelt
  // axis) would repeat at every point, so the sweep stops instead.
  std::vector<RunPoint> runs(points.begin(), points.end());
  const std::string who = world.size() > 1 ? " rank " + std::to_string(world.rank()) + ":" : "";
  RunHooks hooks;
  hooks.on_first = [&](const RunPoint& first, double wall_s, size_t left) -> std::string {
    if (is_key_error(first.reason)) return "not run: the first point was refused for a key of the study";
    if (left > 0) std::fprintf(stderr, "%s", estimate_line(wall_s, left, jobs).c_str());
    return "";
  };
  const auto start = std::chrono::steady_clock::now();
  hooks.on_done = [&](const RunPoint& r, size_t done, size_t mine) {
    if (quiet) return;
    SweepPoint& p = points[static_cast<size_t>(&r - runs.data())];
    static_cast<RunPoint&>(p) = r;
    // The time left at the pace so far (all of this rank's points, all jobs).
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double left = elapsed / static_cast<double>(done) * static_cast<double>(mine - done);
    std::fprintf(stderr, "[sweep]%s %zu/%zu %s: %s%s\n", who.c_str(), done, mine,
                 point_label(study, p).c_str(), progress_figure(p).c_str(),
                 done < mine ? (" (about " + wall_span(left) + " left)").c_str() : "");
  };
  run_points(study.base_path, runs, jobs, world, hooks);
  for (size_t i = 0; i < points.size(); ++i) static_cast<RunPoint&>(points[i]) = std::move(runs[i]);
  if (!world.root()) return 0;  // rank 0 writes the merged result

  write_results_csv(study, points, dir / "results.csv");
  const std::string table = ranked_tables(study, points);
  {
    std::ofstream f(dir / "results.md");
    f << "# " << study.name << "\n\nBase config `" << study.base_path << "`; " << points.size()
      << " points.\n\n" << table;
  }
  {
    std::vector<SweepRow> rows;
    for (const SweepPoint* p : ranked_points(study, points)) rows.push_back({point_label(study, *p), p});
    std::ofstream f(dir / "report.html");
    f << sweep_html(study.name, study.base_path, rows);
  }
  size_t ok = 0;
  for (const SweepPoint& p : points) ok += p.status == "ok";
  out << "gcsim sweep: " << study.name << ": " << ok << " of " << points.size() << " points ran; wrote "
      << (dir / "results.csv").string() << ", " << (dir / "results.md").string() << ", "
      << (dir / "report.html").string() << "\n\n" << table;
  return sweep_status(study, study_path, points, ok);
}

}  // namespace gcsim::cli
