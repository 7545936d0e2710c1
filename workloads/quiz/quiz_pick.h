// Seeded choices for the quiz builders: one sim::RandomStream per topic, so
// the same seed always picks the same presets and sizes.
#pragma once

#include <string>
#include <vector>

#include "sim/engine/random.h"

namespace gcsim::workloads::quiz {

template <typename T>
const T& pick(sim::RandomStream& r, const std::vector<T>& options) {
  return options[static_cast<size_t>(r.uniform_int(options.size()))];
}

// The stream of one topic's quiz: the seed and the topic name, so two topics
// with the same seed draw independently.
inline sim::RandomStream quiz_stream(uint64_t seed, const char* topic) {
  return sim::RandomStream(seed, std::string("quiz/") + topic);
}

}  // namespace gcsim::workloads::quiz
