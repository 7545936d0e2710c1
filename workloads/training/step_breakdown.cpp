#include "workloads/training/step_breakdown.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace gcsim::workloads::training {

namespace {

struct Span {
  int64_t start = 0, end = 0;
  int64_t met = 0;  // a collective: when its peers were all there (OpRecord::met)
  bool ran = false;
};

// One observed rank's timeline and how it charges its gaps.
class RankCharges {
 public:
  RankCharges(const WorkloadGraph& g, const TrainingWorkload& w, int rank,
              const std::vector<Span>& spans, const std::vector<int64_t>& transfer_start,
              int64_t latency, StepBreakdown& out)
      : w_(w),
        g_(g),
        rank_(rank),
        ops_(g_.program(rank).ops),
        cats_(w.categories[g_.program_id(rank)]),
        spans_(spans),
        t0_(transfer_start),
        latency_(latency),
        out_(out) {
    // The op before each op on its stream, for "what held it up".
    std::vector<uint32_t> last(g_.stream_count(), kNoOp);
    pred_.assign(ops_.size(), kNoOp);
    for (uint32_t i = 0; i < ops_.size(); ++i) {
      pred_[i] = last[ops_[i].stream];
      last[ops_[i].stream] = i;
    }
  }

  void run(int64_t step_end) {
    struct Interval {
      int64_t begin, end;
      uint32_t op;
    };
    std::vector<Interval> kernels;
    for (uint32_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].kind != OpKind::compute || !spans_[i].ran) continue;
      kernels.push_back({std::max<int64_t>(0, spans_[i].start - latency_), spans_[i].end, i});
    }
    std::sort(kernels.begin(), kernels.end(),
              [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
    int64_t covered = 0;   // end of the kernels seen so far
    int64_t busy_all = 0;  // union of every kernel
    for (const Interval& k : kernels) {
      if (k.begin > covered) {
        charge_gap(covered, k.begin, k.op, 0);
        busy_all += k.end - k.begin;
        covered = k.end;
      } else if (k.end > covered) {
        busy_all += k.end - covered;
        covered = k.end;
      }
    }
    // Optimizer kernels run alone at the end of the step; the rest is compute.
    int64_t optimizer = 0, opt_end = 0;
    for (const Interval& k : kernels) {
      if (cats_[k.op] != OpCategory::optimizer) continue;
      const int64_t b = std::max(k.begin, opt_end);
      if (k.end > b) optimizer += k.end - b;
      opt_end = std::max(opt_end, k.end);
    }
    add(OpCategory::optimizer, optimizer);
    add(OpCategory::compute, busy_all - optimizer);
    if (covered < step_end) charge_tail(covered, step_end);
  }

 private:
  void add(OpCategory c, int64_t ps) {
    if (ps > 0) out_.seconds[static_cast<size_t>(c)] += static_cast<double>(ps) * 1e-12;
  }
  void bubble(int64_t ps) { add(OpCategory::memory, ps); }
  bool is_comm(uint32_t i) const { return is_communication(ops_[i].kind); }
  int64_t comm_start(uint32_t i) const {
    return is_comm(i) && ops_[i].kind != OpKind::collective ? t0_[i] : spans_[i].start;
  }

  // The gap [a, b) before op x began (x issued at b).
  void charge_gap(int64_t a, int64_t b, uint32_t x, int depth) {
    if (b <= a) return;
    if (depth > 16) {
      bubble(b - a);
      return;
    }
    uint32_t best = kNoOp;
    int64_t best_end = INT64_MIN;
    auto consider = [&](uint32_t d) {
      if (d == kNoOp || !spans_[d].ran || spans_[d].end > b) return;
      if (spans_[d].end > best_end) {
        best_end = spans_[d].end;
        best = d;
      }
    };
    for (uint32_t d : ops_[x].deps) consider(d);
    consider(pred_[x]);
    if (best == kNoOp || best_end <= a) {
      // Nothing it waited for ended in the gap: it waited for SMs.
      add(OpCategory::compute, b - a);
      return;
    }
    const Op& d = ops_[best];
    // After the blocker ended, the kernel waited for SMs.
    add(OpCategory::compute, b - std::max(a, best_end));
    const int64_t end = std::max(a, std::min(b, best_end));
    if (d.kind == OpKind::memory || d.kind == OpKind::delay) {
      charge_gap(a, end, best, depth + 1);
      return;
    }
    if (d.kind == OpKind::compute) {
      add(OpCategory::compute, end - a);
      return;
    }
    const OpCategory c = cats_[best];
    const int64_t from = std::clamp(comm_start(best), a, end);
    if (c == OpCategory::optimizer) {
      // The optimizer's scalar all-reduce over the stages: before its peers
      // came, this stage waited for the others' last backward (the drain).
      const int64_t met = std::clamp(spans_[best].met, from, end);
      add(c, end - met);
      bubble(met - from);
      charge_gap(a, from, best, depth + 1);
      return;
    }
    add(c, end - from);
    if (c == OpCategory::pp) {
      bubble(from - a);  // waiting for the upstream stage to produce it
      return;
    }
    charge_gap(a, from, best, depth + 1);
  }

  // After the rank's last kernel: its own communication still running (in
  // the order tp, cp, ep, dp, pp), else the bubble.
  void charge_tail(int64_t a, int64_t b) {
    std::vector<std::pair<int64_t, int64_t>> charged;
    auto uncovered = [&](int64_t s, int64_t e) {
      // Length of [s, e) not yet in `charged` (kept disjoint and sorted).
      int64_t len = 0, cur = s;
      for (const auto& [cs, ce] : charged) {
        if (ce <= cur) continue;
        if (cs >= e) break;
        if (cs > cur) len += cs - cur;
        cur = std::max(cur, ce);
        if (cur >= e) break;
      }
      if (cur < e) len += e - cur;
      return len;
    };
    auto cover = [&](int64_t s, int64_t e) {
      charged.push_back({s, e});
      std::sort(charged.begin(), charged.end());
      std::vector<std::pair<int64_t, int64_t>> merged;
      for (const auto& x : charged) {
        if (!merged.empty() && x.first <= merged.back().second) {
          merged.back().second = std::max(merged.back().second, x.second);
        } else {
          merged.push_back(x);
        }
      }
      charged = std::move(merged);
    };
    int64_t total = 0;
    for (OpCategory c : {OpCategory::tp, OpCategory::cp, OpCategory::ep, OpCategory::dp,
                         OpCategory::pp}) {
      for (uint32_t i = 0; i < ops_.size(); ++i) {
        if (!is_comm(i) || !spans_[i].ran || cats_[i] != c) continue;
        const int64_t s = std::max(a, comm_start(i)), e = std::min(b, spans_[i].end);
        if (e <= s) continue;
        const int64_t len = uncovered(s, e);
        add(c, len);
        total += len;
        cover(s, e);
      }
    }
    bubble(b - a - total);
  }

  const TrainingWorkload& w_;
  const WorkloadGraph& g_;
  int rank_;
  const std::vector<Op>& ops_;
  const std::vector<OpCategory>& cats_;
  const std::vector<Span>& spans_;
  const std::vector<int64_t>& t0_;
  int64_t latency_;
  StepBreakdown& out_;
  std::vector<uint32_t> pred_;
};

}  // namespace

BreakdownResult step_breakdown(const WorkloadGraph& g, const TrainingWorkload& w,
                               const std::vector<sim::OpRecord>& records,
                               const std::vector<int>& ranks, sim::Time step_end,
                               sim::Duration launch_latency) {
  BreakdownResult result;
  result.ranks = ranks;
  std::unordered_map<int, size_t> slot;
  std::vector<std::vector<Span>> spans(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    slot[ranks[i]] = i;
    spans[i].resize(g.program(ranks[i]).ops.size());
  }
  for (const auto& r : records) {
    auto it = slot.find(r.rank);
    if (it == slot.end()) continue;
    spans[it->second][r.op] = {r.start.ps(), r.end.ps(), r.met.ps(), true};
  }
  // A p2p transfer starts when both sides are there: pair the n-th send
  // of (src, dst) with the n-th receive, in the order they were issued.
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, uint32_t>>> sends, recvs;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    const auto& ops = g.program(r).ops;
    for (uint32_t k = 0; k < ops.size(); ++k) {
      if (!spans[i][k].ran) continue;
      if (const auto* p = std::get_if<P2pOp>(&ops[k].payload)) {
        const int peer = g.peer_of(r, *p);
        if (ops[k].kind == OpKind::send) sends[{r, peer}].push_back({spans[i][k].start, k});
        else recvs[{peer, r}].push_back({spans[i][k].start, k});
      }
    }
  }
  std::vector<std::vector<int64_t>> t0(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    t0[i].assign(spans[i].size(), 0);
    for (size_t k = 0; k < spans[i].size(); ++k) t0[i][k] = spans[i][k].start;
  }
  for (auto& [pair, list] : recvs) {
    auto it = sends.find(pair);
    if (it == sends.end()) continue;
    std::sort(list.begin(), list.end());
    std::sort(it->second.begin(), it->second.end());
    const size_t dst = slot.at(pair.second);
    for (size_t n = 0; n < list.size() && n < it->second.size(); ++n) {
      t0[dst][list[n].second] = std::max(list[n].first, it->second[n].first);
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    StepBreakdown b;
    b.step_s = step_end.seconds();
    RankCharges(g, w, ranks[i], spans[i], t0[i], launch_latency.ps(), b).run(step_end.ps());
    result.per_rank.push_back(b);
  }
  result.mean.step_s = step_end.seconds();
  for (const auto& b : result.per_rank) {
    for (size_t c = 0; c < kCategories; ++c) {
      result.mean.seconds[c] += b.seconds[c] / static_cast<double>(result.per_rank.size());
    }
  }
  return result;
}

}  // namespace gcsim::workloads::training
