#include "sim/engine/streaming_replayer.h"

#include <algorithm>
#include <stdexcept>

#include "sim/engine/op_issue.h"

namespace gcsim::sim {

using workloads::is_communication;
using workloads::Op;
using workloads::OpKind;
using Ending = StreamOutcome::Ending;

bool StreamingReplayer::IdIntervals::contains(uint64_t id) const {
  auto it = by_first_.upper_bound(id);
  if (it == by_first_.begin()) return false;
  --it;
  return id <= it->second;
}

void StreamingReplayer::IdIntervals::insert(uint64_t id) {
  auto next = by_first_.upper_bound(id);
  // Joins [a, id - 1] on the left and/or [id + 1, b] on the right.
  if (next != by_first_.begin()) {
    auto prev = std::prev(next);
    if (id <= prev->second) return;
    if (prev->second + 1 == id) {
      prev->second = id;
      if (next != by_first_.end() && next->first == id + 1) {
        prev->second = next->second;
        by_first_.erase(next);
      }
      return;
    }
  }
  if (next != by_first_.end() && next->first == id + 1) {
    const uint64_t last = next->second;
    by_first_.erase(next);
    by_first_.emplace(id, last);
    return;
  }
  by_first_.emplace(id, id);
}

StreamingReplayer::StreamingReplayer(Simulator& sim, OpSource& source, OpExecutor& executor,
                                     StreamObserver& observer, StreamingOptions options)
    : sim_(sim), source_(source), executor_(executor), observer_(observer), options_(options) {
  if (options_.window == 0) options_.window = 1;
  ranks_.resize(static_cast<size_t>(source.num_ranks()));
  for (auto& st : ranks_) st.limit = options_.window;
}

StreamingReplayer::Entry& StreamingReplayer::entry(int rank, uint64_t seq) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  return st.window[static_cast<size_t>(seq - st.base)];
}

void StreamingReplayer::abort(Ending why, std::string problem) {
  if (aborted_) return;
  aborted_ = true;
  abort_ending_ = why;
  abort_reason_ = std::move(problem);
  sim_.stop();
}

std::string StreamingReplayer::describe(int rank, uint64_t seq) {
  const SourcedOp& op = entry(rank, seq).src;
  std::string s = source_.origin(rank) + ": node " + std::to_string(op.id);
  if (!op.name.empty()) s += " ('" + op.name + "')";
  return s;
}

// Reads ops into `rank`'s window until it holds `limit` or the rank ends.
// The seqs read are left in fresh_ for the caller to try issuing.
void StreamingReplayer::refill(int rank) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  while (!aborted_ && !st.exhausted && st.window.size() < st.limit) {
    SourcedOp op;
    bool got = false;
    try {
      got = source_.next(rank, op);
    } catch (const std::exception& e) {
      abort(Ending::bad_input, e.what());
      return;
    }
    if (!got) {
      st.exhausted = true;
      if (!st.unread_waiters.empty()) {
        // The smallest missing id, for a deterministic message.
        auto it = std::min_element(st.unread_waiters.begin(), st.unread_waiters.end(),
                                   [](const auto& a, const auto& b) { return a.first < b.first; });
        abort(Ending::bad_input, describe(rank, it->second.front()) + " depends on node " +
                                     std::to_string(it->first) + ", which is not in the file");
      }
      return;
    }
    add(rank, std::move(op));
  }
}

void StreamingReplayer::add(int rank, SourcedOp op) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  const uint64_t seq = st.base + st.window.size();
  const uint64_t id = op.id;
  if (st.seq_of.count(id) || st.forgotten.contains(id)) {
    abort(Ending::bad_input, source_.origin(rank) + ": node " + std::to_string(id) +
                                 (op.name.empty() ? "" : " ('" + op.name + "')") +
                                 ": the id is used by an earlier node of the file");
    return;
  }
  const uint16_t stream = op.op.stream;
  if (st.queue.size() <= stream) {
    st.queue.resize(stream + size_t{1});
    st.busy.resize(stream + size_t{1}, 0);
    st.stream_free_since.resize(stream + size_t{1}, Time::zero());
  }
  st.window.push_back(Entry{std::move(op), 0, {}, Time::zero(), Time::zero(), false, false});
  Entry& e = st.window.back();
  st.seq_of.emplace(id, seq);
  for (uint64_t d : e.src.deps) {
    if (st.forgotten.contains(d)) {
      e.ready_bound = std::max(e.ready_bound, forgotten_finish_bound(st, d));
    } else if (auto it = st.seq_of.find(d); it != st.seq_of.end() && it->second != seq) {
      Entry& dep = entry(rank, it->second);
      if (dep.done) {
        e.ready_bound = std::max(e.ready_bound, dep.finished);
      } else {
        dep.dependents.push_back(seq);
        ++e.waiting;
      }
    } else {
      // Not read yet (or never there: found out at the end of the rank).
      st.unread_waiters[d].push_back(seq);
      ++e.waiting;
    }
  }
  if (auto it = st.unread_waiters.find(id); it != st.unread_waiters.end()) {
    e.dependents = std::move(it->second);
    st.unread_waiters.erase(it);
  }
  st.queue[stream].push_back(seq);
  fresh_.push_back(seq);
  ++ops_read_;
  ++held_;
  peak_held_ = std::max(peak_held_, held_);
  peak_rank_window_ = std::max(peak_rank_window_, st.window.size());
}

// Forgets finished ops at the front of the window.
void StreamingReplayer::evict(int rank) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  while (!st.window.empty() && st.window.front().done) {
    const Entry& e = st.window.front();
    st.forgotten.insert(e.src.id);
    if (e.finished != st.recent_time) {
      if (e.finished > st.recent_time) {
        st.older_finish = std::max(st.older_finish, st.recent_time);
        st.recent_ids.clear();
        st.recent_time = e.finished;
      } else {
        st.older_finish = std::max(st.older_finish, e.finished);
      }
    }
    if (e.finished == st.recent_time) st.recent_ids.push_back(e.src.id);
    st.seq_of.erase(e.src.id);
    st.window.pop_front();
    ++st.base;
    --held_;
  }
}

Time StreamingReplayer::forgotten_finish_bound(RankState& st, uint64_t id) const {
  const Time now = sim_.now();
  if (st.recent_time == now &&
      std::find(st.recent_ids.begin(), st.recent_ids.end(), id) != st.recent_ids.end()) {
    return now;
  }
  // Finished before now: at the latest when the last of those did.
  return st.recent_time < now ? std::max(st.older_finish, st.recent_time) : st.older_finish;
}

// Issues the next op of `stream` if the stream is idle and the op's
// dependencies are done. One op per stream at a time: CUDA stream order.
// The host issues a rank's ops in program order, so ops that become ready
// at one instant on different streams launch in that order (which kernel's
// CTAs, or which NCCL kernel's SM hold, comes first on the GPU).
void StreamingReplayer::try_issue_streams(int rank, std::vector<uint16_t>& streams) {
  const RankState& st = ranks_[static_cast<size_t>(rank)];
  auto head = [&st](uint16_t s) {
    return s < st.queue.size() && !st.queue[s].empty() ? st.queue[s].front() : UINT64_MAX;
  };
  std::sort(streams.begin(), streams.end(),
            [&head](uint16_t a, uint16_t b) { return head(a) != head(b) ? head(a) < head(b) : a < b; });
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (uint16_t s : streams) try_issue_stream(rank, s);
}

void StreamingReplayer::try_issue_stream(int rank, uint16_t stream) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  if (aborted_ || stream >= st.queue.size() || st.busy[stream] || st.queue[stream].empty()) return;
  const uint64_t seq = st.queue[stream].front();
  Entry& e = entry(rank, seq);
  if (e.waiting != 0) return;
  st.queue[stream].pop_front();
  st.busy[stream] = 1;
  e.issued = true;
  // A whole-graph replay issues an op when its last dep or its stream
  // predecessor finishes; later means the window held it back.
  const Time ready = std::max(e.ready_bound, st.stream_free_since[stream]);
  if (ready < sim_.now()) {
    ++late_ops_;
    max_lateness_ = std::max(max_lateness_, sim_.now() - ready);
  }
  issue(rank, seq);
}

void StreamingReplayer::issue(int rank, uint64_t seq) {
  Entry& e = entry(rank, seq);
  const Op& op = e.src.op;
  if (is_communication(op.kind)) {
    executor_.communication_issued(rank, op, op.kind == OpKind::collective ? -1 : e.src.peer);
    arrive(rank, seq);
    return;
  }
  // The window's copy would be freed and its address reused, and
  // executors may cache per op address: sources hand out kernels.
  if (op.kind == OpKind::compute && e.src.kernel == nullptr) {
    throw std::logic_error("an OpSource gave a compute op without its kernel");
  }
  replay::issue_local(
      sim_, executor_, rank, op, e.src.kernel ? *e.src.kernel : op,
      [this, rank, seq](Time start, Time end) { finish(rank, seq, start, end); },
      [this, rank, seq](OpExecutor::MemoryResult result) {
        if (result == OpExecutor::MemoryResult::out_of_memory) {
          abort(Ending::out_of_memory,
                "out of memory on rank " + std::to_string(rank) + " at " + describe(rank, seq));
        } else {
          abort(Ending::bad_memory_op,
                describe(rank, seq) + " frees more HBM than is allocated at that moment");
        }
      });
}

void StreamingReplayer::arrive(int rank, uint64_t seq) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  Entry& e = entry(rank, seq);
  const Arrival me{rank, seq, sim_.now()};
  if (e.src.op.kind == OpKind::collective) {
    const uint32_t comm = e.src.communicator;
    const std::pair<uint32_t, uint32_t> key{comm, st.collective_seq[comm]++};
    Rendezvous& rv = collectives_[key];
    if (rv.parties == 0) rv.parties = source_.communicator(comm).size();
    rv.arrived.push_back(me);
    if (rv.arrived.size() < rv.parties) return;
    std::vector<Arrival> parties = std::move(rv.arrived);
    collectives_.erase(key);
    meet(std::move(parties));
    return;
  }
  const bool send = e.src.op.kind == OpKind::send;
  const auto key = send ? std::tuple{rank, e.src.peer, e.src.tag} : std::tuple{e.src.peer, rank, e.src.tag};
  auto& others = send ? recvs_ : sends_;
  if (auto it = others.find(key); it != others.end()) {
    const Arrival other = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) others.erase(it);
    std::vector<Arrival> parties{other, me};
    std::sort(parties.begin(), parties.end());
    meet(std::move(parties));
    return;
  }
  (send ? sends_ : recvs_)[key].push_back(me);
}

// Every party is here: check they agree, run the transfer once, then finish
// it on every rank (in rank order, as the Replayer does).
void StreamingReplayer::meet(std::vector<Arrival> parties) {
  std::string why = replay::meet(
      executor_, std::move(parties),
      [this](const Arrival& a) -> const Op& { return entry(a.rank, a.op).src.op; },
      [this](const Arrival& a) { return describe(a.rank, a.op); },
      [this](const Arrival& a, Time end) { finish(a.rank, a.op, a.when, end); });
  if (!why.empty()) abort(Ending::mismatched_communication, why);
}

void StreamingReplayer::finish(int rank, uint64_t seq, Time start, Time end) {
  RankState& st = ranks_[static_cast<size_t>(rank)];
  Entry& e = entry(rank, seq);
  e.done = true;
  e.finished = end;
  observer_.on_op_done(rank, e.src, start, end);
  ++ops_done_;
  makespan_ = std::max(makespan_, end);
  const uint16_t stream = e.src.op.stream;
  st.busy[stream] = 0;
  st.stream_free_since[stream] = end;
  const std::vector<uint64_t> dependents = std::move(e.dependents);
  for (uint64_t d : dependents) {
    Entry& w = entry(rank, d);
    --w.waiting;
    w.ready_bound = std::max(w.ready_bound, end);
  }
  std::vector<uint16_t> streams{stream};
  for (uint64_t d : dependents) streams.push_back(entry(rank, d).src.op.stream);
  try_issue_streams(rank, streams);
  evict(rank);
  fresh_.clear();
  refill(rank);
  const std::vector<uint64_t> fresh = std::move(fresh_);
  fresh_.clear();
  streams.clear();
  for (uint64_t s : fresh) streams.push_back(entry(rank, s).src.op.stream);
  try_issue_streams(rank, streams);
}

bool StreamingReplayer::complete() const {
  for (const auto& st : ranks_) {
    if (!st.exhausted || !st.window.empty()) return false;
  }
  return true;
}

StreamOutcome StreamingReplayer::run() {
  for (int r = 0; r < source_.num_ranks(); ++r) refill(r);
  fresh_.clear();
  for (int r = 0; r < source_.num_ranks(); ++r) {
    std::vector<uint16_t> streams(ranks_[static_cast<size_t>(r)].queue.size());
    for (size_t s = 0; s < streams.size(); ++s) streams[s] = static_cast<uint16_t>(s);
    try_issue_streams(r, streams);
  }
  while (true) {
    sim_.run();
    if (aborted_ || complete()) break;
    // Stalled: every op held waits for something. Ops beyond a full window
    // may be what they wait for; read further there and go on.
    bool grew = false;
    for (int r = 0; r < source_.num_ranks() && !aborted_; ++r) {
      RankState& st = ranks_[static_cast<size_t>(r)];
      if (st.exhausted || st.window.size() < st.limit) continue;
      st.limit *= 2;
      ++growths_;
      grew = true;
      fresh_.clear();
      refill(r);
      const std::vector<uint64_t> fresh = std::move(fresh_);
      fresh_.clear();
      std::vector<uint16_t> streams;
      for (uint64_t s : fresh) streams.push_back(entry(r, s).src.op.stream);
      try_issue_streams(r, streams);
    }
    if (!grew) break;
  }

  StreamOutcome out;
  out.ops_done = ops_done_;
  out.ops_read = ops_read_;
  out.makespan = makespan_;
  out.peak_ops_held = peak_held_;
  out.peak_rank_window = peak_rank_window_;
  out.window_growths = growths_;
  out.late_ops = late_ops_;
  out.max_lateness = max_lateness_;
  if (aborted_) {
    out.ending = abort_ending_;
    out.problem = abort_reason_;
    return out;
  }
  out.complete = complete();
  out.ending = out.complete ? Ending::complete : Ending::deadlock;
  if (!out.complete) out.problem = stuck_report();
  return out;
}

// Why a replay that drained is not complete: unmatched messages first, then
// collectives some members never reached, then dependency cycles, then the
// first op each stuck rank waits at.
std::string StreamingReplayer::stuck_report() {
  std::vector<std::string> parts;
  const size_t kMax = 4;
  auto p2p = [&](const auto& pending, bool send) {
    for (const auto& [key, list] : pending) {
      if (parts.size() >= kMax) return;
      const auto& [src, dst, tag] = key;
      const Arrival& a = list.front();
      const auto& p = std::get<workloads::P2pOp>(entry(a.rank, a.op).src.op.payload);
      parts.push_back(describe(a.rank, a.op) + (send ? ": SEND to rank " + std::to_string(dst)
                                                     : ": RECV from rank " + std::to_string(src)) +
                      " (tag " + std::to_string(tag) + ", " + std::to_string(p.bytes.count()) +
                      " B) was never matched by a " + (send ? "RECV at rank " + std::to_string(dst)
                                                            : "SEND from rank " + std::to_string(src)) +
                      " with that tag");
    }
  };
  p2p(sends_, true);
  p2p(recvs_, false);
  for (const auto& [key, rv] : collectives_) {
    if (parts.size() >= kMax) break;
    const auto& members = source_.communicator(key.first);
    std::vector<int> missing;
    for (int m : members) {
      if (std::none_of(rv.arrived.begin(), rv.arrived.end(), [&](const Arrival& a) { return a.rank == m; })) {
        missing.push_back(m);
      }
    }
    std::string ms;
    for (size_t i = 0; i < missing.size() && i < 8; ++i) ms += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > 8) ms += ", ...";
    parts.push_back(describe(rv.arrived.front().rank, rv.arrived.front().op) + ": collective " +
                    std::to_string(key.second + 1) + " on its group waits for rank(s) " + ms +
                    ", which never reach it");
  }
  // Cycles among the unfinished ops of a rank, through dependencies.
  for (int r = 0; r < source_.num_ranks() && parts.size() < kMax; ++r) {
    RankState& st = ranks_[static_cast<size_t>(r)];
    std::unordered_map<uint64_t, uint8_t> colour;  // seq -> 1 on path, 2 done
    std::vector<std::pair<uint64_t, size_t>> stack;
    bool found = false;
    for (uint64_t s0 = st.base; s0 < st.base + st.window.size() && !found; ++s0) {
      if (entry(r, s0).done || colour.count(s0)) continue;
      stack.push_back({s0, 0});
      colour[s0] = 1;
      while (!stack.empty() && !found) {
        auto& [s, next] = stack.back();
        const auto& deps = entry(r, s).src.deps;
        if (next == deps.size()) {
          colour[s] = 2;
          stack.pop_back();
          continue;
        }
        auto it = st.seq_of.find(deps[next++]);
        if (it == st.seq_of.end() || entry(r, it->second).done) continue;
        const uint64_t to = it->second;
        if (colour[to] == 2) continue;
        if (colour[to] == 0) {
          colour[to] = 1;
          stack.push_back({to, 0});
          continue;
        }
        std::string loop;
        size_t k = stack.size();
        while (stack[k - 1].first != to) --k;
        for (size_t i = k - 1; i < stack.size(); ++i) {
          const SourcedOp& o = entry(r, stack[i].first).src;
          loop += "node " + std::to_string(o.id) + (o.name.empty() ? "" : " ('" + o.name + "')") + " -> ";
        }
        const SourcedOp& o = entry(r, to).src;
        loop += "node " + std::to_string(o.id) + (o.name.empty() ? "" : " ('" + o.name + "')");
        parts.push_back(source_.origin(r) + ": dependency cycle: " + loop);
        found = true;
      }
    }
  }
  if (parts.empty()) {
    for (int r = 0; r < source_.num_ranks() && parts.size() < kMax; ++r) {
      RankState& st = ranks_[static_cast<size_t>(r)];
      for (uint64_t s = st.base; s < st.base + st.window.size(); ++s) {
        const Entry& e = entry(r, s);
        if (e.done) continue;
        parts.push_back(describe(r, s) + " on stream '" + source_.stream_name(e.src.op.stream) + "' " +
                        (e.issued && is_communication(e.src.op.kind)
                             ? "waits for its peers to reach the same op"
                             : e.waiting ? "waits on unfinished dependencies"
                                         : "waits behind an earlier op of its stream"));
        break;
      }
    }
  }
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

}  // namespace gcsim::sim
