// Shrinks a fuzz input while it still shows the same finding: first whole
// map entries and list items of its YAML tree (outermost first, so one
// trial can drop a large subtree), then halves long scalars, then single
// lines, then single bytes of short inputs. Each trial is one sandboxed
// run, so the budget bounds the time spent.
#pragma once

#include <functional>
#include <string>

namespace gcsim::fuzz {

// `same`: does this input still show the finding?
std::string minimize(const std::string& input, const std::function<bool(const std::string&)>& same,
                     int max_trials);

}  // namespace gcsim::fuzz
