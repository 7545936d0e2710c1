#include "workloads/ir.h"

#include <map>
#include <stdexcept>

namespace gcsim::workloads {

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::all_to_all: return "all_to_all";
  }
  return "?";
}

uint32_t WorkloadGraph::intern_name(const std::string& name) {
  auto [it, inserted] = name_ids_.emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return it->second;
}

uint16_t WorkloadGraph::intern_stream(const std::string& stream) {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i] == stream) return static_cast<uint16_t>(i);
  }
  if (streams_.size() >= 0xFFFF) throw std::length_error("too many distinct stream names");
  streams_.push_back(stream);
  return static_cast<uint16_t>(streams_.size() - 1);
}

uint32_t WorkloadGraph::add_group(std::vector<int> ranks) {
  groups_.push_back(std::move(ranks));
  return static_cast<uint32_t>(groups_.size() - 1);
}

std::vector<int> WorkloadGraph::participants(int rank, const Op& op) const {
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) return group(c->group);
  if (const auto* p = std::get_if<P2pOp>(&op.payload)) {
    return op.kind == OpKind::send ? std::vector<int>{rank, p->peer}
                                   : std::vector<int>{p->peer, rank};
  }
  return {rank};
}

size_t WorkloadGraph::total_ops() const {
  size_t n = 0;
  for (const auto& p : programs_) n += p.ops.size();
  return n;
}

namespace {

// Iterative three-colour DFS over one rank's dependency edges.
bool has_cycle(const RankProgram& prog) {
  enum Colour : uint8_t { white, grey, black };
  std::vector<Colour> colour(prog.ops.size(), white);
  std::vector<std::pair<uint32_t, size_t>> stack;
  for (uint32_t start = 0; start < prog.ops.size(); ++start) {
    if (colour[start] != white) continue;
    stack.push_back({start, 0});
    colour[start] = grey;
    while (!stack.empty()) {
      auto& [op, next] = stack.back();
      const auto& deps = prog.ops[op].deps;
      if (next < deps.size()) {
        uint32_t d = deps[next++];
        if (colour[d] == grey) return true;
        if (colour[d] == white) {
          colour[d] = grey;
          stack.push_back({d, 0});
        }
      } else {
        colour[op] = black;
        stack.pop_back();
      }
    }
  }
  return false;
}

}  // namespace

std::string validate(const WorkloadGraph& graph) {
  const int n = graph.num_ranks();
  if (n <= 0) return "the workload has no ranks";
  std::map<uint64_t, std::pair<size_t, size_t>> rendezvous;  // key -> (ops seen, parties)
  for (int r = 0; r < n; ++r) {
    const RankProgram& prog = graph.program(r);
    for (const Op& op : prog.ops) {
      for (uint32_t d : op.deps) {
        if (d >= prog.ops.size()) {
          return "rank " + std::to_string(r) + " op '" + graph.name(op.name) +
                 "' depends on a missing op";
        }
      }
      if (op.kind == OpKind::collective || op.kind == OpKind::send || op.kind == OpKind::recv) {
        for (int p : graph.participants(r, op)) {
          if (p < 0 || p >= n) {
            return "op '" + graph.name(op.name) + "' names rank " + std::to_string(p) +
                   ", but the cluster has ranks 0.." + std::to_string(n - 1);
          }
        }
        auto& [seen, parties] = rendezvous[op.match];
        ++seen;
        parties = graph.participants(r, op).size();
      }
    }
    if (has_cycle(prog)) return "rank " + std::to_string(r) + " has a dependency cycle";
  }
  for (const auto& [key, counts] : rendezvous) {
    if (counts.first != counts.second) {
      return "a communication op has " + std::to_string(counts.first) + " of its " +
             std::to_string(counts.second) + " parties";
    }
  }
  return "";
}

}  // namespace gcsim::workloads
