#include "sim/scenario/rank_group.h"

#include <algorithm>

namespace gcsim::cli {

int check_rank(const sim::config::ConfigReader& r, const std::string& key, int64_t v,
               int num_ranks, const std::string& range_note) {
  if (v < 0 || v >= num_ranks) {
    r.fail(key, "rank " + std::to_string(v) + " does not exist: the cluster has ranks 0.." +
                    std::to_string(num_ranks - 1) + range_note);
  }
  return static_cast<int>(v);
}

std::vector<int> read_rank_group(sim::config::ConfigReader& r, int num_ranks,
                                 const RankGroupWording& wording) {
  const YAML::Node n = r.raw("ranks", "'all' or a list of ranks");
  std::vector<int> ranks;
  if (!n.IsDefined() || n.IsNull() || (n.IsScalar() && n.Scalar() == "all")) {
    r.resolve("ranks", "all");
    for (int i = 0; i < num_ranks; ++i) ranks.push_back(i);
    return ranks;
  }
  if (!n.IsSequence()) r.fail("ranks", "expected 'all' or a list of ranks such as [0, 1, 2, 3]");
  for (const auto& item : n) {
    int64_t v = 0;
    try {
      v = item.as<int64_t>();
    } catch (const YAML::Exception&) {
      r.fail("ranks", "expected integer ranks, got '" + item.Scalar() + "'");
    }
    ranks.push_back(check_rank(r, "ranks", v, num_ranks, wording.range_note));
  }
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  const auto repeated = std::adjacent_find(sorted.begin(), sorted.end());
  if (repeated != sorted.end()) {
    r.fail("ranks", wording.name_repeated_rank
                        ? "rank " + std::to_string(*repeated) + " appears twice in the group"
                        : std::string("a rank appears twice in the group"));
  }
  if (wording.reject_empty && ranks.empty()) r.fail("ranks", "the group is empty");
  r.resolve("ranks", ranks);  // as written, order kept (it can be a ring's order)
  return ranks;
}

}  // namespace gcsim::cli
