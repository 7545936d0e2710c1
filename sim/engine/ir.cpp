#include "sim/engine/ir.h"

#include <algorithm>
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

models::collectives::CollectiveOp collective_op(CollectiveKind k) {
  using models::collectives::CollectiveOp;
  switch (k) {
    case CollectiveKind::all_reduce: return CollectiveOp::all_reduce;
    case CollectiveKind::all_gather: return CollectiveOp::all_gather;
    case CollectiveKind::reduce_scatter: return CollectiveOp::reduce_scatter;
    case CollectiveKind::broadcast: return CollectiveOp::broadcast;
    case CollectiveKind::reduce: return CollectiveOp::reduce;
    case CollectiveKind::all_to_all: return CollectiveOp::all_to_all;
  }
  return CollectiveOp::all_reduce;
}

WorkloadGraph::WorkloadGraph(int num_ranks)
    : programs_(static_cast<size_t>(std::max(num_ranks, 0))),
      bindings_(static_cast<size_t>(std::max(num_ranks, 0))) {
  program_of_rank_.resize(programs_.size());
  for (size_t r = 0; r < programs_.size(); ++r) program_of_rank_[r] = static_cast<uint32_t>(r);
}

uint32_t WorkloadGraph::add_program(RankProgram program) {
  programs_.push_back(std::move(program));
  return static_cast<uint32_t>(programs_.size() - 1);
}

void WorkloadGraph::assign(int rank, uint32_t program_id, RankBinding binding) {
  if (program_id >= programs_.size()) throw std::out_of_range("no such program");
  program_of_rank_.at(static_cast<size_t>(rank)) = program_id;
  bindings_.at(static_cast<size_t>(rank)) = std::move(binding);
}

uint32_t WorkloadGraph::add_communicator(std::vector<int> ranks) {
  auto [it, inserted] =
      communicator_ids_.emplace(ranks, static_cast<uint32_t>(communicators_.size()));
  if (inserted) communicators_.push_back(std::move(ranks));
  return it->second;
}

namespace {
template <typename T>
uint16_t slot_of(std::vector<T>& table, T value) {
  auto it = std::find(table.begin(), table.end(), value);
  if (it != table.end()) return static_cast<uint16_t>(it - table.begin());
  if (table.size() >= 0xFFFF) throw std::length_error("too many slots in one rank's binding");
  table.push_back(value);
  return static_cast<uint16_t>(table.size() - 1);
}
}  // namespace

uint16_t WorkloadGraph::comm_slot(int rank, uint32_t communicator) {
  return slot_of(bindings_.at(static_cast<size_t>(rank)).comms, communicator);
}

uint16_t WorkloadGraph::peer_slot(int rank, int peer) {
  return slot_of(bindings_.at(static_cast<size_t>(rank)).peers, peer);
}

uint32_t WorkloadGraph::communicator_of(int rank, const CollectiveOp& c) const {
  return binding(rank).comms.at(c.comm);
}

int WorkloadGraph::peer_of(int rank, const P2pOp& p) const { return binding(rank).peers.at(p.peer); }

std::vector<int> WorkloadGraph::participants(int rank, const Op& op) const {
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
    return communicator(communicator_of(rank, *c));
  }
  if (const auto* p = std::get_if<P2pOp>(&op.payload)) {
    const int peer = peer_of(rank, *p);
    return op.kind == OpKind::send ? std::vector<int>{rank, peer} : std::vector<int>{peer, rank};
  }
  return {rank};
}

size_t WorkloadGraph::participant_count(int rank, const Op& op) const {
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
    return communicator(communicator_of(rank, *c)).size();
  }
  return std::holds_alternative<P2pOp>(op.payload) ? 2 : 1;
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

size_t WorkloadGraph::total_ops() const {
  size_t n = 0;
  for (uint32_t p : program_of_rank_) n += programs_[p].ops.size();
  return n;
}

namespace {

// Iterative three-colour DFS over one program's dependency edges.
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

// What one program asks of its bindings, computed once per program.
struct ProgramNeeds {
  std::vector<uint32_t> collectives_per_comm_slot;
  std::vector<uint32_t> sends_per_peer_slot, recvs_per_peer_slot;
  std::string problem;
};

ProgramNeeds analyse(const WorkloadGraph& g, const RankProgram& prog) {
  ProgramNeeds n;
  auto bump = [](std::vector<uint32_t>& v, size_t slot) {
    if (v.size() <= slot) v.resize(slot + 1, 0);
    ++v[slot];
  };
  for (const Op& op : prog.ops) {
    for (uint32_t d : op.deps) {
      if (d >= prog.ops.size()) {
        n.problem = "op '" + g.name(op.name) + "' depends on a missing op";
        return n;
      }
    }
    if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) bump(n.collectives_per_comm_slot, c->comm);
    if (const auto* p = std::get_if<P2pOp>(&op.payload)) {
      bump(op.kind == OpKind::send ? n.sends_per_peer_slot : n.recvs_per_peer_slot, p->peer);
    }
  }
  if (has_cycle(prog)) n.problem = "a program has a dependency cycle";
  return n;
}

}  // namespace

std::string validate(const WorkloadGraph& g) {
  const int n = g.num_ranks();
  if (n <= 0) return "the workload has no ranks";
  // Programs are analysed once however many ranks share them.
  std::vector<ProgramNeeds> needs(g.program_count());
  for (uint32_t p = 0; p < g.program_count(); ++p) needs[p] = analyse(g, g.program_by_id(p));
  // Collectives per (communicator, member) and p2p per (src, dst).
  std::vector<std::map<int, uint32_t>> issued(g.communicator_count());
  std::map<std::pair<int, int>, int64_t> unmatched;  // sends − receives
  for (int r = 0; r < n; ++r) {
    const ProgramNeeds* pn = &needs[g.program_id(r)];
    if (!pn->problem.empty()) return "rank " + std::to_string(r) + ": " + pn->problem;
    const RankBinding& b = g.binding(r);
    if (pn->collectives_per_comm_slot.size() > b.comms.size() ||
        std::max(pn->sends_per_peer_slot.size(), pn->recvs_per_peer_slot.size()) > b.peers.size()) {
      return "rank " + std::to_string(r) + " uses a communicator or peer slot its binding lacks";
    }
    for (size_t s = 0; s < pn->collectives_per_comm_slot.size(); ++s) {
      if (pn->collectives_per_comm_slot[s] == 0) continue;  // a slot the program never uses
      const uint32_t comm = b.comms[s];
      if (comm >= g.communicator_count()) return "rank " + std::to_string(r) + " names a missing communicator";
      const auto& members = g.communicator(comm);
      if (std::find(members.begin(), members.end(), r) == members.end()) {
        return "rank " + std::to_string(r) + " issues a collective on a communicator it is not in";
      }
      issued[comm][r] += pn->collectives_per_comm_slot[s];
    }
    for (size_t s = 0; s < b.peers.size(); ++s) {
      const int peer = b.peers[s];
      if (peer < 0 || peer >= n) {
        return "rank " + std::to_string(r) + " names rank " + std::to_string(peer) +
               ", but the cluster has ranks 0.." + std::to_string(n - 1);
      }
      if (s < pn->sends_per_peer_slot.size()) unmatched[{r, peer}] += pn->sends_per_peer_slot[s];
      if (s < pn->recvs_per_peer_slot.size()) unmatched[{peer, r}] -= pn->recvs_per_peer_slot[s];
    }
  }
  for (size_t c = 0; c < g.communicator_count(); ++c) {
    const auto& members = g.communicator(c);
    if (members.empty()) return "a communicator has no ranks";
    for (int m : members) {
      if (m < 0 || m >= n) {
        return "a communicator names rank " + std::to_string(m) + ", but the cluster has ranks 0.." +
               std::to_string(n - 1);
      }
    }
    if (issued[c].empty()) continue;
    const uint32_t first = issued[c].count(members.front()) ? issued[c].at(members.front()) : 0;
    for (int m : members) {
      const uint32_t k = issued[c].count(m) ? issued[c].at(m) : 0;
      if (k != first) {
        return "rank " + std::to_string(m) + " issues " + std::to_string(k) +
               " collectives on a communicator where rank " + std::to_string(members.front()) +
               " issues " + std::to_string(first);
      }
    }
  }
  for (const auto& [pair, balance] : unmatched) {
    if (balance != 0) {
      return "rank " + std::to_string(pair.first) + " sends " +
             (balance > 0 ? "more" : "fewer") + " messages to rank " +
             std::to_string(pair.second) + " than that rank receives";
    }
  }
  return "";
}

}  // namespace gcsim::workloads
