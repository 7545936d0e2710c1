#include "sim/engine/replayer.h"

#include <algorithm>

#include "sim/engine/op_issue.h"

namespace gcsim::sim {

using workloads::is_communication;
using workloads::Op;
using workloads::OpKind;
using Arrival = replay::Arrival<uint32_t>;

Replayer::Replayer(Simulator& sim, const workloads::WorkloadGraph& graph, OpExecutor& executor,
                   OpObserver& observer)
    : sim_(sim), graph_(graph), executor_(executor), observer_(observer) {
  const size_t streams = graph.stream_count();
  programs_.resize(graph.program_count());
  for (uint32_t p = 0; p < graph.program_count(); ++p) {
    const auto& ops = graph.program_by_id(p).ops;
    ProgramIndex& ix = programs_[p];
    ix.dep_count.resize(ops.size());
    ix.dependents.resize(ops.size());
    ix.stream_ops.resize(streams);
    for (uint32_t i = 0; i < ops.size(); ++i) {
      ix.dep_count[i] = static_cast<uint32_t>(ops[i].deps.size());
      for (uint32_t d : ops[i].deps) ix.dependents[d].push_back(i);
      ix.stream_ops[ops[i].stream].push_back(i);
    }
  }
  ranks_.resize(static_cast<size_t>(graph.num_ranks()));
  for (int r = 0; r < graph.num_ranks(); ++r) {
    RankState& st = ranks_[static_cast<size_t>(r)];
    st.index = &programs_[graph.program_id(r)];
    st.waiting_on = st.index->dep_count;
    st.stream_head.assign(streams, 0);
    st.stream_busy.assign(streams, 0);
    st.stream_met.assign(streams, 0);
    st.collective_seq.assign(graph.binding(r).comms.size(), 0);
    st.send_seq.assign(graph.binding(r).peers.size(), 0);
    st.recv_seq.assign(graph.binding(r).peers.size(), 0);
  }
}

void Replayer::start() {
  std::vector<uint16_t> streams(graph_.stream_count());
  for (int r = 0; r < graph_.num_ranks(); ++r) {
    for (size_t s = 0; s < streams.size(); ++s) streams[s] = static_cast<uint16_t>(s);
    try_issue_streams(r, streams);
  }
}

// The host issues a rank's ops in program order, so ops that become ready
// at one instant on different streams launch in that order (which kernel's
// CTAs, or which NCCL kernel's SM hold, comes first on the GPU).
void Replayer::try_issue_streams(int rank, std::vector<uint16_t>& streams) {
  const RankState& st = ranks_[static_cast<size_t>(rank)];
  auto head = [&st](uint16_t s) {
    const auto& queue = st.index->stream_ops[s];
    const size_t h = st.stream_head[s];
    return h < queue.size() ? queue[h] : UINT32_MAX;
  };
  std::sort(streams.begin(), streams.end(),
            [&head](uint16_t a, uint16_t b) { return head(a) != head(b) ? head(a) < head(b) : a < b; });
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (uint16_t s : streams) try_issue_stream(rank, s);
}

void Replayer::abort(ReplayOutcome::Ending why, std::string reason) {
  if (aborted_) return;
  aborted_ = true;
  abort_ending_ = why;
  abort_reason_ = std::move(reason);
  sim_.stop();
}

// Issues the op at the head of `stream` if the stream is idle and the op's
// dependencies are done. One op per stream at a time: CUDA stream order.
void Replayer::try_issue_stream(int rank, uint16_t stream) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  if (aborted_ || st.stream_busy[stream]) return;
  const auto& queue = st.index->stream_ops[stream];
  const size_t head = st.stream_head[stream];
  if (head >= queue.size()) return;
  const uint32_t op = queue[head];
  if (st.waiting_on[op] != 0) return;
  st.stream_busy[stream] = 1;
  issue(rank, op);
}

void Replayer::issue(int rank, uint32_t op_index) {
  const Op& op = graph_.program(rank).ops[op_index];
  if (is_communication(op.kind)) {
    const auto* p2p = std::get_if<workloads::P2pOp>(&op.payload);
    executor_.communication_issued(rank, op, p2p != nullptr ? graph_.peer_of(rank, *p2p) : -1);
    arrive(rank, op_index);
    return;
  }
  replay::issue_local(
      sim_, executor_, rank, op, op,
      [this, rank, op_index](Time start, Time end) { finish(rank, op_index, start, end); },
      [this, rank, &op](OpExecutor::MemoryResult result) {
        if (result == OpExecutor::MemoryResult::out_of_memory) {
          abort(ReplayOutcome::Ending::out_of_memory, "out of memory on rank " + std::to_string(rank) +
                " at op '" + graph_.name(op.name) + "'");
        } else {
          abort(ReplayOutcome::Ending::bad_memory_op, "rank " + std::to_string(rank) + " op '" +
                graph_.name(op.name) + "' frees more HBM than is allocated at that moment");
        }
      });
}

Replayer::RendezvousKey Replayer::key_for(int rank, const Op& op) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  if (const auto* c = std::get_if<workloads::CollectiveOp>(&op.payload)) {
    return {true, graph_.communicator_of(rank, *c), 0, st.collective_seq[c->comm]++};
  }
  const auto& p = std::get<workloads::P2pOp>(op.payload);
  const auto peer = static_cast<uint32_t>(graph_.peer_of(rank, p));
  const auto self = static_cast<uint32_t>(rank);
  if (op.kind == OpKind::send) return {false, self, peer, st.send_seq[p.peer]++};
  return {false, peer, self, st.recv_seq[p.peer]++};
}

void Replayer::arrive(int rank, uint32_t op_index) {
  const Op& op = graph_.program(rank).ops[op_index];
  const RendezvousKey key = key_for(rank, op);
  replay::Rendezvous<uint32_t>& rv = rendezvous_[key];
  if (rv.parties == 0) rv.parties = graph_.participant_count(rank, op);
  rv.arrived.push_back({rank, op_index, sim_.now()});
  if (rv.arrived.size() < rv.parties) return;

  // Everyone is here: the transfer runs once, then completes on every rank.
  std::vector<Arrival> parties = std::move(rv.arrived);
  rendezvous_.erase(key);
  for (const Arrival& a : parties) {
    ranks_[static_cast<size_t>(a.rank)].stream_met[graph_.program(a.rank).ops[a.op].stream] = 1;
    observer_.on_op_met(a.rank, a.op, sim_.now());
  }
  std::string why = replay::meet(
      executor_, std::move(parties),
      [this](const Arrival& a) -> const Op& { return graph_.program(a.rank).ops[a.op]; },
      [this](const Arrival& a) {
        return "rank " + std::to_string(a.rank) + " '" +
               graph_.name(graph_.program(a.rank).ops[a.op].name) + "'";
      },
      [this](const Arrival& a, Time end) { finish(a.rank, a.op, a.when, end); });
  if (!why.empty()) abort(ReplayOutcome::Ending::mismatched_communication, why);
}

void Replayer::finish(int rank, uint32_t op_index, Time start, Time end) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  const Op& op = graph_.program(rank).ops[op_index];
  observer_.on_op_done(rank, op_index, start, end);
  ++ops_done_;
  makespan_ = std::max(makespan_, end);
  st.stream_busy[op.stream] = 0;
  st.stream_met[op.stream] = 0;
  ++st.stream_head[op.stream];
  for (uint32_t d : st.index->dependents[op_index]) --st.waiting_on[d];
  std::vector<uint16_t> streams{op.stream};
  for (uint32_t d : st.index->dependents[op_index]) {
    streams.push_back(graph_.program(rank).ops[d].stream);
  }
  try_issue_streams(rank, streams);
}

ReplayOutcome Replayer::outcome() const {
  ReplayOutcome out;
  out.ops_done = ops_done_;
  out.makespan = makespan_;
  out.complete = !aborted_ && ops_done_ == graph_.total_ops();
  out.ending = out.complete ? ReplayOutcome::Ending::complete : ReplayOutcome::Ending::deadlock;
  if (aborted_) {
    out.ending = abort_ending_;
    out.stuck = abort_reason_;
    return out;
  }
  if (out.complete) return out;
  // Name the first op that never ran on each stuck rank (at most 4 ranks).
  int listed = 0;
  for (int r = 0; r < graph_.num_ranks() && listed < 4; ++r) {
    const RankState& st = ranks_[static_cast<size_t>(r)];
    const auto& stream_ops = st.index->stream_ops;
    for (size_t s = 0; s < stream_ops.size(); ++s) {
      if (st.stream_head[s] >= stream_ops[s].size()) continue;
      const uint32_t op = stream_ops[s][st.stream_head[s]];
      const Op& o = graph_.program(r).ops[op];
      if (!out.stuck.empty()) out.stuck += "; ";
      out.stuck += "rank " + std::to_string(r) + " stream '" + graph_.stream(o.stream) +
                   "' stuck at '" + graph_.name(o.name) + "'" +
                   (!st.stream_busy[s] || !is_communication(o.kind)
                        ? " (waiting on unfinished dependencies)"
                        : st.stream_met[s]
                              ? " (met its peers; its data never arrived)"
                              : " (waiting for its peers to reach the same op)");
      ++listed;
      break;
    }
  }
  return out;
}

}  // namespace gcsim::sim
