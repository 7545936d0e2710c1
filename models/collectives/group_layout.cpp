#include "models/collectives/group_layout.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace gcsim::models::collectives {

GroupLayout::GroupLayout(const network::Fabric& fabric, const std::vector<int>& ranks)
    : size_(static_cast<int>(ranks.size())) {
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::logic_error("collective group: a rank appears twice");
  }
  host_of_rank_.reserve(sorted.size());
  std::unordered_map<int, int> index_of_host;
  for (int r : sorted) {
    if (r < 0 || r >= fabric.num_gpus()) {
      throw std::logic_error("collective group: rank " + std::to_string(r) + " is not a GPU");
    }
    const int host = fabric.host_of(r);
    auto [it, added] = index_of_host.emplace(host, static_cast<int>(hosts_.size()));
    if (added) hosts_.emplace_back();
    hosts_[static_cast<size_t>(it->second)].push_back(r);
    host_of_rank_.emplace(r, it->second);
  }
  for (const auto& h : hosts_) {
    max_per_host_ = std::max(max_per_host_, static_cast<int>(h.size()));
    if (h.size() != hosts_.front().size()) uniform_ = false;
  }
}

int GroupLayout::host_index(int rank) const {
  return host_of_rank_.at(rank);
}

}  // namespace gcsim::models::collectives
