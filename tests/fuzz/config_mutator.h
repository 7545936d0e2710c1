// Mutates YAML config text for the fuzzers at two levels. On the parsed
// tree: a value swapped for an extreme number, a unit at the edge of the
// time range, a wrong type or a huge string; a key deleted, duplicated,
// unknown, or borrowed with its subtree from another seed; a list repeated;
// a value nested deep. On the bytes: flips, inserted YAML tokens, dropped,
// duplicated or swapped lines. Tree mutations keep the text a well-formed
// map, so most inputs get past the parser and into the loaders; byte
// mutations test the parser and the error paths around it. The same input
// and random state give the same output.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "sim/engine/random.h"

namespace gcsim::fuzz {

class ConfigMutator {
 public:
  // `seeds`: the corpus texts, mined for map keys, scalar values and the
  // subtree under each key (crossover donors). Seeds that do not parse
  // are skipped.
  explicit ConfigMutator(const std::vector<std::string>& seeds);

  // One to three stacked mutations of `text`, mostly on the tree; the result
  // is at most `max_size` bytes.
  std::string mutate(const std::string& text, sim::RandomStream& rng, size_t max_size) const;

  // Single mutations, for the libFuzzer target and the tests.
  std::string mutate_tree(const std::string& text, sim::RandomStream& rng) const;
  std::string mutate_bytes(const std::string& text, sim::RandomStream& rng) const;

  // The key and value words mined from the seeds (for libFuzzer's dictionary).
  const std::vector<std::string>& keys() const { return keys_; }

 private:
  void harvest(const YAML::Node& node);
  YAML::Node scalar_variant(const std::string& key, const YAML::Node& value,
                            sim::RandomStream& rng) const;
  YAML::Node replacement(const std::string& key, const YAML::Node& value,
                         sim::RandomStream& rng) const;

  std::vector<std::string> keys_;
  std::vector<std::string> scalars_;
  std::map<std::string, std::vector<YAML::Node>> subtrees_;  // key -> values seen under it
};

}  // namespace gcsim::fuzz
