#include "sim/report/moe_report.h"

#include <algorithm>
#include <array>
#include <map>
#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli {

using sim::config::Json;
using workloads::moe::MoeLayerInfo;
using workloads::moe::MoeRole;

namespace {

constexpr int kRoles = 10;
constexpr std::array<MoeRole, kRoles> kAllRoles{
    MoeRole::router,  MoeRole::permute, MoeRole::counts,  MoeRole::dispatch,  MoeRole::sort,
    MoeRole::experts, MoeRole::unsort,  MoeRole::combine, MoeRole::unpermute, MoeRole::host};

// One EP rank's share of a layer, in seconds.
struct RankTimes {
  std::array<double, kRoles> busy{};  // per role: kernels' time, collectives' transfer
  double wait = 0;                    // collectives waiting for their peers
  double first = -1, last = 0;        // the layer's span on this rank
};

struct LayerFigures {
  std::vector<RankTimes> ranks;  // EP order
  int hot = 0;                   // EP index of the hot rank
  double layer_s = 0;            // the layer's span, slowest rank
  double experts_mean_s = 0;     // expert compute, mean over ranks
  double slowest_expert_loss_s = 0;
  double hot_link_loss_s = 0;
  double comm_s = 0;             // dispatch + combine transfer at the hot rank
  double recv_ratio = 1;         // mean rows received from others / the most
};

LayerFigures figures(const RunFigures& f, const MoeLayerInfo& m) {
  const auto& g = *f.scenario->graph;
  LayerFigures x;
  x.ranks.resize(m.ranks.size());
  std::map<int, size_t> ep_index;
  for (size_t i = 0; i < m.ranks.size(); ++i) ep_index[m.ranks[i]] = i;
  // A layer after another (MoeLayerInfo::starts_after): its clock starts
  // when the earlier layer's last op ends on the GPU.
  for (const auto& r : f.records) {
    const auto after = m.starts_after.find(r.rank);
    if (after != m.starts_after.end() && after->second == r.op) {
      x.ranks[ep_index.at(r.rank)].first = r.end.seconds();
    }
  }
  for (const auto& r : f.records) {
    const auto ei = ep_index.find(r.rank);
    if (ei == ep_index.end()) continue;
    const auto& op = g.program(r.rank).ops[r.op];
    const auto role = m.roles.find(op.name);
    if (role == m.roles.end()) continue;
    RankTimes& t = x.ranks[ei->second];
    t.busy[static_cast<size_t>(role->second)] += (r.end - r.met).seconds();
    t.wait += (r.met - r.start).seconds();
    if (!m.starts_after.count(r.rank) && (t.first < 0 || r.start.seconds() < t.first)) {
      t.first = r.start.seconds();
    }
    t.last = std::max(t.last, r.end.seconds());
  }
  const auto& routing = *m.routing;
  x.hot = routing.hot_rank();
  double experts_sum = 0, experts_max = 0;
  for (const RankTimes& t : x.ranks) {
    x.layer_s = std::max(x.layer_s, t.last - std::max(0.0, t.first));
    const double e = t.busy[static_cast<size_t>(MoeRole::experts)];
    experts_sum += e;
    experts_max = std::max(experts_max, e);
  }
  x.experts_mean_s = experts_sum / static_cast<double>(x.ranks.size());
  // Every rank waits at the combine for the slowest experts: what the
  // slowest rank's expert compute takes beyond the mean is lost.
  x.slowest_expert_loss_s = experts_max - x.experts_mean_s;
  // The links: dispatch and combine move the hot receiver's rows at its
  // links' rate, where balanced routing would move the mean.
  const std::vector<int64_t> rows = routing.rank_matrix();
  const int n = routing.ranks();
  double most = 0, sum = 0;
  for (int d = 0; d < n; ++d) {
    double in = 0;
    for (int s = 0; s < n; ++s) in += s == d ? 0.0 : static_cast<double>(rows[static_cast<size_t>(s * n + d)]);
    most = std::max(most, in);
    sum += in;
  }
  x.recv_ratio = most > 0 ? sum / n / most : 1.0;
  const RankTimes& hot = x.ranks[static_cast<size_t>(x.hot)];
  x.comm_s = hot.busy[static_cast<size_t>(MoeRole::dispatch)] +
             hot.busy[static_cast<size_t>(MoeRole::combine)];
  x.hot_link_loss_s = x.comm_s * (1.0 - x.recv_ratio);
  return x;
}

// The host the layer ran with (cluster.host), µs per call.
Json host_json(const workloads::moe::EagerHostCost& h) {
  if (!h.modelled) return {{"profile", "none"}};
  return {{"profile", h.profile}, {"router_us", h.router_us}, {"permute_us", h.permute_us},
          {"launch_us", h.launch_us}, {"nccl_us", h.collective_us}, {"sync_us", h.sync_us},
          {"expert_us", h.expert_us}, {"loop_fwd_us", h.loop_fwd_us}, {"loop_bwd_us", h.loop_bwd_us},
          {"slowest_rank", h.slowest_rank}};
}

}  // namespace

Json moe_summary(const RunFigures& f) {
  Json out = Json::array();
  for (const MoeLayerInfo& m : f.scenario->moe_layers) {
    const LayerFigures x = figures(f, m);
    const auto& routing = *m.routing;
    Json ranks = Json::array();
    for (size_t i = 0; i < x.ranks.size(); ++i) {
      Json r = {{"rank", m.ranks[i]}, {"rows_received", routing.received(static_cast<int>(i))}};
      Json busy = Json::object();
      for (MoeRole role : kAllRoles) busy[workloads::moe::role_name(role)] = x.ranks[i].busy[static_cast<size_t>(role)];
      r["busy_s"] = busy;
      r["wait_s"] = x.ranks[i].wait;
      ranks.push_back(std::move(r));
    }
    out.push_back({{"name", m.name},
                   {"ranks", m.ranks},
                   {"hot_rank", m.ranks[static_cast<size_t>(x.hot)]},
                   {"rank_imbalance", routing.rank_imbalance()},
                   {"dropped_copies", routing.total_dropped()},
                   {"padding_rows", routing.total_padding()},
                   {"layer_time_s", x.layer_s},
                   {"host", host_json(m.spec.host)},
                   {"imbalance_cost",
                    {{"slowest_expert_s", x.slowest_expert_loss_s},
                     {"hot_receiver_links_s", x.hot_link_loss_s},
                     {"total_s", x.slowest_expert_loss_s + x.hot_link_loss_s}}},
                   {"per_rank", ranks}});
  }
  return out;
}

std::string moe_report_section(const RunFigures& f) {
  if (f.scenario->moe_layers.empty()) return "";
  std::ostringstream o;
  o << "\n## MoE layers\n";
  for (const MoeLayerInfo& m : f.scenario->moe_layers) {
    const LayerFigures x = figures(f, m);
    const auto& routing = *m.routing;
    const int hot_global = m.ranks[static_cast<size_t>(x.hot)];
    o << "\n### " << m.name << "\n\n";
    o << "EP over " << m.ranks.size() << " ranks, " << routing.experts() << " experts, top-"
      << routing.top_k() << ", " << routing.tokens() << " tokens per rank. Hot rank: **"
      << hot_global << "** (" << routing.received(x.hot) << " rows, "
      << fmt("%.2f", routing.rank_imbalance()) << "x the mean). Layer: "
      << human_time(x.layer_s) << ".";
    if (routing.total_dropped() > 0) o << " Dropped copies: " << routing.total_dropped() << ".";
    if (routing.total_padding() > 0) o << " Padding rows: " << routing.total_padding() << ".";
    o << "\n\nWhat the imbalance cost: " << human_time(x.slowest_expert_loss_s)
      << " to the slowest rank's experts (its expert compute beyond the mean, "
      << human_time(x.experts_mean_s) << "), " << human_time(x.hot_link_loss_s)
      << " to the hot receiver's links (dispatch + combine " << human_time(x.comm_s)
      << " x (1 - mean/hot rows received " << fmt("%.2f", x.recv_ratio)
      << ")): balanced routing would save about "
      << human_time(x.slowest_expert_loss_s + x.hot_link_loss_s) << ".\n\n";
    o << "| rank | rows in |";
    for (MoeRole role : kAllRoles) o << " " << workloads::moe::role_name(role) << " |";
    o << " waiting for peers |\n|---:|---:|";
    for (size_t i = 0; i < kAllRoles.size(); ++i) o << "---:|";
    o << "---:|\n";
    for (size_t i = 0; i < x.ranks.size(); ++i) {
      o << "| " << m.ranks[i] << (static_cast<int>(i) == x.hot ? " (hot)" : "") << " | "
        << routing.received(static_cast<int>(i)) << " |";
      for (MoeRole role : kAllRoles) o << " " << human_time(x.ranks[i].busy[static_cast<size_t>(role)]) << " |";
      o << " " << human_time(x.ranks[i].wait) << " |\n";
    }
  }
  return o.str();
}

}  // namespace gcsim::cli
