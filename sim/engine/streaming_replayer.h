// Replays ops from an OpSource in bounded memory: each rank holds a window
// of at most `window` ops read ahead of its oldest unfinished one, reads on
// as ops finish, and forgets an op once it and every op before it have
// finished. Issue rules are the whole-graph Replayer's (sim/engine/replayer.h):
// ops on one stream run in program order, an op runs once its deps have
// finished, communication waits for every party (collectives by order on a
// communicator; a send meets the oldest waiting receive of its (src, dst,
// tag), in the order they are issued). With a window as long as the
// program, the run is event for event the Replayer's.
//
// What is bounded and what is not:
// - ops held: at most `window` per rank, unless the replay would otherwise
//   stall (every op in the window waits for something beyond it); then
//   that rank's window doubles and the replay goes on (`window_growths`).
// - an op the full replay would have issued before it was read is issued
//   late; such ops are counted with a lower bound on the delay
//   (`late_ops`, `max_lateness`): zero means the window changed nothing.
// - ids of forgotten ops are kept as intervals (one for ids that grow by
//   one, as Chakra's converters and gcsim's exporter write them), so that a
//   dependency on a missing node is told from one on a finished node.
// - unbounded, but small: one counter per (rank, communicator) and the
//   messages in flight.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/engine/op_source.h"
#include "sim/engine/rendezvous.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"

namespace gcsim::sim {

// Receives every finished op, in completion order; `op` is valid during the
// call only.
class StreamObserver {
 public:
  virtual ~StreamObserver() = default;
  virtual void on_op_done(int rank, const SourcedOp& op, Time start, Time end) = 0;
};

struct StreamingOptions {
  size_t window = 4096;  // ops held per rank (read ahead of the oldest unfinished)
};

struct StreamOutcome {
  enum class Ending {
    complete, out_of_memory, bad_memory_op, mismatched_communication, bad_input, deadlock
  };
  Ending ending = Ending::deadlock;
  bool complete = false;
  std::string problem;     // when not complete: what stopped the replay, naming ranks and ops
  Time makespan;
  uint64_t ops_done = 0;
  uint64_t ops_read = 0;
  size_t peak_ops_held = 0;       // most ops in all windows at once
  size_t peak_rank_window = 0;    // most ops in one rank's window
  uint64_t window_growths = 0;
  uint64_t late_ops = 0;
  Duration max_lateness;
};

class StreamingReplayer {
 public:
  StreamingReplayer(Simulator& sim, OpSource& source, OpExecutor& executor,
                    StreamObserver& observer, StreamingOptions options = {});
  StreamingReplayer(const StreamingReplayer&) = delete;
  StreamingReplayer& operator=(const StreamingReplayer&) = delete;

  // Runs `sim` until the replay ends (the replayer drives the simulator, so
  // that it can grow a stalled window and go on).
  StreamOutcome run();
  // Ends the replay early: no further ops are issued.
  void abort(StreamOutcome::Ending why, std::string problem);

 private:
  struct Entry {
    SourcedOp src;
    uint32_t waiting = 0;             // deps not finished, read or not
    std::vector<uint64_t> dependents;  // seqs of entries waiting for this one
    Time ready_bound;                 // latest finish among finished deps
    Time finished;
    bool issued = false, done = false;
  };
  // Ids of forgotten ops, as disjoint intervals [first, last].
  class IdIntervals {
   public:
    bool contains(uint64_t id) const;
    void insert(uint64_t id);
    size_t intervals() const { return by_first_.size(); }

   private:
    std::map<uint64_t, uint64_t> by_first_;
  };
  struct RankState {
    std::deque<Entry> window;
    uint64_t base = 0;  // seq of window.front(); seq = position in the rank's program
    std::unordered_map<uint64_t, uint64_t> seq_of;  // id -> seq, for ops in the window
    IdIntervals forgotten;
    // Finish times of forgotten ops, as much as lateness needs: ops
    // forgotten at `recent_time` by id, older ones only as a maximum.
    Time recent_time;
    std::vector<uint64_t> recent_ids;
    Time older_finish;
    std::unordered_map<uint64_t, std::vector<uint64_t>> unread_waiters;  // id -> seqs
    std::vector<std::deque<uint64_t>> queue;  // per stream: seqs read, not yet issued
    std::vector<uint8_t> busy;
    std::vector<Time> stream_free_since;
    std::unordered_map<uint32_t, uint32_t> collective_seq;  // per communicator
    size_t limit = 0;
    bool exhausted = false;
  };
  // Parties named by their seq.
  using Arrival = replay::Arrival<uint64_t>;
  using Rendezvous = replay::Rendezvous<uint64_t>;

  Entry& entry(int rank, uint64_t seq);
  void refill(int rank);
  void add(int rank, SourcedOp op);
  void evict(int rank);
  // An upper bound on when forgotten op `id` finished: now if it finished
  // now, else a time before now.
  Time forgotten_finish_bound(RankState& st, uint64_t id) const;
  void try_issue_stream(int rank, uint16_t stream);
  // try_issue_stream on each of `streams` (reordered), heads in read order.
  void try_issue_streams(int rank, std::vector<uint16_t>& streams);
  void issue(int rank, uint64_t seq);
  void arrive(int rank, uint64_t seq);
  void meet(std::vector<Arrival> parties);
  void finish(int rank, uint64_t seq, Time start, Time end);
  std::string describe(int rank, uint64_t seq);
  std::string stuck_report();
  bool complete() const;

  Simulator& sim_;
  OpSource& source_;
  OpExecutor& executor_;
  StreamObserver& observer_;
  StreamingOptions options_;
  std::vector<RankState> ranks_;
  std::map<std::pair<uint32_t, uint32_t>, Rendezvous> collectives_;  // (communicator, seq)
  // Unmatched arrivals per (src, dst, tag): sends waiting for a receive, or
  // receives waiting for a send (never both).
  std::map<std::tuple<int, int, int64_t>, std::deque<Arrival>> sends_, recvs_;
  std::vector<uint64_t> fresh_;  // seqs just read, to try issuing
  uint64_t ops_done_ = 0, ops_read_ = 0;
  size_t held_ = 0, peak_held_ = 0, peak_rank_window_ = 0;
  uint64_t growths_ = 0, late_ops_ = 0;
  Duration max_lateness_;
  Time makespan_ = Time::zero();
  bool aborted_ = false;
  StreamOutcome::Ending abort_ending_ = StreamOutcome::Ending::deadlock;
  std::string abort_reason_;
};

}  // namespace gcsim::sim
