#include "sim/config/yaml_document.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "sim/config/config_error.h"

namespace gcsim::sim::config {

namespace {

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

// One pass over the parsed tree. Aliased nodes are the anchored node itself
// (same mark), so containers are visited once and their expanded size is
// memoised by position.
class DocumentCheck {
 public:
  explicit DocumentCheck(const std::string& name) : name_(name) {}

  void run(const YAML::Node& root) {
    const long expanded = walk(root, "", 1);
    if (expanded > 4 * unique_ + kAliasExpansionSlack) {
      throw ConfigError(name_, 0, "",
                        "aliases (*name) expand this document to " + std::to_string(expanded) +
                            " nodes from " + std::to_string(unique_) +
                            " written; at most 4x plus " + std::to_string(kAliasExpansionSlack) +
                            " are read (write the repeated parts out, or use fewer aliases)");
    }
  }

 private:
  // Returns the number of nodes `n` stands for once aliases are expanded.
  long walk(const YAML::Node& n, const std::string& path, int depth) {
    if (!n.IsMap() && !n.IsSequence()) {
      ++unique_;
      return 1;
    }
    const int pos = n.Mark().pos;
    if (auto it = expanded_.find(pos); it != expanded_.end()) return it->second;
    if (depth > kMaxYamlDepth) {
      throw ConfigError(name_, line_of(n), path,
                        "nesting depth exceeded: more than " + std::to_string(kMaxYamlDepth) +
                            " levels of maps and lists");
    }
    ++unique_;
    long total = 1;
    if (n.IsMap()) {
      std::map<std::string, int> first_line;
      for (const auto& kv : n) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const std::string child = path.empty() ? key : path + "." + key;
        if (kv.first.IsScalar()) {
          const auto [it, fresh] = first_line.emplace(key, line_of(kv.first));
          if (!fresh) {
            throw ConfigError(name_, line_of(kv.first), child,
                              "duplicate key: also set on line " + std::to_string(it->second) +
                                  "; YAML keeps only one of the two, so write the key once");
          }
        }
        total += walk(kv.first, child, depth + 1) + walk(kv.second, child, depth + 1);
      }
    } else {
      size_t i = 0;
      for (const auto& item : n) {
        total += walk(item, path + "[" + std::to_string(i++) + "]", depth + 1);
      }
    }
    expanded_[pos] = total;
    return total;
  }

  const std::string& name_;
  long unique_ = 0;
  std::unordered_map<int, long> expanded_;
};

// Notes where a document's first value starts (an empty document has none).
class FirstValue : public YAML::EventHandler {
 public:
  int line = 0;  // 1-based; 0: no value yet
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    note(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& m) {
    if (line == 0) line = m.line + 1;
  }
};

// The line of a second, non-empty document, or 0. yaml-cpp's LoadAll can
// loop forever on some malformed input, so the parser is driven by hand and
// asked for two documents at most (and then the ones after empty ones).
int second_document_line(const std::string& text) {
  // Only a line starting with a marker ("---" or "...") can begin another
  // document; most configs have none, and skip the second parse.
  bool marker = false;
  for (size_t at = 0; at < text.size() && !marker; ++at) {
    marker = (text.compare(at, 3, "---") == 0 || text.compare(at, 3, "...") == 0);
    at = text.find('\n', at);
    if (at == std::string::npos) break;
  }
  if (!marker) return 0;
  std::istringstream in(text);
  YAML::Parser parser(in);
  FirstValue first;
  if (!parser.HandleNextDocument(first)) return 0;
  for (int extra = 0; extra < 16; ++extra) {
    FirstValue next;
    if (!parser.HandleNextDocument(next)) return 0;
    if (next.line > 0) return next.line;
  }
  return 0;
}

// The offset of the first byte that does not belong to well-formed UTF-8
// (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or
// npos. Every string gcsim writes (summary.json, reports) comes from here,
// and JSON must be UTF-8.
size_t first_non_utf8(const std::string& text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = b[i];
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) { len = 3; lo = 0xA0; }
    else if (c == 0xED) { len = 3; hi = 0x9F; }
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) { len = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) { len = 4; hi = 0x8F; }
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      const unsigned cont = b[i + k];
      if (k == 1 ? (cont < lo || cont > hi) : (cont < 0x80 || cont > 0xBF)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

}  // namespace

YAML::Node parse_yaml_document(const std::string& text, const std::string& name) {
  if (const size_t bad = first_non_utf8(text); bad != std::string::npos) {
    const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n'));
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw ConfigError(name, line, "",
                      std::string("byte ") + byte + " is not UTF-8 text; save the file as UTF-8 "
                      "(gcsim's outputs are JSON and markdown, which must be UTF-8)");
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
    if (const int line = second_document_line(text)) {
      throw ConfigError(name, line, "",
                        "a second YAML document (after '---'): a file holds one document, and "
                        "everything after the first would be ignored; remove it or move it to "
                        "its own file");
    }
  } catch (const YAML::DeepRecursion& e) {
    throw ConfigError(name, e.mark.line + 1, "",
                      "nesting depth exceeded: more than " + std::to_string(kMaxYamlDepth) +
                          " levels of maps and lists");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(name, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
  DocumentCheck(name).run(root);
  return root;
}

}  // namespace gcsim::sim::config
