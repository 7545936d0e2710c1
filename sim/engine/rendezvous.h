// Matching the parties of a communication op, as both replayers do (the
// whole-graph Replayer, sim/engine/replayer.h, and the StreamingReplayer,
// sim/engine/streaming_replayer.h): who has arrived, whether their ops agree, and
// how a disagreement is told. Each replayer names an op its own way (an op
// index of the whole graph, or a read sequence number in a window): `Id`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/time.h"
#include "sim/engine/ir.h"

namespace gcsim::sim::replay {

// Whether an op met at a rendezvous agrees with the first one there: the
// same collective kind, size and root, or a p2p of the same size.
bool same_communication(const workloads::Op& first, const workloads::Op& op);

// "all_reduce of 1048576 B", "p2p of 4096 B".
std::string communication_summary(const workloads::Op& op);

// A party at a rendezvous: its rank, which of its ops, and when it arrived.
template <typename Id>
struct Arrival {
  int rank;
  Id op;
  Time when;
  bool operator<(const Arrival& o) const { return rank != o.rank ? rank < o.rank : op < o.op; }
};

// The parties arrived so far, of `parties` expected.
template <typename Id>
struct Rendezvous {
  std::vector<Arrival<Id>> arrived;
  size_t parties = 0;
};

// "" when every party's op agrees with the first party's, else which two
// disagree and why. `op_of(party)` is a party's op, `name(party)` names it
// in the message.
template <typename Id, typename OpOf, typename Name>
std::string mismatch(const std::vector<Arrival<Id>>& parties, OpOf op_of, Name name) {
  const workloads::Op& first = op_of(parties.front());
  for (const Arrival<Id>& a : parties) {
    const workloads::Op& op = op_of(a);
    if (!same_communication(first, op)) {
      return name(parties.front()) + " (" + communication_summary(first) + ") meets " + name(a) +
             " (" + communication_summary(op) +
             "): matched communication must agree on kind and size";
    }
  }
  return "";
}

}  // namespace gcsim::sim::replay
