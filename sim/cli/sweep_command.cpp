#include "sim/cli/sweep_command.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <cstring>
#include <sstream>

#include "sim/cli/format.h"
#include "sim/cli/mpi_world.h"
#include "sim/cli/point_runner.h"
#include "sim/cli/study_html.h"
#include "sim/config/config_error.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using sim::config::ConfigError;
using sim::config::ConfigReader;
using sim::config::ConfigSource;

namespace {

// One value of an axis: the override text and how the table shows it.
struct AxisValue {
  std::string yaml;
};

struct Axis {
  std::string key;
  std::vector<AxisValue> values;
};

struct Case {
  std::string name;
  std::vector<std::string> overrides;  // "key=value"
};

struct Study {
  std::string name;
  std::string base_path;  // resolved base config
  std::vector<Axis> axes;
  std::vector<Case> cases;
};

// A point of the study: where it sits (case, axis values) and its run.
struct Point {
  size_t index = 0;
  std::string case_name;
  std::vector<std::string> axis_values;  // per axis, as written
};

std::string flow_yaml(const YAML::Node& n) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

Study read_study(const std::string& path, const fs::path& out_dir) {
  auto source = std::make_shared<ConfigSource>();
  YAML::Node root = sim::config::load_yaml_file(path, {}, *source);
  sim::config::Json resolved;
  ConfigReader r(root, "", source, &resolved);
  Study s;
  s.name = r.get_string("name", fs::path(path).stem().string(), "title of the study");
  YAML::Node base = r.raw("base", "base config: a path (relative to the study) or an inline map");
  if (!base.IsDefined() || base.IsNull()) r.fail_here("missing required key 'base' (the base config)");
  if (base.IsScalar()) {
    fs::path p = base.Scalar();
    if (p.is_relative()) p = fs::path(path).parent_path() / p;
    if (!fs::exists(p)) r.fail("base", "base config '" + p.string() + "' not found");
    s.base_path = p.string();
  } else if (base.IsMap()) {
    // An inline base is written out so that every point runs a file.
    fs::create_directories(out_dir);
    s.base_path = (out_dir / "base.yaml").string();
    // Written aside and renamed: the ranks of an MPI job each write it.
    const std::string aside = s.base_path + "." + std::to_string(::getpid());
    {
      std::ofstream f(aside);
      YAML::Emitter e;
      e << base;
      f << "# The study's inline base config (" << path << ").\n" << e.c_str() << "\n";
    }
    fs::rename(aside, s.base_path);
  } else {
    r.fail("base", "expected a path or a map");
  }
  YAML::Node axes = r.raw("axes", "config keys and the values each takes (crossed)");
  if (axes.IsDefined() && !axes.IsNull()) {
    if (!axes.IsMap()) r.fail("axes", "expected a map of key: [values]");
    for (const auto& kv : axes) {
      Axis a;
      a.key = kv.first.Scalar();
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        r.fail("axes", "axis '" + a.key + "' needs a non-empty list of values");
      }
      for (const auto& v : kv.second) a.values.push_back({v.IsScalar() ? v.Scalar() : flow_yaml(v)});
      s.axes.push_back(std::move(a));
    }
  }
  if (r.has("cases")) {
    for (ConfigReader c : r.child_list("cases", "named sets of overrides, each crossed with the axes")) {
      Case k;
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

// The study's points and, index for index, their runs.
void expand(const Study& s, const fs::path& out_dir, std::vector<Point>& points,
            std::vector<RunPoint>& runs) {
  std::vector<Case> cases = s.cases;
  if (cases.empty()) cases.push_back({"", {}});
  size_t combos = 1;
  for (const auto& a : s.axes) combos *= a.values.size();
  for (const Case& c : cases) {
    for (size_t n = 0; n < combos; ++n) {
      Point p;
      RunPoint run;
      p.case_name = c.name;
      run.overrides = c.overrides;
      size_t rest = n;
      // The last axis varies fastest.
      std::vector<size_t> pick(s.axes.size());
      for (size_t i = s.axes.size(); i-- > 0;) {
        pick[i] = rest % s.axes[i].values.size();
        rest /= s.axes[i].values.size();
      }
      for (size_t i = 0; i < s.axes.size(); ++i) {
        const std::string& v = s.axes[i].values[pick[i]].yaml;
        p.axis_values.push_back(v);
        run.overrides.push_back(s.axes[i].key + "=" + v);
      }
      p.index = points.size();
      char name[32];
      std::snprintf(name, sizeof name, "%04zu", p.index);
      run.dir = out_dir / "points" / name;
      points.push_back(std::move(p));
      runs.push_back(std::move(run));
    }
  }
}

std::string label(const Study& s, const Point& p) {
  std::string l = p.case_name;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const std::string& key = s.axes[i].key;
    const std::string shortkey = key.substr(key.rfind('.') + 1);
    l += (l.empty() ? "" : ", ") + shortkey + "=" + p.axis_values[i];
  }
  return l.empty() ? "base" : l;
}

double step_time(const RunPoint& p) { return summary_step_time(p.summary); }
bool fits(const RunPoint& p) { return summary_fits(p.summary); }
double memory_gib(const RunPoint& p) {
  const double b = summary_memory_bytes(p.summary);
  return b < 0 ? -1 : b / 1073741824.0;
}
double exposed(const RunPoint& p, const char* dim) { return summary_exposed(p.summary, dim); }
double number(const RunPoint& p, const char* key) { return summary_number(p.summary, key); }

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// A negative figure means "not measured": an empty CSV field.
std::string num(double v, const char* f = "%.6g") { return v < 0 ? "" : fmt(f, v); }

constexpr const char* kDims[] = {"tp", "cp", "ep", "pp", "dp"};

void write_csv(const Study& s, const std::vector<Point>& points, const std::vector<RunPoint>& runs,
               const fs::path& path) {
  std::ofstream f(path);
  f << "point,case";
  for (const auto& a : s.axes) f << "," << csv_field(a.key);
  f << ",status,step_time_s,tokens_per_s,tflops_per_gpu,mfu,hfu,bubble_fraction,"
       "peak_memory_gib,fits";
  for (const char* d : kDims) f << ",exposed_" << d << "_s";
  f << ",reason\n";
  for (const Point& p : points) {
    const RunPoint& r = runs[p.index];
    f << p.index << "," << csv_field(p.case_name);
    for (const auto& v : p.axis_values) f << "," << csv_field(v);
    f << "," << r.status;
    if (r.status == "ok") {
      f << "," << num(step_time(r)) << "," << num(number(r, "tokens_per_s")) << ","
        << num(number(r, "tflops_per_gpu")) << "," << num(number(r, "mfu")) << ","
        << num(number(r, "hfu")) << "," << num(number(r, "bubble_fraction")) << ","
        << num(memory_gib(r)) << "," << (fits(r) ? "true" : "false");
      for (const char* d : kDims) f << "," << num(exposed(r, d));
      f << ",\n";
    } else {
      f << ",,,,,,,,";
      for (size_t i = 0; i < std::size(kDims); ++i) f << ",";
      f << "," << csv_field(r.reason) << "\n";
    }
  }
}

// The points that ran, ranked (fits first, then step time), and the others.
std::pair<std::vector<const Point*>, std::vector<const Point*>> ranked(const std::vector<Point>& points,
                                                                      const std::vector<RunPoint>& runs) {
  std::vector<const Point*> ok, other;
  for (const Point& p : points) (runs[p.index].status == "ok" ? ok : other).push_back(&p);
  std::stable_sort(ok.begin(), ok.end(), [&runs](const Point* a, const Point* b) {
    const RunPoint &x = runs[a->index], &y = runs[b->index];
    if (fits(x) != fits(y)) return fits(x);
    return step_time(x) < step_time(y);
  });
  return {ok, other};
}

std::string ranked_table(const Study& s, const std::vector<Point>& points,
                         const std::vector<RunPoint>& runs) {
  const auto [ok, other] = ranked(points, runs);
  std::ostringstream o;
  o << "| # | point | step | tokens/s | TFLOP/s/GPU | MFU | bubble | memory/GPU | fits | largest exposed comm |\n"
    << "|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  int rank = 0;
  for (const Point* p : ok) {
    const RunPoint& r = runs[p->index];
    std::string worst = "-";
    double worst_s = 0;
    for (const char* d : kDims) {
      if (exposed(r, d) > worst_s) {
        worst_s = exposed(r, d);
        worst = std::string(d) + " " + num(worst_s, "%.3g") + " s";
      }
    }
    const double mfu = number(r, "mfu"), bubble = number(r, "bubble_fraction");
    o << "| " << ++rank << " | " << label(s, *p) << " | " << num(step_time(r), "%.4g") << " s | "
      << num(number(r, "tokens_per_s"), "%.4g") << " | " << num(number(r, "tflops_per_gpu"), "%.1f")
      << " | " << (mfu >= 0 ? num(100 * mfu, "%.1f") + "%" : "") << " | "
      << (bubble >= 0 ? num(100 * bubble, "%.1f") + "%" : "") << " | " << num(memory_gib(r), "%.1f")
      << " GiB | " << (fits(r) ? "yes" : "**no**") << " | " << worst << " |\n";
  }
  if (!other.empty()) {
    o << "\nNot run:\n\n| point | status | reason |\n|---|---|---|\n";
    for (const Point* p : other) {
      std::string reason = runs[p->index].reason;
      std::replace(reason.begin(), reason.end(), '|', '/');
      o << "| " << label(s, *p) << " | " << runs[p->index].status << " | " << reason << " |\n";
    }
  }
  return o.str();
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
    throw po::error("gcsim sweep: expected one STUDY.yaml");
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
  const Study study = read_study(study_path, dir);
  std::vector<Point> points;
  std::vector<RunPoint> runs;
  expand(study, dir, points, runs);
  run_points(study.base_path, runs, jobs, world,
             [&](const RunPoint& r, size_t done, size_t mine) {
               if (quiet) return;
               const size_t index = static_cast<size_t>(&r - runs.data());
               const std::string what = r.status == "ok" ? num(step_time(r), "%.4g") + " s" +
                                                               (fits(r) ? "" : " (does not fit)")
                                                         : r.status + ": " + r.reason;
               const std::string who =
                   world.size() > 1 ? " rank " + std::to_string(world.rank()) + ":" : "";
               std::fprintf(stderr, "[sweep]%s %zu/%zu %s: %s\n", who.c_str(), done, mine,
                            label(study, points[index]).c_str(), what.c_str());
             });
  if (!world.root()) return 0;  // rank 0 writes the merged result

  write_csv(study, points, runs, dir / "results.csv");
  const std::string table = ranked_table(study, points, runs);
  {
    std::ofstream f(dir / "results.md");
    f << "# " << study.name << "\n\nBase config `" << study.base_path << "`; " << points.size()
      << " points. Ranked: configurations that fit first, then by step time.\n\n" << table;
  }
  {
    std::vector<SweepRow> rows;
    const auto [ran, not_run] = ranked(points, runs);
    for (const auto* group : {&ran, &not_run}) {
      for (const Point* p : *group) rows.push_back({label(study, *p), &runs[p->index]});
    }
    std::ofstream f(dir / "report.html");
    f << sweep_html(study.name, study.base_path, rows);
  }
  size_t ok = 0;
  for (const RunPoint& r : runs) ok += r.status == "ok";
  out << "gcsim sweep: " << study.name << ": " << ok << " of " << points.size()
      << " points ran; wrote " << (dir / "results.csv").string() << ", "
      << (dir / "results.md").string() << ", report.html\n\n"
      << table;
  return 0;
}

}  // namespace gcsim::cli
