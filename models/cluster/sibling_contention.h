// Which of a mirrored communication's sibling instances must load the
// network beside it. A mirrored training run simulates one group of each
// symmetric set; the others (e.g. the data-parallel all-reduces of the
// other TP ranks, on the same leaves) send at the same moments over links
// the simulated group also uses. Under the mirroring premise (symmetric
// groups, balanced routing) sibling traffic slows the simulated group only
// on links where offered load can exceed capacity: the up-links of an
// oversubscribed switch (a leaf whose hosts' links add up to more than its
// up-links, or a switch left so by a failed or degraded up-link), both
// directions. A sibling counts when it may cross such a link that the
// simulated group, or a sibling already counted, may cross: max-min shares
// (and queues) on disjoint links are independent, so the rest cannot change
// the simulated group's time. "May cross" takes every equal-cost path of
// every member pair, a superset of what the group's flows take.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "models/network/fabric.h"
#include "models/network/routing.h"

namespace gcsim::models::cluster {

class SiblingContention {
 public:
  explicit SiblingContention(const network::Fabric& fabric);

  // Whether the fabric has an oversubscribed up-link now (when it has
  // none, no sibling ever counts).
  bool any();
  // Indices into `siblings` of the groups that count for `group`, ascending.
  std::vector<size_t> sharing(const std::vector<int>& group,
                              const std::vector<std::vector<int>>& siblings);
  // The oversubscribed links `group`'s member pairs may cross, ascending
  // (exposed for tests).
  std::vector<network::LinkId> contended_links(const std::vector<int>& group);

 private:
  void refresh();
  // Oversubscribed links on any equal-cost path from switch `from` toward
  // `dst_rank` (whose entry switches are `dst_entry`).
  const std::vector<network::LinkId>& links_toward(network::NodeId from, int dst_rank);
  std::vector<network::NodeId> first_switches(int rank) const;

  const network::Fabric& fabric_;
  network::Routing routing_;
  uint64_t version_ = ~uint64_t{0};
  std::vector<char> thin_;  // by link id: an oversubscribed switch's up-link (either way)
  bool any_ = false;
  // (first switch, destination's entry switch set id) -> links; cleared
  // with the fabric's version.
  std::map<std::pair<network::NodeId, int>, std::vector<network::LinkId>> toward_;
  std::map<std::vector<network::NodeId>, int> entry_ids_;
};

}  // namespace gcsim::models::cluster
