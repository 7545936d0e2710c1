// The workload replayer: walks every rank's op DAG on its streams and issues
// each op to an OpExecutor the moment it is at the head of its stream and its
// dependencies are done. Communication ops wait at a rendezvous until every
// party has issued its side, as NCCL kernels do. The replayer knows op kinds
// and timing only; what an op costs is the executor's business (models/).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/rendezvous.h"
#include "sim/engine/simulator.h"
#include "sim/engine/ir.h"

namespace gcsim::sim {

// The instances of a communication op that a mirrored rank's instance
// stands for besides its own, each listed in the order of the op's ranks
// (workloads/training/mirror_siblings.h). The first `waited` meet the
// simulated ranks again at their next collective (the same data-parallel
// replica: their TP, CP or EP peers), so the op ends when the last of them
// has; the others (other replicas, which meet only at the gradient
// collectives) load the links and nothing waits for them.
struct SiblingGroups {
  std::vector<std::vector<int>> groups;
  size_t waited = 0;
};

// Reports when an op ran: start is when the op began occupying its stream on
// this rank (a communication op: when this rank arrived), end when it finished.
using OpDone = std::function<void(Time start, Time end)>;

class OpExecutor {
 public:
  virtual ~OpExecutor() = default;
  // A kernel on `rank`; call done(first tile start, end).
  virtual void run_compute(int rank, const workloads::Op& op, OpDone done) = 0;
  // A communication op whose parties have all arrived; called once per
  // rendezvous with the global ranks involved. Call done(start, end) once.
  virtual void run_communication(const workloads::Op& op, const std::vector<int>& ranks,
                                 OpDone done) = 0;
  // A rank issued a communication op: from now it waits at the op's
  // rendezvous (NCCL launches its kernel here, which holds SMs while it
  // waits for its peers). Called once per party, in issue order among the
  // rank's other launches of the instant. `peer`: the other rank of a send
  // or recv, -1 for a collective.
  virtual void communication_issued(int rank, const workloads::Op& op, int peer) {}
  // The parties of the meeting about to run: called for each (in rank
  // order, with the op it issued) right before the run_communication call
  // of that meeting, so that an executor can pair it with their issues.
  virtual void communication_met(int rank, const workloads::Op& op) {}
  // Allocates (delta > 0) or frees HBM on `rank`.
  enum class MemoryResult { ok, out_of_memory, freed_more_than_allocated };
  virtual MemoryResult apply_memory(int rank, Bytes delta) = 0;

  // Mirrored runs, where a simulated rank stands for ranks that are not
  // simulated: whether run_communication_beside() puts the siblings'
  // traffic on shared links (false: it would ignore them, e.g. a network
  // model without contention). Checked before siblings are worked out.
  virtual bool loads_siblings() const { return false; }
  // As run_communication, while the same op among each group of
  // `siblings` loads the links it shares with `ranks`' traffic from when
  // the data moves. The caller keeps `siblings` for the whole run (a model
  // may key what it derives from it by its address).
  virtual void run_communication_beside(const workloads::Op& op, const std::vector<int>& ranks,
                                        const SiblingGroups& siblings, OpDone done) {
    run_communication(op, ranks, std::move(done));
  }
};

// Receives every finished op, in completion order.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op_done(int rank, uint32_t op_index, Time start, Time end) = 0;
  // A communication op met its peers at `met`: before it the rank waited
  // for them (rendezvous), after it the transfer ran. Called before
  // on_op_done for the same op.
  virtual void on_op_met(int rank, uint32_t op_index, Time met) {}
};

struct ReplayOutcome {
  enum class Ending { complete, out_of_memory, bad_memory_op, mismatched_communication, deadlock };
  Ending ending = Ending::deadlock;
  bool complete = false;     // every op of every rank finished
  std::string stuck;         // when not complete: which ops never ran and why
  Time makespan;             // end of the last op
  uint64_t ops_done = 0;
};

class Replayer {
 public:
  Replayer(Simulator& sim, const workloads::WorkloadGraph& graph, OpExecutor& executor,
           OpObserver& observer);
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Issues every op that is ready at time zero; the caller then runs `sim`.
  void start();
  // Ends the replay early (an OOM): no further ops are issued.
  void abort(ReplayOutcome::Ending why, std::string reason);
  // After the simulator drained: did everything run?
  ReplayOutcome outcome() const;

 private:
  // Built once per program and shared by the ranks that run it.
  struct ProgramIndex {
    std::vector<uint32_t> dep_count;                // deps per op
    std::vector<std::vector<uint32_t>> dependents;  // reverse edges
    std::vector<std::vector<uint32_t>> stream_ops;  // op indices per stream, program order
  };
  struct RankState {
    const ProgramIndex* index = nullptr;
    std::vector<uint32_t> waiting_on;               // unfinished deps per op
    std::vector<uint32_t> stream_head;              // next position per stream
    std::vector<uint8_t> stream_busy;
    std::vector<uint8_t> stream_met;                // its communication op met its peers
    std::vector<uint32_t> collective_seq;           // collectives issued per comm slot
    std::vector<uint32_t> send_seq, recv_seq;       // p2p issued per peer slot
  };
  // Which meeting an op goes to: the n-th collective on a communicator, or
  // the n-th message from src to dst.
  struct RendezvousKey {
    bool collective;
    uint32_t a, b;  // communicator and 0, or src and dst
    uint32_t seq;
    bool operator==(const RendezvousKey&) const = default;
  };
  struct KeyHash {
    size_t operator()(const RendezvousKey& k) const {
      uint64_t h = (static_cast<uint64_t>(k.a) << 32 | k.b) * 0x9e3779b97f4a7c15ULL;
      return static_cast<size_t>(h ^ (static_cast<uint64_t>(k.seq) << 1 | k.collective));
    }
  };
  RendezvousKey key_for(int rank, const workloads::Op& op);

  void try_issue_stream(int rank, uint16_t stream);
  // try_issue_stream on each of `streams` (reordered), heads in program order.
  void try_issue_streams(int rank, std::vector<uint16_t>& streams);
  void issue(int rank, uint32_t op_index);
  void arrive(int rank, uint32_t op_index);
  void finish(int rank, uint32_t op_index, Time start, Time end);

  Simulator& sim_;
  const workloads::WorkloadGraph& graph_;
  OpExecutor& executor_;
  OpObserver& observer_;
  std::vector<ProgramIndex> programs_;
  std::vector<RankState> ranks_;
  // Parties (rank, op index) met so far; only ops in flight are stored,
  // not one time per op per rank.
  std::unordered_map<RendezvousKey, replay::Rendezvous<uint32_t>, KeyHash> rendezvous_;
  uint64_t ops_done_ = 0;
  Time makespan_ = Time::zero();
  bool aborted_ = false;
  ReplayOutcome::Ending abort_ending_ = ReplayOutcome::Ending::deadlock;
  std::string abort_reason_;
};

}  // namespace gcsim::sim
