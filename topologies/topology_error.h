// The one error topology code raises for a spec it cannot build: which key of
// cluster.scale_out is at fault (and which list item), and why. The config
// loader turns it into a ConfigError naming file, line and key; topologies/
// itself knows nothing of YAML.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace gcsim::topologies {

class TopologyError : public std::invalid_argument {
 public:
  // `key` is relative to cluster.scale_out ("radix", "links"); for a list item
  // `index` is its position and `field` the item's key ("links", 3, "b").
  TopologyError(std::string key, std::string message, int index = -1, std::string field = {})
      : std::invalid_argument(message),
        key_(std::move(key)),
        index_(index),
        field_(std::move(field)) {}

  const std::string& key() const { return key_; }
  int index() const { return index_; }
  const std::string& field() const { return field_; }

 private:
  std::string key_;
  int index_;
  std::string field_;
};

}  // namespace gcsim::topologies
