#include "workloads/plan/strategy.h"

namespace gcsim::workloads::plan {

namespace wt = workloads::training;

wt::TrainingConfig apply(const wt::TrainingConfig& base, const Strategy& s) {
  wt::TrainingConfig c = base;
  c.parallel.tp = s.tp;
  c.parallel.cp = s.cp;
  c.parallel.pp = s.pp;
  c.parallel.dp = s.dp;
  c.parallel.ep = s.ep;
  c.parallel.virtual_stages = s.virtual_stages;
  c.parallel.schedule = s.schedule;
  c.parallel.sequence_parallel = s.sequence_parallel;
  c.batch.micro = s.micro;
  c.recompute = s.recompute;
  c.optimizer.zero_stage = s.zero_stage;
  return c;
}

Strategy strategy_of(const wt::TrainingConfig& c) {
  Strategy s;
  s.tp = c.parallel.tp;
  s.cp = c.parallel.cp;
  s.pp = c.parallel.pp;
  s.dp = c.parallel.dp;
  s.ep = c.parallel.ep;
  s.virtual_stages = c.parallel.virtual_stages;
  s.schedule = c.parallel.schedule;
  s.sequence_parallel = c.parallel.sequence_parallel;
  s.micro = c.batch.micro;
  s.recompute = c.recompute;
  s.zero_stage = c.optimizer.zero_stage;
  return s;
}

std::string label(const Strategy& s) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  std::string l = "TP" + n(s.tp) + (s.sequence_parallel ? " SP" : "");
  if (s.cp > 1) l += ", CP" + n(s.cp);
  l += ", PP" + n(s.pp);
  if (s.pp > 1) {
    l += std::string(" ") + wt::schedule_name(s.schedule);
    if (s.schedule == wt::Schedule::interleaved) l += " v" + n(s.virtual_stages);
  }
  l += ", DP" + n(s.dp);
  if (s.ep > 1) l += ", EP" + n(s.ep);
  l += ", mb " + n(s.micro) + ", recompute " + wt::recompute_name(s.recompute) + ", ZeRO-" +
       n(s.zero_stage);
  return l;
}

}  // namespace gcsim::workloads::plan
