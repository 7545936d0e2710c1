// The ranks a workload op runs on, read from its config: one rank, or a
// group under `ranks` ('all' or absent for every rank of the cluster, else a
// list of distinct ranks). The graph and collective workloads word a few
// errors differently, and scripts match those words, so the differences are
// options here rather than two copies of the parser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/config_reader.h"

namespace gcsim::cli {

struct RankGroupWording {
  // Appended to "the cluster has ranks 0..N-1" when a rank does not exist,
  // e.g. " (nodes x gpus_per_node)".
  std::string range_note;
  // "rank 3 appears twice in the group" (true) or "a rank appears twice in
  // the group" (false).
  bool name_repeated_rank = true;
  // An empty list fails here ("the group is empty") rather than in the
  // caller's own size check.
  bool reject_empty = false;
};

// `v` as a rank of a cluster of `num_ranks`, or fails at `key`.
int check_rank(const sim::config::ConfigReader& r, const std::string& key, int64_t v,
               int num_ranks, const std::string& range_note);

// The `ranks` key: every rank for 'all' or no value, else the listed ranks
// in the order given.
std::vector<int> read_rank_group(sim::config::ConfigReader& r, int num_ranks,
                                 const RankGroupWording& wording);

}  // namespace gcsim::cli
