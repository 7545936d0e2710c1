#include "workloads/training/kernel_classes.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gcsim::workloads::training {

namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Whether `word` is one of the space-separated words of `name`.
bool has_word(const std::string& name, const std::string& word) {
  size_t at = 0;
  while ((at = name.find(word, at)) != std::string::npos) {
    const bool starts = at == 0 || name[at - 1] == ' ';
    const size_t end = at + word.size();
    if (starts && (end == name.size() || name[end] == ' ')) return true;
    at = end;
  }
  return false;
}

// Megatron's unfused core attention is GEMMs, a softmax and a dropout over
// the scores ("L3 qk", "L3 softmax bwd", "L3 attention dropout"): attention
// by name ("qkv" and the MoE's "router softmax" are not).
bool unfused_attention(const std::string& name) {
  return has_word(name, "qk") || has_word(name, "pv") || has(name, "attention") ||
         (has_word(name, "softmax") && !has(name, "router"));
}

}  // namespace

const char* kernel_class_name(KernelClass k) {
  switch (k) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::attention: return "attention";
    case KernelClass::elementwise: return "elementwise";
    case KernelClass::norm: return "norm";
    case KernelClass::optimizer: return "optimizer";
    case KernelClass::communication: return "communication";
  }
  return "?";
}

KernelClass kernel_class(const WorkloadGraph& g, const Op& op, OpCategory category) {
  if (is_communication(op.kind)) return KernelClass::communication;
  if (category == OpCategory::optimizer) return KernelClass::optimizer;
  const auto* compute = std::get_if<ComputeOp>(&op.payload);
  if (compute == nullptr) return KernelClass::elementwise;
  if (std::holds_alternative<models::gpu::AttentionShape>(compute->shape)) return KernelClass::attention;
  const std::string& name = g.name(op.name);
  if (unfused_attention(name)) return KernelClass::attention;
  if (std::holds_alternative<models::gpu::GemmShape>(compute->shape)) return KernelClass::gemm;
  const auto& m = std::get<models::gpu::MemoryOpShape>(compute->shape);
  if (m.kind == models::gpu::MemoryOpKind::layer_norm || m.kind == models::gpu::MemoryOpKind::rms_norm ||
      has(name, " norm")) {
    return KernelClass::norm;
  }
  return KernelClass::elementwise;
}

namespace {

// Adds rank `r`'s kernel times, each divided by `n`, to `out` (`recs`: the
// rank's records by op index).
void add_rank(const WorkloadGraph& g, const TrainingWorkload& w,
              const std::vector<const sim::OpRecord*>& recs, int r, double n,
              sim::Duration launch_latency, KernelClassTimes& out) {
  const uint32_t id = g.program_id(r);
  const auto& ops = g.program(r).ops;
  const auto& cats = w.categories[id];
  const std::vector<int64_t>* issue =
      id < w.host_issue_ps.size() && !w.host_issue_ps[id].empty() ? &w.host_issue_ps[id] : nullptr;
  std::vector<int64_t> stream_end(g.stream_count(), 0);  // end of the previous op per stream
  // Point-to-point spans (ps): the sends and receives a pipeline step
  // posts at one instant run as one NCCL kernel (PyTorch batches them in
  // one group: batch_isend_irecv), which the profiler counts once.
  std::vector<std::pair<int64_t, int64_t>> p2p;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const sim::OpRecord* rec = recs[i];
    if (rec == nullptr) continue;
    const int64_t prev_end = stream_end[op.stream];
    stream_end[op.stream] = rec->end.ps();
    if (op.kind != OpKind::compute && !is_communication(op.kind)) continue;
    const KernelClass k = kernel_class(g, op, cats[i]);
    const sim::Time from = is_communication(op.kind) ? rec->met : rec->start;
    out.seconds[static_cast<size_t>(k)] += (rec->end - from).seconds() / n;
    if (op.kind == OpKind::collective) {
      out.communication_issued_s += (rec->end - rec->start).seconds() / n;
    } else if (is_communication(op.kind)) {
      p2p.emplace_back(rec->start.ps(), rec->end.ps());
    }
    out.kernels += 1.0 / n;
    if (issue == nullptr || op.kind != OpKind::compute) continue;
    // Ready on the GPU when its stream predecessor and its deps ended;
    // held by the host from then until it was issued.
    int64_t ready = prev_end;
    for (uint32_t d : op.deps) {
      if (d < recs.size() && recs[d] != nullptr) ready = std::max(ready, recs[d]->end.ps());
    }
    const int64_t issued = std::min((*issue)[i], rec->start.ps() - launch_latency.ps());
    if (issued > ready) out.host_wait_s += static_cast<double>(issued - ready) * 1e-12 / n;
  }
  // One kernel per instant of issue: from then to the last of them ends.
  std::sort(p2p.begin(), p2p.end());
  for (size_t k = 0; k < p2p.size();) {
    const int64_t from = p2p[k].first;
    int64_t to = p2p[k].second;
    for (++k; k < p2p.size() && p2p[k].first == from; ++k) to = std::max(to, p2p[k].second);
    out.communication_issued_s += static_cast<double>(to - from) * 1e-12 / n;
  }
}

}  // namespace

KernelClassTimes kernel_class_times(const WorkloadGraph& g, const TrainingWorkload& w,
                                    const std::vector<sim::OpRecord>& records,
                                    const std::vector<int>& ranks, sim::Duration launch_latency,
                                    std::vector<KernelClassTimes>* per_rank) {
  KernelClassTimes out;
  if (per_rank != nullptr) per_rank->assign(ranks.size(), KernelClassTimes{});
  if (ranks.empty()) return out;
  // The records bucketed by rank once, for the mean and each rank.
  std::unordered_map<int, std::vector<const sim::OpRecord*>> by_rank;
  for (int r : ranks) by_rank[r].assign(g.program(r).ops.size(), nullptr);
  for (const auto& rec : records) {
    auto it = by_rank.find(rec.rank);
    if (it != by_rank.end() && rec.op < it->second.size()) it->second[rec.op] = &rec;
  }
  const double n = static_cast<double>(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& recs = by_rank[ranks[i]];
    add_rank(g, w, recs, ranks[i], n, launch_latency, out);
    if (per_rank != nullptr) add_rank(g, w, recs, ranks[i], 1.0, launch_latency, (*per_rank)[i]);
  }
  return out;
}

}  // namespace gcsim::workloads::training
