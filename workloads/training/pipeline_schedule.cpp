#include "workloads/training/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace gcsim::workloads::training {

namespace {

Pass forward(int stage, int micro) { return {PassKind::forward, {stage, micro}, {}}; }
Pass backward(PassKind kind, int stage, int micro) { return {kind, {}, {stage, micro}}; }

// GPipe: every forward, then every backward.
std::vector<Pass> gpipe_rank(int r, int m) {
  std::vector<Pass> v;
  for (int j = 0; j < m; ++j) v.push_back(forward(r, j));
  for (int j = 0; j < m; ++j) v.push_back(backward(PassKind::backward, r, j));
  return v;
}

// 1F1B: pp-1-r warm-up forwards, then one forward and one backward in
// turn, then the remaining backwards.
std::vector<Pass> one_f_one_b_rank(int r, int pp, int m) {
  std::vector<Pass> v;
  const int warmup = std::min(pp - 1 - r, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) v.push_back(forward(r, f));
  for (; f < m; ++f, ++b) {
    v.push_back(forward(r, f));
    v.push_back(backward(PassKind::backward, r, b));
  }
  for (; b < m; ++b) v.push_back(backward(PassKind::backward, r, b));
  return v;
}

// ZB-H1 (Qi et al. 2024, section 2.1): 1F1B's warm-up; rank r then delays
// its first r weight passes, so that every rank holds pp micro-batches (the
// memory of 1F1B's first rank) and input gradients run back through the
// pipeline without waiting for weight gradients; the delayed weight passes
// fill the cool-down.
std::vector<Pass> zb_h1_rank(int r, int pp, int m) {
  std::vector<Pass> v;
  const int warmup = std::min(pp - 1 - r, m);
  int f = 0, b = 0, w = 0, delay = r;
  for (; f < warmup; ++f) v.push_back(forward(r, f));
  for (; f < m; ++f) {
    v.push_back(forward(r, f));
    v.push_back(backward(PassKind::backward_input, r, b++));
    if (delay > 0) {
      --delay;
    } else {
      v.push_back(backward(PassKind::weight, r, w++));
    }
  }
  while (b < m) {
    v.push_back(backward(PassKind::backward_input, r, b++));
    if (w < b) v.push_back(backward(PassKind::weight, r, w++));
  }
  while (w < m) v.push_back(backward(PassKind::weight, r, w++));
  return v;
}

// Megatron-LM's interleaved 1F1B: rank r holds model stages r, r+pp, ...;
// micro-batches go through the v chunks in groups of pp.
std::vector<Pass> interleaved_rank(int r, int pp, int v, int m) {
  const int total = m * v;
  auto micro = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
  auto chunk_f = [&](int k) { return (k / pp) % v; };
  auto chunk_b = [&](int k) { return v - 1 - (k / pp) % v; };
  int warmup = m == pp ? total : std::min((pp - r - 1) * 2 + (v - 1) * pp, total);
  std::vector<Pass> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(forward(chunk_f(f) * pp + r, micro(f)));
  for (; f < total; ++f, ++b) {
    out.push_back(forward(chunk_f(f) * pp + r, micro(f)));
    out.push_back(backward(PassKind::backward, chunk_b(b) * pp + r, micro(b)));
  }
  for (; b < total; ++b) {
    out.push_back(backward(PassKind::backward, chunk_b(b) * pp + r, micro(b)));
  }
  return out;
}

// DualPipe, as DeepSeek's reference implementation orders it in eight
// steps. Phase 0 of a rank in the first half is the forward direction (its
// stage r, micro-batches 0..m/2-1); ranks of the second half swap phases.
class DualPipeRank {
 public:
  DualPipeRank(int r, int pp, int m) : r_(r), pp_(pp), half_m_(m / 2) {}

  std::vector<Pass> build() {
    const int half = pp_ / 2, hr = std::min(r_, pp_ - 1 - r_);
    const bool middle = r_ == half - 1 || r_ == half;
    for (int i = 0; i < (half - hr - 1) * 2; ++i) f(0);          // 1: nF0
    for (int i = 0; i < hr + 1; ++i) {                           // 2: nF0F1
      f(0);
      f(1);
    }
    for (int i = 0; i < half - hr - 1; ++i) {                    // 3: nB1W1F1
      b(1, true);
      w();
      f(1);
    }
    for (int i = 0; i < half_m_ - pp_ + hr + 1; ++i) {           // 4: nF0B1F1B0
      if (i == 0 && middle) {
        f(0);  // the middle ranks do not overlap this first pair
        b(1, false);
      } else {
        fb(0, 1);
      }
      fb(1, 0);
    }
    for (int i = 0; i < half - hr - 1; ++i) {                    // 5: nB1F1B0
      b(1, false);
      fb(1, 0);
    }
    const int steps6 = hr + 1;                                   // 6: nB1B0
    bool zb = false;
    for (int i = 0; i < steps6; ++i) {
      if (i == steps6 / 2 && hr % 2 == 1) zb = true;
      b(1, zb);
      if (i == steps6 / 2 && hr % 2 == 0) zb = true;
      b(0, zb);
    }
    for (int i = 0; i < half - hr - 1; ++i) {                    // 7: nWB0
      w();
      b(0, true);
    }
    for (int i = 0; i < hr + 1; ++i) w();                        // 8: nW
    return std::move(out_);
  }

 private:
  int direction(int phase) const { return phase ^ (r_ >= pp_ / 2 ? 1 : 0); }
  int stage(int dir) const { return dir == 0 ? r_ : pp_ - 1 - r_; }
  Work next(int dir, int* counter) const {
    return {stage(dir), dir == 0 ? counter[dir] : half_m_ + counter[dir]};
  }
  void f(int phase) {
    const int d = direction(phase);
    out_.push_back({PassKind::forward, next(d, nf_), {}});
    ++nf_[d];
  }
  void b(int phase, bool zero_bubble) {
    const int d = direction(phase);
    const Work work = next(d, nb_);
    ++nb_[d];
    if (zero_bubble) {
      out_.push_back({PassKind::backward_input, {}, work});
      pending_.push_back(work);
    } else {
      out_.push_back({PassKind::backward, {}, work});
    }
  }
  void w() {
    out_.push_back({PassKind::weight, {}, pending_.front()});
    pending_.pop_front();
  }
  void fb(int phase_f, int phase_b) {
    const int df = direction(phase_f), db = direction(phase_b);
    out_.push_back({PassKind::forward_backward, next(df, nf_), next(db, nb_)});
    ++nf_[df];
    ++nb_[db];
  }

  int r_, pp_, half_m_;
  int nf_[2] = {0, 0}, nb_[2] = {0, 0};
  std::deque<Work> pending_;
  std::vector<Pass> out_;
};

}  // namespace

std::vector<int> PipelinePlan::stages_of(int rank) const {
  std::vector<int> s;
  if (schedule == Schedule::dualpipe) {
    s = {rank, ranks - 1 - rank};
    if (s[0] > s[1]) std::swap(s[0], s[1]);
    return s;
  }
  for (int k = rank; k < model_stages; k += ranks) s.push_back(k);
  return s;
}

PipelinePlan build_pipeline(Schedule schedule, int pp, int v, int m) {
  PipelinePlan plan;
  plan.schedule = schedule;
  plan.ranks = pp;
  plan.micro_batches = m;
  plan.model_stages = schedule == Schedule::interleaved ? pp * v : pp;
  for (int r = 0; r < pp; ++r) {
    switch (schedule) {
      case Schedule::gpipe: plan.passes.push_back(gpipe_rank(r, m)); break;
      case Schedule::one_f_one_b: plan.passes.push_back(one_f_one_b_rank(r, pp, m)); break;
      case Schedule::zb1p: plan.passes.push_back(zb_h1_rank(r, pp, m)); break;
      case Schedule::interleaved: plan.passes.push_back(interleaved_rank(r, pp, v, m)); break;
      case Schedule::dualpipe: plan.passes.push_back(DualPipeRank(r, pp, m).build()); break;
    }
  }
  return plan;
}

double peak_activations(const PipelinePlan& plan, int rank, const std::vector<double>& bytes) {
  double held = 0, peak = 0;
  for (const Pass& p : plan.passes.at(static_cast<size_t>(rank))) {
    switch (p.kind) {
      case PassKind::forward: held += bytes.at(static_cast<size_t>(p.f.stage)); break;
      case PassKind::backward:
      case PassKind::weight: held -= bytes.at(static_cast<size_t>(p.b.stage)); break;
      case PassKind::backward_input: break;
      case PassKind::forward_backward:
        held += bytes.at(static_cast<size_t>(p.f.stage));
        peak = std::max(peak, held);
        held -= bytes.at(static_cast<size_t>(p.b.stage));
        break;
    }
    peak = std::max(peak, held);
  }
  return peak;
}

Evaluation evaluate(const PipelinePlan& plan, const PassCosts& c) {
  const int K = plan.model_stages, m = plan.micro_batches, n = plan.ranks;
  constexpr double kNotYet = -1.0;
  // Completion time of each (stage, micro) forward and input-gradient pass.
  std::vector<double> f_done(static_cast<size_t>(K * m), kNotYet), b_done = f_done;
  auto at = [m](const Work& w) { return static_cast<size_t>(w.stage * m + w.micro); };
  auto f_ready = [&](const Work& w) {
    return w.stage == 0 ? 0.0 : f_done[at({w.stage - 1, w.micro})];
  };
  auto b_ready = [&](const Work& w) {
    return w.stage == K - 1 ? f_done[at(w)] : b_done[at({w.stage + 1, w.micro})];
  };
  Evaluation e;
  e.busy.assign(static_cast<size_t>(n), 0.0);
  std::vector<double> t(static_cast<size_t>(n), 0.0);
  std::vector<size_t> pos(static_cast<size_t>(n), 0);
  const double fb_cost =
      c.forward_backward >= 0 ? c.forward_backward : c.forward + c.backward_input + c.weight;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      const auto& passes = plan.passes[static_cast<size_t>(r)];
      size_t& i = pos[static_cast<size_t>(r)];
      double& now = t[static_cast<size_t>(r)];
      for (; i < passes.size(); ++i) {
        const Pass& p = passes[i];
        double ready = 0, cost = 0;
        switch (p.kind) {
          case PassKind::forward: ready = f_ready(p.f); cost = c.forward; break;
          case PassKind::backward: ready = b_ready(p.b); cost = c.backward_input + c.weight; break;
          case PassKind::backward_input: ready = b_ready(p.b); cost = c.backward_input; break;
          case PassKind::weight: ready = 0; cost = c.weight; break;
          case PassKind::forward_backward: {
            const double rf = f_ready(p.f), rb = b_ready(p.b);
            ready = (rf < 0 || rb < 0) ? kNotYet : std::max(rf, rb);
            cost = fb_cost;
            break;
          }
        }
        if (ready < 0) break;
        now = std::max(now, ready) + cost;
        e.busy[static_cast<size_t>(r)] += cost;
        if (p.kind == PassKind::forward || p.kind == PassKind::forward_backward) f_done[at(p.f)] = now;
        if (p.kind == PassKind::backward || p.kind == PassKind::backward_input ||
            p.kind == PassKind::forward_backward) {
          b_done[at(p.b)] = now;
        }
        progress = true;
      }
    }
  }
  for (int r = 0; r < n; ++r) {
    if (pos[static_cast<size_t>(r)] != plan.passes[static_cast<size_t>(r)].size()) {
      throw std::logic_error("pipeline order deadlocks at rank " + std::to_string(r));
    }
  }
  e.makespan = *std::max_element(t.begin(), t.end());
  for (int r = 0; r < n; ++r) e.idle.push_back(e.makespan - e.busy[static_cast<size_t>(r)]);
  return e;
}

}  // namespace gcsim::workloads::training
