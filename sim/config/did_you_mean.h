// Suggestions for misspelt keys and names (BookSim stops on unknown keys;
// we also say which known one was probably meant).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gcsim::sim::config {

// Levenshtein distance between two strings (insert, delete, substitute = 1).
size_t edit_distance(std::string_view a, std::string_view b);

// The closest candidate within a distance of max(2, |word|/3), or "" if none.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" — ready to append to a message.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gcsim::sim::config
