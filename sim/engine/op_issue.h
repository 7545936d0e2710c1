// What issuing an op does, as both replayers do (sim/engine/replayer.h and
// sim/engine/streaming_replayer.h): a kernel, a delay or a memory op on one rank,
// and a matched communication op over all its parties. The replayers keep
// their own bookkeeping and call these once an op may run.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/rendezvous.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"

namespace gcsim::sim::replay {

// Issues an op that is not communication. A kernel goes to the executor
// (as `kernel`, the op the executor may cache by address); a delay and a
// memory op complete through the simulator's queue. `done(start, end)`
// finishes the op; `memory_failed(result)` is called instead when a memory
// op cannot apply.
template <typename Done, typename MemoryFailed>
void issue_local(Simulator& sim, OpExecutor& executor, int rank, const workloads::Op& op,
                 const workloads::Op& kernel, Done done, MemoryFailed memory_failed) {
  const Time now = sim.now();
  switch (op.kind) {
    case workloads::OpKind::compute:
      executor.run_compute(rank, kernel, done);
      return;
    case workloads::OpKind::delay: {
      const Duration d = std::get<workloads::DelayOp>(op.payload).duration;
      sim.call_in(d, [&sim, done, now] { done(now, sim.now()); });
      return;
    }
    case workloads::OpKind::memory: {
      const Bytes delta = std::get<workloads::MemoryOp>(op.payload).delta;
      const OpExecutor::MemoryResult result = executor.apply_memory(rank, delta);
      if (result != OpExecutor::MemoryResult::ok) {
        memory_failed(result);
        return;
      }
      // Zero-duration, but completed through the queue so that ops issued
      // by its completion see a consistent order.
      sim.call_in(Duration::zero(), [done, now] { done(now, now); });
      return;
    }
    case workloads::OpKind::collective:
    case workloads::OpKind::send:
    case workloads::OpKind::recv:
      // Communication meets at the caller's rendezvous; issued here it
      // would never finish.
      throw std::logic_error("issue_local given a communication op");
  }
}

// Every party is here: sorts them by rank, checks that their ops agree,
// then runs the transfer once and calls finish(party, end) on each in rank
// order. `op_of` and `name` as for mismatch(). Returns "" or, when two
// parties disagree (nothing runs then), the mismatch.
template <typename Id, typename OpOf, typename Name, typename Finish>
std::string meet(OpExecutor& executor, std::vector<Arrival<Id>> parties, OpOf op_of, Name name,
                 Finish finish) {
  std::sort(parties.begin(), parties.end());  // deterministic completion order
  if (std::string why = mismatch(parties, op_of, name); !why.empty()) return why;
  const workloads::Op& first = op_of(parties.front());
  std::vector<int> ranks;
  ranks.reserve(parties.size());
  for (const Arrival<Id>& a : parties) {
    ranks.push_back(a.rank);
    executor.communication_met(a.rank, op_of(a));
  }
  executor.run_communication(first, ranks, [parties = std::move(parties), finish](Time, Time end) {
    for (const Arrival<Id>& a : parties) finish(a, end);
  });
  return "";
}

}  // namespace gcsim::sim::replay
