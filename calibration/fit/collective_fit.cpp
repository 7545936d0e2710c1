#include "calibration/fit/collective_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "models/network/flow_model.h"
#include "models/network/fabric.h"
#include "models/network/routing.h"
#include "sim/simulator.h"

namespace gcsim::calibration {

using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::CollectiveParams;
using models::collectives::Protocol;

namespace {

Protocol protocol_from(const std::string& s) {
  if (s == "LL") return Protocol::ll;
  if (s == "LL128") return Protocol::ll128;
  return Protocol::simple;  // SIMPLE / Simple
}

// One host of `n` GPUs on one NVSwitch: the preset's NVLink per GPU each
// way, half its latency per GPU-switch link (as topologies/hgx_node does).
models::network::Fabric one_host(const models::gpu::GpuSpec& gpu, int n) {
  using namespace models::network;
  Fabric f;
  std::vector<NodeId> gpus;
  for (int g = 0; g < n; ++g) {
    gpus.push_back(f.add_node({NodeKind::gpu, "gpu" + std::to_string(g), 0, g}));
  }
  const NodeId sw = f.add_node({NodeKind::nvswitch, "nvswitch", 0});
  for (NodeId g : gpus) {
    f.add_cable(g, sw, gpu.nvlink_bandwidth, sim::Duration::from_ps(gpu.nvlink_latency.ps() / 2),
                LinkKind::nvlink);
  }
  return f;
}

// The fitted fields as a vector in log space: the link share of each op
// family (all-reduce, all-gather, reduce-scatter, broadcast and reduce,
// all-to-all and send/recv), then per protocol the base latency (us), the
// step overhead (us), the slice (bytes) and the ceiling (GB/s).
constexpr double kMinUs = 1e-3, kMinBytes = 64.0;
constexpr std::array<std::array<CollectiveOp, 2>, 5> kOpFamilies{{
    {CollectiveOp::all_reduce, CollectiveOp::all_reduce},
    {CollectiveOp::all_gather, CollectiveOp::all_gather},
    {CollectiveOp::reduce_scatter, CollectiveOp::reduce_scatter},
    {CollectiveOp::broadcast, CollectiveOp::reduce},
    {CollectiveOp::all_to_all, CollectiveOp::send_recv},
}};
constexpr int kFields = 5 + 3 * 4;

std::vector<double> to_vector(const CollectiveParams& p) {
  std::vector<double> v;
  for (const auto& fam : kOpFamilies) v.push_back(std::log(p.efficiency_of(fam[0])));
  for (Protocol pr : models::collectives::kAllProtocols) {
    const auto& l = p.latency_of(Algorithm::ring, pr);
    const auto& pp = p.protocol_of(pr);
    v.push_back(std::log(std::max(kMinUs, l.base.microseconds())));
    v.push_back(std::log(std::max(kMinUs, l.step_scale_up.microseconds())));
    v.push_back(std::log(std::max(kMinBytes, pp.slice.as_double())));
    const sim::Bandwidth cap = pr == Protocol::ll ? pp.max_per_gpu : pp.max_per_channel;
    v.push_back(std::log(cap.gb_per_s() > 0 ? cap.gb_per_s() : 1000.0));
  }
  return v;
}

CollectiveParams from_vector(const std::vector<double>& v, CollectiveParams p) {
  size_t i = 0;
  for (const auto& fam : kOpFamilies) {
    const double e = std::min(1.0 / p.scale_up_efficiency, std::exp(v[i++]));
    for (CollectiveOp op : fam) p.efficiency_of(op) = e;
  }
  for (Protocol pr : models::collectives::kAllProtocols) {
    const sim::Duration base = sim::us(std::exp(v[i]));
    const sim::Duration step = sim::us(std::exp(v[i + 1]));
    for (Algorithm a : {Algorithm::ring, Algorithm::direct, Algorithm::pairwise,
                        Algorithm::hierarchical}) {
      p.latency_of(a, pr).base = base;
      p.latency_of(a, pr).step_scale_up = step;
    }
    auto& pp = p.protocol_of(pr);
    pp.slice = sim::Bytes(std::llround(std::exp(v[i + 2])));
    const sim::Bandwidth cap = sim::Bandwidth::gb_per_s(std::exp(v[i + 3]));
    (pr == Protocol::ll ? pp.max_per_gpu : pp.max_per_channel) = cap;
    i += 4;
  }
  return p;
}

// A weak pull of the latencies toward NCCL's defaults: with two GPUs an
// all-reduce has two steps and the rest one, so base latency and step
// overhead are told apart only by ops that ran other protocols; the prior
// settles the split where the data cannot (log-space weight 0.01).
double prior(const std::vector<double>& v, const std::vector<double>& v0) {
  double s = 0.0;
  for (size_t k = 0; k < 3; ++k) {
    for (size_t j = 0; j < 2; ++j) {
      const size_t i = 5 + 4 * k + j;
      s += (v[i] - v0[i]) * (v[i] - v0[i]);
    }
  }
  return 0.01 * s;
}

// Minimizes f over R^n from x0 (Nelder & Mead 1965; standard coefficients).
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int iterations,
                                int& evaluations) {
  const size_t n = x0.size();
  std::vector<std::vector<double>> s{x0};
  for (size_t i = 0; i < n; ++i) {
    auto x = x0;
    x[i] += step;
    s.push_back(x);
  }
  std::vector<double> fs;
  for (const auto& x : s) {
    fs.push_back(f(x));
    ++evaluations;
  }
  auto eval = [&](const std::vector<double>& x) {
    ++evaluations;
    return f(x);
  };
  for (int it = 0; it < iterations; ++it) {
    std::vector<size_t> order(n + 1);
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fs[a] < fs[b]; });
    std::vector<std::vector<double>> s2;
    std::vector<double> f2;
    for (size_t i : order) {
      s2.push_back(s[i]);
      f2.push_back(fs[i]);
    }
    s = std::move(s2);
    fs = std::move(f2);
    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) c[j] += s[i][j] / static_cast<double>(n);
    }
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t j = 0; j < n; ++j) x[j] = c[j] + t * (s[n][j] - c[j]);
      return x;
    };
    const auto xr = along(-1.0);
    const double fr = eval(xr);
    if (fr < fs[0]) {
      const auto xe = along(-2.0);
      const double fe = eval(xe);
      if (fe < fr) {
        s[n] = xe;
        fs[n] = fe;
      } else {
        s[n] = xr;
        fs[n] = fr;
      }
    } else if (fr < fs[n - 1]) {
      s[n] = xr;
      fs[n] = fr;
    } else {
      const auto xc = along(0.5);
      const double fc = eval(xc);
      if (fc < fs[n]) {
        s[n] = xc;
        fs[n] = fc;
      } else {
        for (size_t i = 1; i <= n; ++i) {
          for (size_t j = 0; j < n; ++j) s[i][j] = s[0][j] + 0.5 * (s[i][j] - s[0][j]);
          fs[i] = eval(s[i]);
        }
      }
    }
  }
  const size_t best = static_cast<size_t>(std::min_element(fs.begin(), fs.end()) - fs.begin());
  return s[best];
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<NcclMeasurement> load_nccl_sweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  const nlohmann::json d = nlohmann::json::parse(in);
  if (d.value("schema", "") != "gcsim.nccl_sweep.v1") {
    throw std::runtime_error(path + ": not a gcsim.nccl_sweep.v1 file");
  }
  // NCCL's recorded choice per (op, ranks, bytes).
  std::map<std::tuple<std::string, int, int64_t>, std::string> protocol_of;
  for (const auto& c : d["choices"]) {
    protocol_of[{c["op"].get<std::string>(), c["ranks"].get<int>(), c["bytes"].get<int64_t>()}] =
        c["protocol"].get<std::string>();
  }
  auto nccl_protocol = [&](const std::string& op, int n, int64_t bytes) {
    if (op == "all_to_all") return bytes / n <= 16384 ? Protocol::ll : Protocol::simple;
    // The recorded size at or below, else the smallest recorded.
    const std::string* best = nullptr;
    int64_t best_bytes = -1, smallest = -1;
    const std::string* smallest_p = nullptr;
    for (const auto& [k, p] : protocol_of) {
      if (std::get<0>(k) != op || std::get<1>(k) != n) continue;
      const int64_t b = std::get<2>(k);
      if (b <= bytes && b > best_bytes) {
        best_bytes = b;
        best = &p;
      }
      if (smallest < 0 || b < smallest) {
        smallest = b;
        smallest_p = &p;
      }
    }
    if (best == nullptr) best = smallest_p;
    if (best == nullptr) throw std::runtime_error(path + ": no recorded choice for " + op);
    return protocol_from(*best);
  };
  std::vector<NcclMeasurement> out;
  for (const auto& r : d["results"]) {
    NcclMeasurement m;
    const std::string op = r["op"].get<std::string>();
    m.op = *models::collectives::parse_op(op);
    m.ranks = r["ranks"].get<int>();
    m.bytes = r["bytes"].get<int64_t>();
    m.time_us = r["time_us"].get<double>();
    m.forced = r["protocol"].get<std::string>() != "default";
    m.algorithm = m.op == CollectiveOp::all_to_all ? Algorithm::direct : Algorithm::ring;
    m.protocol = m.forced ? protocol_from(r["protocol"].get<std::string>())
                          : nccl_protocol(op, m.ranks, m.bytes);
    m.source = path;
    out.push_back(m);
  }
  // Outliers: a time more than 1.25x that of some larger size of its
  // series, or more than 1.35x the geometric mean of its two neighbours
  // (time against size is convex in log-log: latency plus bytes over
  // bandwidth never rises faster than that).
  std::map<std::tuple<int, int, bool, int>, std::vector<size_t>> series;
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& m = out[i];
    series[{static_cast<int>(m.op), m.ranks, m.forced, m.forced ? static_cast<int>(m.protocol) : -1}]
        .push_back(i);
  }
  for (auto& [key, idx] : series) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return out[a].bytes < out[b].bytes; });
    for (size_t k = 0; k < idx.size(); ++k) {
      const double t = out[idx[k]].time_us;
      double later_min = 0.0;
      for (size_t j = k + 1; j < idx.size(); ++j) {
        later_min = later_min == 0.0 ? out[idx[j]].time_us : std::min(later_min, out[idx[j]].time_us);
      }
      const bool above_later = later_min > 0.0 && t > 1.25 * later_min;
      const bool spike = k > 0 && k + 1 < idx.size() &&
                         t > 1.35 * std::sqrt(out[idx[k - 1]].time_us * out[idx[k + 1]].time_us);
      out[idx[k]].outlier = above_later || spike;
    }
  }
  return out;
}

std::vector<NcclMeasurement> h200_channel_points() {
  // calibration/measurements/h200-x2/README.md, "All-reduce alone with
  // fewer CTAs (1 GiB)": 16 CTAs 3846 us, 8 CTAs 6691 us (NCCL 2.28.9, bf16,
  // Ring/Simple, 20-loop).
  std::vector<NcclMeasurement> v;
  for (auto [ctas, us] : {std::pair{16, 3846.0}, std::pair{8, 6691.0}}) {
    NcclMeasurement m;
    m.op = CollectiveOp::all_reduce;
    m.ranks = 2;
    m.bytes = int64_t{1} << 30;
    m.time_us = us;
    m.algorithm = Algorithm::ring;
    m.protocol = Protocol::simple;
    m.forced = true;
    m.max_channels = ctas;
    m.source = "calibration/measurements/h200-x2/README.md";
    v.push_back(m);
  }
  return v;
}

double predict_us(const CollectiveParams& params, const models::gpu::GpuSpec& gpu,
                  const NcclMeasurement& m, bool use_tuner, models::collectives::Plan* plan) {
  using namespace models::network;
  sim::Simulator sim(1);
  Fabric fabric = one_host(gpu, m.ranks);
  Routing routing(fabric, 1);
  // Max-min sharing: an all-to-all's flows share each GPU's link.
  FlowModel net(sim, fabric, routing, RoutingPolicy::ecmp);
  CollectiveParams p = params;
  if (m.max_channels > 0) p.channels = m.max_channels;
  models::collectives::CollectiveEngine engine(sim, net, fabric, p, 1);
  models::collectives::CollectiveRequest req;
  req.op = m.op;
  for (int r = 0; r < m.ranks; ++r) req.ranks.push_back(r);
  req.bytes = sim::Bytes(m.bytes);
  if (!use_tuner) {
    req.algorithm = m.algorithm;
    req.protocol = m.protocol;
  }
  sim::Time end;
  engine.run(req, [&](const models::collectives::Plan& pl) {
    end = sim.now();
    if (plan != nullptr) *plan = pl;
  });
  sim.run();
  return end.microseconds();
}

double rms_log_error(const CollectiveParams& params, const models::gpu::GpuSpec& gpu,
                     const std::vector<NcclMeasurement>& points) {
  double sum = 0.0;
  int n = 0;
  for (const auto& m : points) {
    if (m.outlier) continue;
    const double r = std::log(predict_us(params, gpu, m, false) / m.time_us);
    sum += r * r;
    ++n;
  }
  return n > 0 ? std::sqrt(sum / n) : 0.0;
}

CollectiveFit fit_collective_params(const std::vector<NcclMeasurement>& points,
                                    const models::gpu::GpuSpec& gpu,
                                    const CollectiveParams& start) {
  CollectiveFit fit;
  const std::vector<double> x0 = to_vector(start);
  auto loss = [&](const std::vector<double>& v) {
    const double e = rms_log_error(from_vector(v, start), gpu, points);
    return e * e + prior(v, x0);
  };
  std::vector<double> x = x0;
  if (x.size() != static_cast<size_t>(kFields)) throw std::logic_error("fit: field count");
  for (double step : {0.7, 0.3, 0.1}) x = nelder_mead(loss, x, step, 1500, fit.evaluations);
  fit.params = from_vector(x, start);
  fit.rms_log_error = rms_log_error(fit.params, gpu, points);
  for (const auto& m : points) fit.points += m.outlier ? 0 : 1;
  return fit;
}

std::string fitted_fields_cpp(const CollectiveParams& p) {
  std::ostringstream o;
  for (const auto& fam : kOpFamilies) {
    o << "  ops(CollectiveOp::" << models::collectives::op_name(fam[0]) << ", CollectiveOp::"
      << models::collectives::op_name(fam[1]) << ", " << fmt("%.6g", p.efficiency_of(fam[0]))
      << ");\n";
  }
  const char* names[3] = {"ll", "ll128", "simple"};
  for (Protocol pr : models::collectives::kAllProtocols) {
    const auto& l = p.latency_of(Algorithm::ring, pr);
    const auto& pp = p.protocol_of(pr);
    const char* nm = names[static_cast<int>(pr)];
    o << "  set(Protocol::" << nm << ", us(" << fmt("%.6g", l.base.microseconds()) << "), us("
      << fmt("%.6g", l.step_scale_up.microseconds()) << "), sim::Bytes("
      << pp.slice.count() << "), sim::Bandwidth::gb_per_s("
      << fmt("%.6g", (pr == Protocol::ll ? pp.max_per_gpu : pp.max_per_channel).gb_per_s())
      << "));\n";
  }
  return o.str();
}

std::string fit_report(const CollectiveParams& params, const models::gpu::GpuSpec& gpu,
                       const std::vector<NcclMeasurement>& measured,
                       const std::vector<int>& predict_only_ranks) {
  std::ostringstream o;
  o << "Parameters (" << params.source << "): NVLink payload share "
    << fmt("%.4f", params.scale_up_efficiency) << " of " << gpu.name << "'s "
    << fmt("%.0f", gpu.nvlink_bandwidth.gb_per_s()) << " GB/s per GPU each way; per op:";
  for (const auto& fam : kOpFamilies) {
    o << " " << models::collectives::op_name(fam[0]) << " " << fmt("%.3f", params.efficiency_of(fam[0]));
  }
  o << ".\n\n";
  o << "| protocol | base latency (us) | step overhead (us) | slice (KiB) | ceiling (GB/s) |\n"
       "|---|---:|---:|---:|---:|\n";
  for (Protocol pr : models::collectives::kAllProtocols) {
    const auto& l = params.latency_of(Algorithm::ring, pr);
    const auto& pp = params.protocol_of(pr);
    o << "| " << models::collectives::protocol_name(pr) << " | "
      << fmt("%.2f", l.base.microseconds()) << " | " << fmt("%.3f", l.step_scale_up.microseconds())
      << " | " << fmt("%.0f", pp.slice.as_double() / 1024) << " | "
      << fmt("%.1f", (pr == Protocol::ll ? pp.max_per_gpu : pp.max_per_channel).gb_per_s())
      << (pr == Protocol::ll ? " per GPU" : " per channel") << " |\n";
  }

  // Measured series by (op, forced protocol or NCCL's choice).
  std::map<std::tuple<int, bool, int>, std::map<int64_t, std::map<int, const NcclMeasurement*>>>
      table;
  std::vector<int> sizes_n;
  for (const auto& m : measured) {
    const auto key = std::make_tuple(static_cast<int>(m.op), m.forced,
                                     m.forced ? static_cast<int>(m.protocol) : -1);
    table[key][m.bytes][m.ranks] = &m;
    if (std::find(sizes_n.begin(), sizes_n.end(), m.ranks) == sizes_n.end()) {
      sizes_n.push_back(m.ranks);
    }
  }
  std::sort(sizes_n.begin(), sizes_n.end());
  // Error summary per (series, n): median and largest |predicted/measured - 1|.
  o << "\nbusbw in GB/s (nccl-tests); 'pred' runs NCCL's algorithm and protocol for that run, "
       "'tuner' gcsim's own choice; '*' marks a measured outlier (left out of fit and errors).\n";
  std::ostringstream summary;
  summary << "\n### Errors of predicted time\n\n(last column: sizes where gcsim's tuner "
             "picks NCCL's protocol)\n\n| series | GPUs | points | median abs | max abs | "
             "same protocol |\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [key, by_size] : table) {
    const auto op = static_cast<CollectiveOp>(std::get<0>(key));
    const std::string label = std::string(models::collectives::op_name(op)) +
                              (std::get<1>(key) ? std::string(" (forced Ring/") +
                                                      std::string(models::collectives::protocol_name(
                                                          static_cast<Protocol>(std::get<2>(key)))) +
                                                      ")"
                                                : std::string());
    o << "\n### " << label << "\n\n| size |";
    for (int n : sizes_n) o << " n=" << n << " measured | pred | tuner |";
    for (int n : predict_only_ranks) o << " n=" << n << " tuner |";
    o << "\n|---:|";
    for (size_t i = 0; i < sizes_n.size() * 3 + predict_only_ranks.size(); ++i) o << "---:|";
    o << "\n";
    std::map<int, std::vector<double>> errors;
    std::map<int, std::pair<int, int>> same_protocol;  // n -> (agree, compared)
    for (const auto& [bytes, by_n] : by_size) {
      o << "| " << bytes << " |";
      for (int n : sizes_n) {
        const auto it = by_n.find(n);
        if (it == by_n.end()) {
          o << " | | |";
          continue;
        }
        const NcclMeasurement& m = *it->second;
        const double factor = models::collectives::bus_bandwidth_factor(m.op, n);
        auto busbw = [&](double us) { return static_cast<double>(bytes) / (us * 1e-6) * 1e-9 * factor; };
        const double pred = predict_us(params, gpu, m, false);
        models::collectives::Plan plan;
        const double tuned = predict_us(params, gpu, m, true, &plan);
        o << " " << fmt("%.1f", busbw(m.time_us)) << (m.outlier ? "*" : "") << " | "
          << fmt("%.1f", busbw(pred)) << " | " << fmt("%.1f", busbw(tuned)) << " "
          << models::collectives::protocol_name(plan.protocol) << " |";
        if (!m.outlier) errors[n].push_back(std::abs(pred / m.time_us - 1.0));
        if (!m.forced) {
          auto& [agree, compared] = same_protocol[n];
          agree += plan.protocol == m.protocol ? 1 : 0;
          ++compared;
        }
      }
      for (int n : predict_only_ranks) {
        NcclMeasurement m = *by_n.begin()->second;
        m.ranks = n;
        models::collectives::Plan plan;
        const double tuned = predict_us(params, gpu, m, !m.forced, &plan);
        const double factor = models::collectives::bus_bandwidth_factor(m.op, n);
        o << " " << fmt("%.1f", static_cast<double>(bytes) / (tuned * 1e-6) * 1e-9 * factor) << " "
          << models::collectives::algorithm_name(plan.algorithm) << "/"
          << models::collectives::protocol_name(plan.protocol) << " |";
      }
      o << "\n";
    }
    for (auto& [n, e] : errors) {
      std::sort(e.begin(), e.end());
      const auto sp = same_protocol.find(n);
      summary << "| " << label << " | " << n << " | " << e.size() << " | "
              << fmt("%.1f%%", 100 * e[e.size() / 2]) << " | " << fmt("%.1f%%", 100 * e.back())
              << " | "
              << (sp == same_protocol.end()
                      ? std::string("-")
                      : std::to_string(sp->second.first) + "/" + std::to_string(sp->second.second))
              << " |\n";
    }
  }
  o << summary.str();
  return o.str();
}

}  // namespace gcsim::calibration
