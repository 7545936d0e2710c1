#include "sim/report/sweep_tables.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli {

namespace {

using Json = nlohmann::ordered_json;

// The three table shapes: a training step, a serving run, anything else
// (graph, collective, chakra: a run of a given length).
enum class Shape { training, serving, run };

Shape shape_of_kind(const std::string& kind) {
  if (kind == "training") return Shape::training;
  if (kind == "inference") return Shape::serving;
  return Shape::run;
}

// A figure at a JSON path ("ttft_s/p99"), or -1 (not measured).
double at(const Json& j, const std::string& path) {
  const Json* cur = &j;
  std::stringstream ps(path);
  for (std::string part; std::getline(ps, part, '/');) {
    auto it = cur->find(part);
    if (it == cur->end()) return -1;
    cur = &*it;
  }
  return cur->is_number() ? cur->get<double>() : -1;
}

bool fits(const SweepPoint& p) {
  auto m = p.summary.find("memory");
  if (m == p.summary.end()) return true;
  auto f = m->find("fits");
  return f == m->end() || !f->is_boolean() || f->get<bool>();
}

double memory_gib(const SweepPoint& p) {
  const double b = at(p.summary, "memory/peak_bytes_per_gpu");
  return b < 0 ? -1 : b / 1073741824.0;
}

constexpr const char* kDims[] = {"tp", "cp", "ep", "pp", "dp"};

double exposed(const SweepPoint& p, const char* dim) {
  return std::max(0.0, at(p.summary, std::string("breakdown/exposed_comm_s/") + dim));
}

double goodput_per_gpu(const SweepPoint& p) {
  const double g = at(p.summary, "goodput_requests_per_s"), gpus = at(p.summary, "gpus");
  return g < 0 || gpus <= 0 ? -1 : g / gpus;
}

Shape shape_of(const SweepPoint& p) { return shape_of_kind(p.summary.value("kind", "")); }

std::string csv_field(std::string s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// A negative figure means "not measured": an empty field.
std::string num(double v, const char* f = "%.6g") { return v < 0 ? "" : fmt(f, v); }
std::string pct(double v) { return v < 0 ? "" : fmt("%.1f", 100 * v) + "%"; }
std::string seconds(double v) { return v < 0 ? "" : human_time(v); }

// Each shape's CSV columns and how a point fills them.
struct Column {
  std::string name;
  std::function<std::string(const SweepPoint&)> value;
};

std::vector<Column> csv_columns(Shape shape) {
  switch (shape) {
    case Shape::training: {
      std::vector<Column> c{
          {"step_time_s", [](const SweepPoint& p) { return num(at(p.summary, "step_time_s")); }},
          {"tokens_per_s", [](const SweepPoint& p) { return num(at(p.summary, "tokens_per_s")); }},
          {"tflops_per_gpu", [](const SweepPoint& p) { return num(at(p.summary, "tflops_per_gpu")); }},
          {"mfu", [](const SweepPoint& p) { return num(at(p.summary, "mfu")); }},
          {"hfu", [](const SweepPoint& p) { return num(at(p.summary, "hfu")); }},
          {"bubble_fraction", [](const SweepPoint& p) { return num(at(p.summary, "bubble_fraction")); }},
          {"peak_memory_gib", [](const SweepPoint& p) { return num(memory_gib(p)); }},
          {"fits", [](const SweepPoint& p) { return std::string(fits(p) ? "true" : "false"); }}};
      for (const char* d : kDims) {
        c.push_back({std::string("exposed_") + d + "_s",
                     [d](const SweepPoint& p) { return num(exposed(p, d)); }});
      }
      return c;
    }
    case Shape::serving:
      return {
          {"ttft_p50_s", [](const SweepPoint& p) { return num(at(p.summary, "ttft_s/p50")); }},
          {"ttft_p99_s", [](const SweepPoint& p) { return num(at(p.summary, "ttft_s/p99")); }},
          {"tpot_p50_s", [](const SweepPoint& p) { return num(at(p.summary, "tpot_s/p50")); }},
          {"tpot_p99_s", [](const SweepPoint& p) { return num(at(p.summary, "tpot_s/p99")); }},
          {"goodput_requests_per_s",
           [](const SweepPoint& p) { return num(at(p.summary, "goodput_requests_per_s")); }},
          {"slo_attainment", [](const SweepPoint& p) { return num(at(p.summary, "slo_attainment")); }},
          {"requests_per_s",
           [](const SweepPoint& p) { return num(at(p.summary, "throughput/requests_per_s")); }},
          {"output_tokens_per_s_per_gpu", [](const SweepPoint& p) {
             return num(at(p.summary, "throughput/output_tokens_per_s_per_gpu"));
           }}};
    case Shape::run:
      return {
          {"simulated_time_s", [](const SweepPoint& p) { return num(at(p.summary, "simulated_time_s")); }},
          {"peak_memory_gib", [](const SweepPoint& p) { return num(memory_gib(p)); }},
          {"fits", [](const SweepPoint& p) { return std::string(fits(p) ? "true" : "false"); }}};
  }
  return {};
}

// The shapes present, in a fixed order; the base config's kind when no
// point ran (so a study whose every point was skipped keeps its columns).
std::vector<Shape> shapes_present(const SweepStudy& s, const std::vector<SweepPoint>& points) {
  bool seen[3] = {false, false, false};
  for (const SweepPoint& p : points) {
    if (p.status == "ok") seen[static_cast<int>(shape_of(p))] = true;
  }
  std::vector<Shape> out;
  for (Shape sh : {Shape::training, Shape::serving, Shape::run}) {
    if (seen[static_cast<int>(sh)]) out.push_back(sh);
  }
  if (out.empty()) {
    std::string kind;
    try {
      const YAML::Node base = YAML::LoadFile(s.base_path);
      if (base["workload"] && base["workload"]["kind"]) kind = base["workload"]["kind"].as<std::string>();
    } catch (const YAML::Exception&) {
      // An unreadable base made every point fail already; any columns do.
    }
    out.push_back(shape_of_kind(kind));
  }
  return out;
}

std::string escape_cell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

// Sorts `ok` (points of one shape) best first; returns the rule in words.
std::string rank(Shape shape, std::vector<const SweepPoint*>& ok) {
  switch (shape) {
    case Shape::training:
      std::stable_sort(ok.begin(), ok.end(), [](const SweepPoint* a, const SweepPoint* b) {
        if (fits(*a) != fits(*b)) return fits(*a);
        return at(a->summary, "step_time_s") < at(b->summary, "step_time_s");
      });
      return "configurations that fit first, then by step time";
    case Shape::serving: {
      const bool slo = std::any_of(ok.begin(), ok.end(),
                                   [](const SweepPoint* p) { return goodput_per_gpu(*p) >= 0; });
      std::stable_sort(ok.begin(), ok.end(), [slo](const SweepPoint* a, const SweepPoint* b) {
        const double ka = slo ? goodput_per_gpu(*a)
                              : at(a->summary, "throughput/output_tokens_per_s_per_gpu");
        const double kb = slo ? goodput_per_gpu(*b)
                              : at(b->summary, "throughput/output_tokens_per_s_per_gpu");
        if (ka != kb) return ka > kb;
        return at(a->summary, "ttft_s/p99") < at(b->summary, "ttft_s/p99");
      });
      return slo ? "by goodput per GPU (requests per second that meet the SLOs, over the GPUs "
                   "used), then by TTFT p99"
                 : "by output tokens per second per GPU (no SLOs set, so no goodput), then by "
                   "TTFT p99";
    }
    case Shape::run:
      std::stable_sort(ok.begin(), ok.end(), [](const SweepPoint* a, const SweepPoint* b) {
        if (fits(*a) != fits(*b)) return fits(*a);
        return at(a->summary, "simulated_time_s") < at(b->summary, "simulated_time_s");
      });
      return "configurations that fit first, then by simulated time";
  }
  return "";
}

std::string training_row(const SweepPoint& p) {
  std::string worst = "-";
  double worst_s = 0;
  for (const char* d : kDims) {
    if (exposed(p, d) > worst_s) {
      worst_s = exposed(p, d);
      worst = std::string(d) + " " + num(worst_s, "%.3g") + " s";
    }
  }
  return num(at(p.summary, "step_time_s"), "%.4g") + " s | " +
         num(at(p.summary, "tokens_per_s"), "%.4g") + " | " +
         num(at(p.summary, "tflops_per_gpu"), "%.1f") + " | " + pct(at(p.summary, "mfu")) + " | " +
         pct(at(p.summary, "bubble_fraction")) + " | " + num(memory_gib(p), "%.1f") + " GiB | " +
         (fits(p) ? "yes" : "**no**") + " | " + worst;
}

std::string serving_row(const SweepPoint& p) {
  return seconds(at(p.summary, "ttft_s/p50")) + " | " + seconds(at(p.summary, "ttft_s/p99")) + " | " +
         seconds(at(p.summary, "tpot_s/p50")) + " | " + seconds(at(p.summary, "tpot_s/p99")) + " | " +
         num(at(p.summary, "goodput_requests_per_s"), "%.3g") + " | " +
         pct(at(p.summary, "slo_attainment")) + " | " +
         num(at(p.summary, "throughput/output_tokens_per_s_per_gpu"), "%.4g") + " | " +
         num(at(p.summary, "throughput/requests_per_s"), "%.3g");
}

std::string run_row(const SweepPoint& p) {
  return seconds(at(p.summary, "simulated_time_s")) + " | " + num(memory_gib(p), "%.1f") +
         " GiB | " + (fits(p) ? "yes" : "**no**");
}

const char* table_header(Shape shape) {
  switch (shape) {
    case Shape::training:
      return "| # | point | step | tokens/s | TFLOP/s/GPU | MFU | bubble | memory/GPU | fits | "
             "largest exposed comm |\n|---:|---|---:|---:|---:|---:|---:|---:|---|---|\n";
    case Shape::serving:
      return "| # | point | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | goodput (req/s) | SLO met | "
             "output tok/s/GPU | req/s |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    case Shape::run:
      return "| # | point | simulated time | memory/GPU | fits |\n|---:|---|---:|---:|---|\n";
  }
  return "";
}

const char* shape_title(Shape shape) {
  switch (shape) {
    case Shape::training: return "training";
    case Shape::serving: return "serving (inference)";
    case Shape::run: return "runs";
  }
  return "";
}

}  // namespace

void write_results_csv(const SweepStudy& s, const std::vector<SweepPoint>& points,
                       const std::filesystem::path& path) {
  const std::vector<Shape> shapes = shapes_present(s, points);
  const bool mixed = shapes.size() > 1;
  std::ofstream f(path);
  f << "point,case";
  for (const auto& a : s.axes) f << "," << csv_field(a.key);
  f << (mixed ? ",kind" : "") << ",status";
  for (Shape sh : shapes) {
    for (const Column& c : csv_columns(sh)) f << "," << c.name;
  }
  f << ",reason\n";
  for (const SweepPoint& p : points) {
    f << p.index << "," << csv_field(p.case_name);
    for (const auto& v : p.axis_values) f << "," << csv_field(v);
    if (mixed) f << "," << p.summary.value("kind", "");
    f << "," << p.status;
    for (Shape sh : shapes) {
      for (const Column& c : csv_columns(sh)) {
        f << "," << (p.status == "ok" && shape_of(p) == sh ? c.value(p) : "");
      }
    }
    f << "," << (p.status == "ok" ? "" : csv_field(p.reason)) << "\n";
  }
}

std::string ranked_tables(const SweepStudy& s, const std::vector<SweepPoint>& points) {
  const std::vector<Shape> shapes = shapes_present(s, points);
  std::ostringstream o;
  for (Shape sh : shapes) {
    std::vector<const SweepPoint*> ok;
    for (const SweepPoint& p : points) {
      if (p.status == "ok" && shape_of(p) == sh) ok.push_back(&p);
    }
    const std::string rule = rank(sh, ok);
    if (shapes.size() > 1) o << "### " << shape_title(sh) << "\n\n";
    o << "Ranked: " << rule << ".\n\n" << table_header(sh);
    int n = 0;
    for (const SweepPoint* p : ok) {
      const std::string row = sh == Shape::training  ? training_row(*p)
                              : sh == Shape::serving ? serving_row(*p)
                                                     : run_row(*p);
      o << "| " << ++n << " | " << escape_cell(point_label(s, *p)) << " | " << row << " |\n";
    }
    o << "\n";
  }
  std::vector<const SweepPoint*> other;
  for (const SweepPoint& p : points) {
    if (p.status != "ok") other.push_back(&p);
  }
  if (!other.empty()) {
    o << "Not run:\n\n| point | status | reason |\n|---|---|---|\n";
    for (const SweepPoint* p : other) {
      o << "| " << escape_cell(point_label(s, *p)) << " | " << p->status << " | "
        << escape_cell(p->reason) << " |\n";
    }
  }
  return o.str();
}

std::vector<const SweepPoint*> ranked_points(const SweepStudy& s, const std::vector<SweepPoint>& points) {
  std::vector<const SweepPoint*> out, other;
  for (Shape sh : shapes_present(s, points)) {
    std::vector<const SweepPoint*> ok;
    for (const SweepPoint& p : points) {
      if (p.status == "ok" && shape_of(p) == sh) ok.push_back(&p);
    }
    rank(sh, ok);
    out.insert(out.end(), ok.begin(), ok.end());
  }
  for (const SweepPoint& p : points) {
    if (p.status != "ok") out.push_back(&p);
  }
  return out;
}

std::string progress_figure(const SweepPoint& p) {
  if (p.status != "ok") return p.status + ": " + p.reason;
  switch (shape_of(p)) {
    case Shape::training:
      return num(at(p.summary, "step_time_s"), "%.4g") + " s step" +
             (fits(p) ? "" : " (does not fit)");
    case Shape::serving: {
      const double goodput = at(p.summary, "goodput_requests_per_s");
      return "TTFT p99 " + seconds(at(p.summary, "ttft_s/p99")) + ", TPOT p99 " +
             seconds(at(p.summary, "tpot_s/p99")) +
             (goodput >= 0 ? ", goodput " + num(goodput, "%.3g") + " req/s" : "");
    }
    case Shape::run:
      return "simulated " + seconds(at(p.summary, "simulated_time_s")) +
             (fits(p) ? "" : " (does not fit)");
  }
  return "";
}

double SweepStudy::point_count() const {
  double n = cases.empty() ? 1.0 : static_cast<double>(cases.size());
  for (const auto& a : axes) n *= static_cast<double>(a.values.size());
  return n;
}

std::string axis_label(const SweepStudy& s, size_t i) {
  const std::string& key = s.axes[i].key;
  const auto last_part = [](const std::string& k) { return k.substr(k.rfind('.') + 1); };
  const std::string last = last_part(key);
  bool index = false;  // a list index anywhere: workload.ops.0.rank
  std::stringstream ps(key);
  for (std::string part; std::getline(ps, part, '.');) {
    index = index || (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit));
  }
  bool shared = false;
  for (size_t j = 0; j < s.axes.size(); ++j) shared = shared || (j != i && last_part(s.axes[j].key) == last);
  return index || shared ? key : last;
}

std::string point_label(const SweepStudy& s, const SweepPoint& p) {
  std::string l = p.case_name;
  for (size_t i = 0; i < s.axes.size(); ++i) {
    l += (l.empty() ? "" : ", ") + axis_label(s, i) + "=" + p.axis_values[i];
  }
  return l.empty() ? "base" : l;
}

}  // namespace gcsim::cli
