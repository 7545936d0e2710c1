// How a communicator's ranks sit on the machines: its members grouped by
// host (server), each host's members in rank order. NCCL builds its rings
// and trees from this: neighbours inside a host first, hosts joined through
// their NICs, one rail per channel.
#pragma once

#include <unordered_map>
#include <vector>

#include "models/network/fabric.h"

namespace gcsim::models::collectives {

class GroupLayout {
 public:
  // `ranks` are distinct global GPU ranks of `fabric`.
  GroupLayout(const network::Fabric& fabric, const std::vector<int>& ranks);

  int size() const { return size_; }
  // Members per host, hosts in order of their lowest member, members sorted.
  const std::vector<std::vector<int>>& hosts() const { return hosts_; }
  int num_hosts() const { return static_cast<int>(hosts_.size()); }
  // Every host holds the same number of members.
  bool uniform() const { return uniform_; }
  int max_per_host() const { return max_per_host_; }
  // Which entry of hosts() a member belongs to.
  int host_index(int rank) const;
  bool same_host(int a, int b) const { return host_index(a) == host_index(b); }

 private:
  int size_ = 0;
  std::vector<std::vector<int>> hosts_;
  std::unordered_map<int, int> host_of_rank_;  // member -> index into hosts_
  bool uniform_ = true;
  int max_per_host_ = 0;
};

}  // namespace gcsim::models::collectives
