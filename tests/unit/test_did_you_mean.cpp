// Suggestions for misspelt config keys: Levenshtein distance and the
// "did you mean" cut-off of max(2, |word| / 3).
#include <string>
#include <vector>

#include "catch.h"
#include "sim/config/did_you_mean.h"

using namespace gcsim::sim::config;

TEST_CASE("edit_distance counts inserts, deletes and substitutions", "[engine]") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("", "abc") == 3);  // three inserts
  CHECK(edit_distance("abc", "") == 3);  // three deletes
  CHECK(edit_distance("nodes", "nodes") == 0);
  CHECK(edit_distance("nodez", "nodes") == 1);  // one substitution
  CHECK(edit_distance("node", "nodes") == 1);   // one insert
  // The textbook case: kitten -> sitten -> sittin -> sitting = 3.
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("sitting", "kitten") == 3);  // symmetric
  // A transposition is two edits in plain Levenshtein.
  CHECK(edit_distance("gpsu", "gpus") == 2);
}

TEST_CASE("did_you_mean suggests the nearest known key", "[engine]") {
  const std::vector<std::string> keys{"gpus", "nodes", "links", "topology", "bandwidth"};
  // "nodez" is 1 edit from "nodes" (limit max(2, 5/3) = 2).
  CHECK(closest_match("nodez", keys) == "nodes");
  CHECK(did_you_mean("nodez", keys) == " (did you mean 'nodes'?)");
  // "topolgy" is 1 insert from "topology".
  CHECK(closest_match("topolgy", keys) == "topology");
  // "bandwith" (8 chars, limit 2) is 1 insert from "bandwidth".
  CHECK(closest_match("bandwith", keys) == "bandwidth");
  // An exact match is its own suggestion (distance 0).
  CHECK(closest_match("links", keys) == "links");
}

TEST_CASE("did_you_mean says nothing for far words", "[engine]") {
  const std::vector<std::string> keys{"gpus", "nodes", "links", "topology", "bandwidth"};
  // "scheduler" is 8, 7, 9, 9, 9 edits from the keys; its limit is 9/3 = 3.
  CHECK(closest_match("scheduler", keys).empty());
  CHECK(did_you_mean("scheduler", keys).empty());
  // "xyz" is 4 edits from "gpus", more from the rest: limit max(2, 1) = 2.
  CHECK(did_you_mean("xyz", keys).empty());
  CHECK(did_you_mean("nodez", {}).empty());
}

TEST_CASE("did_you_mean: the cut-off grows with the word and ties go to the first", "[engine]") {
  // "tensr_paralel" (13 chars, limit 4) is 2 inserts from "tensor_parallel"
  // and 8 edits from "pipeline_parallel".
  const std::vector<std::string> keys{"tensor_parallel", "pipeline_parallel"};
  CHECK(closest_match("tensr_paralel", keys) == "tensor_parallel");
  // "pipelin_paralle" (15 chars, limit 5): 2 inserts from "pipeline_parallel",
  // 8 edits from "tensor_parallel".
  CHECK(closest_match("pipelin_paralle", keys) == "pipeline_parallel");
  // Equal distance: "cat" is 1 from both "bat" and "car"; the first listed wins.
  CHECK(closest_match("cat", {"bat", "car"}) == "bat");
  CHECK(closest_match("cat", {"car", "bat"}) == "car");
  // At the limit still suggests; one past it does not. "abcdef" (limit 2):
  // "abcxyf" is 2 substitutions away, "axyzef" is 3.
  CHECK(closest_match("abcdef", {"abcxyf"}) == "abcxyf");
  CHECK(closest_match("abcdef", {"axyzef"}).empty());
}
