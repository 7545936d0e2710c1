// Strict YAML parsing for every file gcsim reads: yaml-cpp accepts things
// that silently change what a config means, so they are errors here with
// the file and line:
//   - a key written twice in one map (yaml-cpp keeps the first, the user
//     usually meant the second): both lines are named;
//   - a second document after `---` (yaml-cpp's Load ignores it);
//   - nesting deeper than kMaxYamlDepth (yaml-cpp's own guard says only
//     "bad file");
//   - aliases that expand the document far beyond its own size (a
//     "billion laughs" file would make every reader walk 10^9 nodes).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace gcsim::sim::config {

inline constexpr int kMaxYamlDepth = 64;  // levels of maps and lists; configs use < 10
// Aliases may expand a document to at most 4x its own nodes plus this many.
inline constexpr long kAliasExpansionSlack = 100000;

// Parses `text` (named `name` in messages) as exactly one YAML document;
// throws ConfigError on syntax errors and on everything listed above. An
// empty text gives a null node.
YAML::Node parse_yaml_document(const std::string& text, const std::string& name);

}  // namespace gcsim::sim::config
