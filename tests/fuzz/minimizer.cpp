#include "tests/fuzz/minimizer.h"

#include <yaml-cpp/yaml.h>

#include <vector>

namespace gcsim::fuzz {

namespace {

struct Budget {
  int left;
  bool spend() { return left-- > 0; }
};

// The number of map entries and list items under `node`, preorder.
size_t count_slots(const YAML::Node& node, int depth = 0) {
  if (depth > 100) return 0;
  size_t n = 0;
  if (node.IsMap()) {
    for (const auto& kv : node) n += 1 + count_slots(kv.second, depth + 1);
  } else if (node.IsSequence()) {
    for (const auto& item : node) n += 1 + count_slots(item, depth + 1);
  }
  return n;
}

// Removes the `target`-th slot (preorder) under `node`; true when found.
bool remove_slot(YAML::Node node, size_t& target, int depth = 0) {
  if (depth > 100) return false;
  if (node.IsMap()) {
    std::vector<YAML::Node> keys;
    for (const auto& kv : node) keys.push_back(kv.first);
    for (const auto& k : keys) {
      if (target == 0) return node.remove(k);
      --target;
      if (remove_slot(node[k], target, depth + 1)) return true;
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (target == 0) return node.remove(i);
      --target;
      if (remove_slot(node[i], target, depth + 1)) return true;
    }
  }
  return false;
}

std::string emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return out.good() ? std::string(out.c_str(), out.size()) : std::string();
}

std::string shrink_tree(const std::string& input, const std::function<bool(const std::string&)>& same,
                        Budget& budget) {
  YAML::Node root;
  try {
    root = YAML::Load(input);
  } catch (const YAML::Exception&) {
    return input;
  }
  std::string best = emit(root);
  // The tree's own printing must still show the finding (quoting may differ).
  if (best.empty() || best.size() >= input.size() * 4 + 64 || !budget.spend() || !same(best)) {
    return input;
  }
  try {
    for (size_t i = 0; i < count_slots(YAML::Load(best)) && budget.spend();) {
      YAML::Node trial = YAML::Load(best);
      size_t target = i;
      if (!remove_slot(trial, target)) break;
      const std::string text = emit(trial);
      if (!text.empty() && same(text)) {
        best = text;  // the same index now names the next slot
      } else {
        ++i;
      }
    }
  } catch (const YAML::Exception&) {
    // our own printing did not parse back: keep what was reached
  }
  return best;
}

// Every scalar longer than 8 characters, in preorder (values, not keys).
void long_scalars(YAML::Node node, std::vector<YAML::Node>& out, int depth = 0) {
  if (depth > 100) return;
  if (node.IsScalar() && node.Scalar().size() > 8) out.push_back(node);
  if (node.IsMap()) {
    for (auto kv : node) long_scalars(kv.second, out, depth + 1);
  } else if (node.IsSequence()) {
    for (auto item : node) long_scalars(item, out, depth + 1);
  }
}

// Halves long scalars (a 16K-character path that 300 characters also break)
// for as long as the finding stays.
std::string shrink_scalars(const std::string& input,
                           const std::function<bool(const std::string&)>& same, Budget& budget) {
  std::string best = input;
  try {
    for (size_t i = 0;; ) {
      YAML::Node trial = YAML::Load(best);
      std::vector<YAML::Node> scalars;
      long_scalars(trial, scalars);
      if (i >= scalars.size() || !budget.spend()) break;
      const std::string v = scalars[i].Scalar();
      scalars[i] = v.substr(0, v.size() / 2);
      const std::string text = emit(trial);
      if (!text.empty() && same(text)) {
        best = text;  // the same scalar, halved again next
      } else {
        ++i;
      }
    }
  } catch (const YAML::Exception&) {
  }
  return best;
}

std::string shrink_lines(std::string best, const std::function<bool(const std::string&)>& same,
                         Budget& budget) {
  for (size_t start = 0; start < best.size() && budget.spend();) {
    size_t end = best.find('\n', start);
    end = end == std::string::npos ? best.size() : end + 1;
    const std::string trial = best.substr(0, start) + best.substr(end);
    if (same(trial)) {
      best = trial;
    } else {
      start = end;
    }
  }
  return best;
}

std::string shrink_bytes(std::string best, const std::function<bool(const std::string&)>& same,
                         Budget& budget) {
  if (best.size() > 512) return best;
  for (size_t i = 0; i < best.size() && budget.spend();) {
    const std::string trial = best.substr(0, i) + best.substr(i + 1);
    if (same(trial)) {
      best = trial;
    } else {
      ++i;
    }
  }
  return best;
}

}  // namespace

std::string minimize(const std::string& input, const std::function<bool(const std::string&)>& same,
                     int max_trials) {
  Budget budget{max_trials};
  std::string best = shrink_tree(input, same, budget);
  best = shrink_scalars(best, same, budget);
  best = shrink_lines(best, same, budget);
  return shrink_bytes(best, same, budget);
}

}  // namespace gcsim::fuzz
