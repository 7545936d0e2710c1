#include "tests/fuzz/config_mutator.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

namespace gcsim::fuzz {

namespace {

// Numbers at the edges: zero and signs, powers of two around int32/int64,
// the double range's ends, non-finite spellings, YAML's other number forms.
constexpr std::array<std::string_view, 44> kExtremeNumbers{
    "0",          "-0",          "-1",          "1",           "2",          "3",
    "7",          "0.5",         "255",         "65536",       "2147483647", "2147483648",
    "-2147483649", "4294967296", "4294967297",  "9223372036854775807",     "9223372036854775808",
    "-9223372036854775808",      "18446744073709551616",       "1e18",       "9.2e18",
    "1e19",       "1e308",       "-1e308",      "1e309",       "1e-300",     "5e-324",
    "1e-320",     "nan",         ".nan",        "NaN",         "inf",        ".inf",
    "-.inf",      "infinity",    "0x7fffffff",  "0o17",        "1_000",      "08",
    "+5",         "1e",          "1.5.5",       "-1e-300",     "123456789012345678901234567890"};

// Every unit suffix the unit parser knows, plus near misses.
constexpr std::array<std::string_view, 40> kUnits{
    "B",     "KB",    "MB",     "GB",      "TB",      "KiB",    "MiB",    "GiB",
    "TiB",   "bps",   "Kbps",   "Mbps",    "Gbps",    "Tbps",   "B/s",    "KB/s",
    "MB/s",  "GB/s",  "TB/s",   "KiB/s",   "MiB/s",   "GiB/s",  "ps",     "ns",
    "us",    "ms",    "s",      "min",     "h",       "FLOP/s", "TF/s",   "PF/s",
    "TFLOP/s", "d",   "EiB",    "1/1ps",   " GB",     "gbps",   "",       "%"};

// Values that are not numbers: other types, empties, paths that are not
// regular files, YAML's special words, and strings a loader may split.
constexpr std::array<std::string_view, 30> kOddScalars{
    "",         " ",        "true",       "false",     "yes",      "null",
    "~",        "none",     "all",        "auto",      "search",   "trace",
    "/dev/null", "/",       ".",          "..",        "/dev/zero", "/etc/passwd",
    "-",        "a.b.c",    "[",          "{}",        "1/1ps",    "106d",
    "107d",     "1e30GB",   "0Gbps",      "-1us",      "1e300s",   "9223372us"};

// File names for keys that name files (traces, Chakra prefixes, comm
// groups, calibration profiles, GPU presets): devices that never end or
// never answer, folders, the config itself, names too long for the OS.
const std::array<std::string, 18> kPaths{
    "/dev/zero",  "/dev/urandom", "/dev/null",  "/",          ".",          "..",
    "/etc/passwd", "/proc/self/status", "config.yaml", "missing.csv", "inference_trace.csv",
    "two_ranks",  "two_ranks.comm_groups.json", "infer_trace_bad.csv", "/tmp",
    std::string(300, 'x'), std::string(5000, 'y') + ".csv", "a/b/../../config.yaml"};

// Text-level tokens: YAML syntax that changes structure, and separators.
constexpr std::array<std::string_view, 32> kYamlTokens{
    ": ",   "- ",   "\n",   "\n  ",  "[",    "]",    "{",     "}",    ",",   "#",
    "&a ",  "*a",   "<<: *a", "!!str ", "!!binary ", "!!map ", "? ", "--- ", "...", "%YAML 1.2\n",
    "\t",   "|\n",  ">\n",  "\"",    "'",    "\\u0000", std::string_view("\0", 1), "\xff\xfe",
    "~",    "''",   "\"\\x\"", "&a [*a]"};

std::string any_of(auto const& table, sim::RandomStream& rng) {
  return std::string(table[rng.uniform_int(table.size())]);
}

bool chance(sim::RandomStream& rng, int percent) {
  return rng.uniform_int(100) < static_cast<uint64_t>(percent);
}

// A place in the tree that holds a value: a map entry or a list item.
struct Slot {
  YAML::Node parent;
  std::string key;  // the entry's key, when in a map
  size_t index = 0;  // the item's position, when in a list
  bool in_map = true;

  YAML::Node value() const { return in_map ? parent[key] : parent[index]; }
  void set(const YAML::Node& v) {
    if (in_map) {
      parent[key] = v;
    } else {
      parent[index] = v;
    }
  }
  void erase() {
    if (in_map) {
      parent.remove(key);
    } else {
      parent.remove(index);
    }
  }
};

// Depth past which a tree is taken to be cyclic (an alias to an enclosing
// anchor) and left to the byte mutations.
constexpr int kMaxWalkDepth = 200;
constexpr size_t kMaxSlots = 20000;

// Every map entry (with a scalar key) and list item under `node`; false
// when the walk went too deep.
bool collect(const YAML::Node& node, int depth, std::vector<Slot>& out) {
  if (depth > kMaxWalkDepth) return false;
  if (out.size() >= kMaxSlots) return true;
  if (node.IsMap()) {
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) continue;
      out.push_back(Slot{node, kv.first.Scalar(), 0, true});
      if (!collect(kv.second, depth + 1, out)) return false;
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      out.push_back(Slot{node, "", i, false});
      if (!collect(node[i], depth + 1, out)) return false;
    }
  }
  return true;
}

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  if (!out.good()) return {};
  return std::string(out.c_str(), out.size());
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

YAML::Node scalar(const std::string& s) { return YAML::Node(s); }

// `value` wrapped in `levels` lists or maps.
YAML::Node nested(YAML::Node value, int levels, bool maps) {
  for (int i = 0; i < levels; ++i) {
    YAML::Node outer(maps ? YAML::NodeType::Map : YAML::NodeType::Sequence);
    if (maps) {
      outer["x"] = value;
    } else {
      outer.push_back(value);
    }
    value = outer;
  }
  return value;
}

std::vector<size_t> line_starts(const std::string& text) {
  std::vector<size_t> starts{0};
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && i + 1 < text.size()) starts.push_back(i + 1);
  }
  return starts;
}

// [begin, end) of line `i`, its newline included.
std::pair<size_t, size_t> line_range(const std::string& text, const std::vector<size_t>& starts,
                                     size_t i) {
  const size_t end = i + 1 < starts.size() ? starts[i + 1] : text.size();
  return {starts[i], end};
}

}  // namespace

ConfigMutator::ConfigMutator(const std::vector<std::string>& seeds) {
  for (const auto& text : seeds) {
    try {
      harvest(YAML::Load(text));
    } catch (const YAML::Exception&) {
      // a seed that is not YAML feeds the byte mutations only
    }
  }
  std::sort(keys_.begin(), keys_.end());
  keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  std::sort(scalars_.begin(), scalars_.end());
  scalars_.erase(std::unique(scalars_.begin(), scalars_.end()), scalars_.end());
}

void ConfigMutator::harvest(const YAML::Node& node) {
  std::vector<Slot> slots;
  if (!collect(node, 0, slots)) return;
  for (const Slot& s : slots) {
    const YAML::Node v = s.value();
    if (s.in_map) {
      keys_.push_back(s.key);
      auto& donors = subtrees_[s.key];
      // A handful of distinct values per key is enough variety.
      if (donors.size() < 16) donors.push_back(YAML::Clone(v));
    }
    if (v.IsScalar() && v.Scalar().size() < 200) scalars_.push_back(v.Scalar());
  }
}

namespace {

bool names_a_file(const std::string& key, const std::string& text) {
  for (const char* k : {"trace", "prefix", "comm_groups", "calibration", "gpu", "preset"}) {
    if (key == k) return true;
  }
  for (const char* ext : {".csv", ".json", ".jsonl", ".yaml", ".et"}) {
    if (text.size() > 4 && text.find(ext) != std::string::npos) return true;
  }
  return text.find('/') != std::string::npos;
}

}  // namespace

YAML::Node ConfigMutator::scalar_variant(const std::string& key, const YAML::Node& value,
                                         sim::RandomStream& rng) const {
  const std::string text = value.IsScalar() ? value.Scalar() : std::string("1");
  if (names_a_file(key, text) && chance(rng, 50)) return scalar(any_of(kPaths, rng));
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  const bool numeric = end != begin;
  const std::string suffix = numeric ? std::string(end) : std::string();
  if (numeric && chance(rng, 75)) {
    switch (rng.uniform_int(6)) {
      case 0: return scalar(any_of(kExtremeNumbers, rng) + suffix);
      case 1: {
        // Scale by 2^k, |k| up to 70: past int32, int64 and picosecond ranges.
        const int k = static_cast<int>(rng.uniform_int(141)) - 70;
        return scalar(format_double(std::ldexp(number, k)) + suffix);
      }
      case 2: return scalar(format_double(-number) + suffix);
      case 3: return scalar(format_double(number + (chance(rng, 50) ? 1 : -1)) + suffix);
      case 4: return scalar(text.substr(0, end - begin) + any_of(kUnits, rng));
      default: return scalar(any_of(kExtremeNumbers, rng) + any_of(kUnits, rng));
    }
  }
  switch (rng.uniform_int(5)) {
    case 0:
      if (!scalars_.empty()) return scalar(scalars_[rng.uniform_int(scalars_.size())]);
      [[fallthrough]];
    case 1: return scalar(any_of(kOddScalars, rng));
    case 2: return scalar(text + any_of(kOddScalars, rng));
    case 3: {
      std::string upper = text;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return scalar(upper);
    }
    default: return scalar(any_of(kExtremeNumbers, rng));
  }
}

// A new value for `key` (currently `value`): a variant of the scalar, a
// donor subtree seen under the same key, or another type altogether.
YAML::Node ConfigMutator::replacement(const std::string& key, const YAML::Node& value,
                                      sim::RandomStream& rng) const {
  switch (rng.uniform_int(10)) {
    case 0:
    case 1:
    case 2:
      if (value.IsScalar()) return scalar_variant(key, value, rng);
      [[fallthrough]];
    case 3:
    case 4: {
      auto it = subtrees_.find(key);
      if (it != subtrees_.end()) return YAML::Clone(it->second[rng.uniform_int(it->second.size())]);
      return scalar_variant(key, value, rng);
    }
    case 5: {
      // A donor from any key: a map where a number was, and so on.
      if (subtrees_.empty()) return scalar_variant(key, value, rng);
      auto it = subtrees_.begin();
      std::advance(it, rng.uniform_int(subtrees_.size()));
      return YAML::Clone(it->second[rng.uniform_int(it->second.size())]);
    }
    case 6: {
      YAML::Node list(YAML::NodeType::Sequence);
      list.push_back(YAML::Clone(value));
      return list;
    }
    case 7: return YAML::Node(chance(rng, 50) ? YAML::NodeType::Map : YAML::NodeType::Sequence);
    case 8: return YAML::Node(YAML::NodeType::Null);
    default: {
      // A long string: a key or name the loaders copy, or a number too long to parse.
      const size_t n = size_t{1} << (4 + rng.uniform_int(14));
      return scalar(std::string(n, chance(rng, 50) ? '9' : 'x'));
    }
  }
}

std::string ConfigMutator::mutate_tree(const std::string& text, sim::RandomStream& rng) const {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return mutate_bytes(text, rng);
  }
  if (!root.IsMap()) return mutate_bytes(text, rng);
  std::vector<Slot> slots;
  if (!collect(root, 0, slots) || slots.empty()) return mutate_bytes(text, rng);
  Slot slot = slots[rng.uniform_int(slots.size())];
  const YAML::Node value = slot.value();
  switch (rng.uniform_int(12)) {
    case 0:
    case 1:
    case 2:
    case 3: slot.set(replacement(slot.key, value, rng)); break;
    case 4: slot.erase(); break;
    case 5: {
      // A key added to the map at or around the slot: known somewhere in
      // the seeds (right name, maybe the wrong place) or made up.
      YAML::Node map = value.IsMap() ? value : slot.parent.IsMap() ? slot.parent : root;
      const std::string key = !keys_.empty() && chance(rng, 85) ? keys_[rng.uniform_int(keys_.size())]
                                                               : "zz_unknown_" + any_of(kUnits, rng);
      auto it = subtrees_.find(key);
      map[key] = it != subtrees_.end() && chance(rng, 70)
                     ? YAML::Clone(it->second[rng.uniform_int(it->second.size())])
                     : scalar(any_of(kExtremeNumbers, rng));
      break;
    }
    case 6: {
      // A list repeated (many ranks, ops, buckets) or a scalar made a list of copies.
      const size_t copies = size_t{1} << rng.uniform_int(12);
      YAML::Node list(YAML::NodeType::Sequence);
      if (value.IsSequence() && value.size() > 0) {
        for (size_t i = 0; list.size() < 4096 && i < copies * value.size(); ++i) {
          list.push_back(YAML::Clone(value[i % value.size()]));
        }
      } else {
        for (size_t i = 0; i < copies; ++i) list.push_back(YAML::Clone(value));
      }
      slot.set(list);
      break;
    }
    case 7: {
      if (chance(rng, 50)) {
        slot.set(scalar_variant(slot.key, value, rng));
        break;
      }
      static constexpr std::array<int, 4> kLevels{2, 8, 64, 180};
      slot.set(nested(YAML::Clone(value), kLevels[rng.uniform_int(kLevels.size())], chance(rng, 50)));
      break;
    }
    case 8: {
      // A value copied from elsewhere in the same config (a size where a count was).
      const Slot& other = slots[rng.uniform_int(slots.size())];
      slot.set(YAML::Clone(other.value()));
      break;
    }
    default: slot.set(scalar_variant(slot.key, value, rng)); break;
  }
  std::string out = emit(root);
  return out.empty() ? mutate_bytes(text, rng) : out;
}

std::string ConfigMutator::mutate_bytes(const std::string& text, sim::RandomStream& rng) const {
  std::string s = text;
  if (s.empty()) return any_of(kYamlTokens, rng);
  const size_t pos = rng.uniform_int(s.size() + 1);
  const std::vector<size_t> starts = line_starts(s);
  switch (rng.uniform_int(11)) {
    case 0:
      if (pos < s.size()) s[pos] = static_cast<char>(s[pos] ^ (1 << rng.uniform_int(8)));
      break;
    case 1: s.insert(pos, any_of(kYamlTokens, rng)); break;
    case 2: {
      const size_t n = 1 + rng.uniform_int(32);
      s.erase(std::min(pos, s.size()), n);
      break;
    }
    case 3: {
      // A duplicated line: a key given twice in one map.
      auto [b, e] = line_range(s, starts, rng.uniform_int(starts.size()));
      std::string line = s.substr(b, e - b);
      if (line.empty() || line.back() != '\n') line += '\n';
      s.insert(b, line);
      break;
    }
    case 4: {
      auto [b, e] = line_range(s, starts, rng.uniform_int(starts.size()));
      s.erase(b, e - b);
      break;
    }
    case 5: {
      auto [b1, e1] = line_range(s, starts, rng.uniform_int(starts.size()));
      auto [b2, e2] = line_range(s, starts, rng.uniform_int(starts.size()));
      if (b1 > b2) {
        std::swap(b1, b2);
        std::swap(e1, e2);
      }
      if (e1 <= b2) {
        const std::string l1 = s.substr(b1, e1 - b1), l2 = s.substr(b2, e2 - b2);
        s = s.substr(0, b1) + l2 + s.substr(e1, b2 - e1) + l1 + s.substr(e2);
      }
      break;
    }
    case 6: {
      // Nesting far deeper than any config: the parser's recursion.
      static constexpr std::array<size_t, 3> kDepth{100, 1000, 10000};
      const size_t d = kDepth[rng.uniform_int(kDepth.size())];
      s.insert(pos, std::string(d, '[') + std::string(d, ']'));
      break;
    }
    case 7: s.resize(pos); break;
    case 8: {
      // A number in the text replaced by an extreme one.
      size_t p = pos;
      while (p < s.size() && !std::isdigit(static_cast<unsigned char>(s[p]))) ++p;
      size_t e = p;
      while (e < s.size() && (std::isdigit(static_cast<unsigned char>(s[e])) || s[e] == '.')) ++e;
      s.replace(std::min(p, s.size()), e - std::min(p, s.size()), any_of(kExtremeNumbers, rng));
      break;
    }
    case 9:
      if (!keys_.empty()) s.insert(pos, "\n" + keys_[rng.uniform_int(keys_.size())] + ": ");
      break;
    default: s.insert(pos, any_of(kOddScalars, rng)); break;
  }
  return s;
}

std::string ConfigMutator::mutate(const std::string& text, sim::RandomStream& rng,
                                  size_t max_size) const {
  std::string s = text;
  const uint64_t rounds = 1 + rng.uniform_int(3);
  for (uint64_t i = 0; i < rounds; ++i) {
    s = chance(rng, 80) ? mutate_tree(s, rng) : mutate_bytes(s, rng);
    if (s.size() > max_size) s.resize(max_size);
  }
  return s;
}

}  // namespace gcsim::fuzz
