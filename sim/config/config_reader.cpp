#include "sim/config/config_reader.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "sim/config/did_you_mean.h"
#include "sim/config/input_file.h"
#include "sim/config/yaml_document.h"
#include "sim/config/unit_parse.h"

namespace gcsim::sim::config {

namespace {

const char* node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "empty";
    default: return "undefined";
  }
}

int mark_line(const YAML::Node& n) {
  if (!n.IsDefined()) return 0;
  const YAML::Mark m = n.Mark();
  return m.line >= 0 ? m.line + 1 : 0;
}

// Throws for `key`, blaming the `-s` override that set it or any map or list
// above it (whose nodes carry lines of the override's text, not the file's).
[[noreturn]] void raise(const ConfigSource& source, int line, const std::string& key,
                        const std::string& message) {
  for (const auto& [path, text] : source.overrides) {
    if (key.compare(0, path.size(), path) == 0 &&
        (key.size() == path.size() || key[path.size()] == '.' || key[path.size()] == '[')) {
      throw ConfigError("command line (" + text + ")", 0, key, message);
    }
  }
  throw ConfigError(source.file, line, key, message);
}

}  // namespace

ConfigReader::ConfigReader(YAML::Node node, std::string path,
                           std::shared_ptr<ConfigSource> source, Json* resolved)
    : node_(std::move(node)), path_(std::move(path)), source_(std::move(source)),
      resolved_(resolved) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    raise(*source_, mark_line(node_), path_,
          std::string("expected a map of keys, got ") + node_kind(node_));
  }
  if (resolved_ && !resolved_->is_object()) *resolved_ = Json::object();
}

std::string ConfigReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool ConfigReader::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined();
}

int ConfigReader::line_of(const std::string& key) const {
  if (node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.Scalar() == key) return mark_line(kv.first);
    }
  }
  return mark_line(node_);
}

void ConfigReader::fail(const std::string& key, const std::string& message) const {
  raise(*source_, line_of(key), key_path(key), message);
}

void ConfigReader::fail_here(const std::string& message) const {
  raise(*source_, mark_line(node_), path_, message);
}

std::optional<YAML::Node> ConfigReader::lookup(const std::string& key, const char* doc) {
  known_.push_back(key);
  const std::string full = key_path(key);
  if (source_->documented.insert(full).second) source_->docs.emplace_back(full, doc);
  if (!node_.IsMap()) return std::nullopt;
  YAML::Node n = node_[key];
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  return n;
}

void ConfigReader::record(const std::string& key, Json value) {
  if (resolved_) (*resolved_)[key] = std::move(value);
}

template <typename T>
T ConfigReader::scalar_as(const YAML::Node& n, const std::string& key,
                          const char* type_name) const {
  if (!n.IsScalar()) fail(key, std::string("expected ") + type_name + ", got " + node_kind(n));
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    fail(key, std::string("expected ") + type_name + ", got '" + n.Scalar() + "'");
  }
}

template <typename T>
T ConfigReader::get_scalar(const std::string& key, std::optional<T> fallback, const char* doc,
                           const char* type_name) {
  auto n = lookup(key, doc);
  if (!n) {
    if (!fallback) fail_here("missing required key '" + key + "' (" + doc + ")");
    record(key, *fallback);
    return *fallback;
  }
  T v = scalar_as<T>(*n, key, type_name);
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) fail(key, "expected a finite number, got '" + n->Scalar() + "'");
  }
  record(key, v);
  return v;
}

int64_t ConfigReader::get_int(const std::string& key, std::optional<int64_t> fallback,
                              const char* doc) {
  return get_scalar(key, fallback, doc, "an integer");
}

int64_t ConfigReader::get_int_in(const std::string& key, std::optional<int64_t> fallback,
                                 const char* doc, int64_t lo, int64_t hi) {
  const int64_t v = get_int(key, fallback, doc);
  if (v < lo || v > hi) {
    fail(key, (hi == std::numeric_limits<int64_t>::max()
                   ? "must be at least " + std::to_string(lo)
                   : "must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]") +
                  ", got " + std::to_string(v));
  }
  return v;
}

double ConfigReader::get_double(const std::string& key, std::optional<double> fallback,
                                const char* doc) {
  return get_scalar(key, fallback, doc, "a number");
}

bool ConfigReader::get_bool(const std::string& key, std::optional<bool> fallback,
                            const char* doc) {
  return get_scalar(key, fallback, doc, "true or false");
}

std::string ConfigReader::get_string(const std::string& key,
                                     std::optional<std::string> fallback, const char* doc) {
  return get_scalar(key, std::move(fallback), doc, "a string");
}

std::string ConfigReader::get_choice(const std::string& key,
                                     const std::vector<std::string>& choices,
                                     std::optional<std::string> fallback, const char* doc) {
  auto n = lookup(key, doc);
  std::string v;
  if (!n) {
    if (!fallback) fail_here("missing required key '" + key + "' (" + doc + ")");
    v = *fallback;
  } else {
    v = scalar_as<std::string>(*n, key, "a string");
  }
  bool ok = false;
  for (const auto& c : choices) ok = ok || c == v;
  if (!ok) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : " | ") + c;
    fail(key, "'" + v + "' is not one of " + list + did_you_mean(v, choices));
  }
  record(key, v);
  return v;
}

namespace {
template <typename T, typename Parse, typename Format>
T get_unit(ConfigReader& r, std::optional<YAML::Node> n, const std::string& key,
           std::optional<T> fallback, const char* doc, Parse parse, Format format, Json* out) {
  T v;
  if (!n) {
    if (!fallback) r.fail_here("missing required key '" + key + "' (" + doc + ")");
    v = *fallback;
  } else {
    if (!n->IsScalar()) r.fail(key, "expected a quantity with a unit, got a map or list");
    std::string error;
    auto parsed = parse(n->Scalar(), &error);
    if (!parsed) r.fail(key, error);
    v = *parsed;
  }
  if (out) (*out)[key] = format(v);
  return v;
}
}  // namespace

Bytes ConfigReader::get_bytes(const std::string& key, std::optional<Bytes> fallback,
                              const char* doc) {
  Bytes b = get_unit<Bytes>(*this, lookup(key, doc), key, fallback, doc, parse_bytes,
                            format_bytes, resolved_);
  if (b.count() < 0) fail(key, "a byte size must not be negative");
  return b;
}

Bandwidth ConfigReader::get_bandwidth(const std::string& key, std::optional<Bandwidth> fallback,
                                      const char* doc) {
  Bandwidth bw = get_unit<Bandwidth>(*this, lookup(key, doc), key, fallback, doc,
                                     parse_bandwidth, format_bandwidth, resolved_);
  if (!(bw.bytes_per_s() > 0)) fail(key, "a bandwidth must be positive");
  return bw;
}

Duration ConfigReader::get_duration(const std::string& key, std::optional<Duration> fallback,
                                    const char* doc) {
  Duration d = get_unit<Duration>(*this, lookup(key, doc), key, fallback, doc, parse_duration,
                                  format_duration, resolved_);
  if (d < Duration::zero()) fail(key, "a duration must not be negative");
  return d;
}

FlopRate ConfigReader::get_flop_rate(const std::string& key, std::optional<FlopRate> fallback,
                                     const char* doc) {
  FlopRate r = get_unit<FlopRate>(*this, lookup(key, doc), key, fallback, doc, parse_flop_rate,
                                  format_flop_rate, resolved_);
  if (!(r.flops_per_s() > 0)) fail(key, "a flop rate must be positive");
  return r;
}

std::vector<int64_t> ConfigReader::get_int_list(const std::string& key, const char* doc) {
  auto n = lookup(key, doc);
  std::vector<int64_t> v;
  if (!n) fail_here("missing required key '" + key + "' (" + doc + ")");
  if (!n->IsSequence()) fail(key, std::string("expected a list of integers, got ") + node_kind(*n));
  for (const auto& item : *n) v.push_back(scalar_as<int64_t>(item, key, "an integer"));
  record(key, v);
  return v;
}

std::vector<std::string> ConfigReader::get_string_list(const std::string& key, const char* doc) {
  auto n = lookup(key, doc);
  std::vector<std::string> v;
  if (!n) {
    record(key, Json::array());
    return v;
  }
  if (n->IsScalar()) {
    v.push_back(n->Scalar());  // `after: x` is the one-element list [x]
  } else if (n->IsSequence()) {
    for (const auto& item : *n) v.push_back(scalar_as<std::string>(item, key, "a string"));
  } else {
    fail(key, std::string("expected a list of names, got ") + node_kind(*n));
  }
  record(key, v);
  return v;
}

std::string ConfigReader::get_path(const std::string& key, std::optional<std::string> fallback,
                                   const char* doc) {
  const std::string written = get_scalar(key, std::move(fallback), doc, "a path");
  if (written.empty()) return written;
  std::filesystem::path p(written);
  if (p.is_relative()) p = std::filesystem::path(source_->file).parent_path() / p;
  const std::string absolute = std::filesystem::absolute(p).lexically_normal().string();
  record(key, absolute);
  return absolute;
}

ConfigReader ConfigReader::child(const std::string& key, const char* doc, bool required) {
  auto n = lookup(key, doc);
  if (!n && required) fail_here("missing required key '" + key + "' (" + doc + ")");
  Json* out = nullptr;
  if (resolved_) {
    (*resolved_)[key] = Json::object();
    out = &(*resolved_)[key];
  }
  if (n && !n->IsMap()) fail(key, std::string("expected a map of keys, got ") + node_kind(*n));
  return ConfigReader(n ? *n : YAML::Node(), key_path(key), source_, out);
}

std::vector<ConfigReader> ConfigReader::child_list(const std::string& key, const char* doc) {
  auto n = lookup(key, doc);
  std::vector<ConfigReader> items;
  if (!n) fail_here("missing required key '" + key + "' (" + doc + ")");
  if (!n->IsSequence()) fail(key, std::string("expected a list, got ") + node_kind(*n));
  Json* out = nullptr;
  if (resolved_) {
    (*resolved_)[key] = Json::array();
    out = &(*resolved_)[key];
    for (size_t i = 0; i < n->size(); ++i) out->push_back(Json::object());
  }
  // Pointers into `out` stay valid: the array is sized before any is taken.
  for (size_t i = 0; i < n->size(); ++i) {
    const YAML::Node item = (*n)[i];
    if (!item.IsMap()) {
      raise(*source_, mark_line(item), key_path(key) + "[" + std::to_string(i) + "]",
            std::string("expected a map, got ") + node_kind(item));
    }
    items.emplace_back(item, key_path(key) + "[" + std::to_string(i) + "]", source_,
                       out ? &(*out)[i] : nullptr);
  }
  return items;
}

YAML::Node ConfigReader::raw(const std::string& key, const char* doc) {
  auto n = lookup(key, doc);
  return n ? *n : YAML::Node();
}

void ConfigReader::finish() const {
  if (!node_.IsMap()) return;
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (const auto& k : known_) known = known || k == key;
    if (!known) {
      const std::string where = path_.empty() ? "at the top level" : "in '" + path_ + "'";
      fail(key, "unknown key " + where + did_you_mean(key, known_));
    }
  }
}

// ---------------------------------------------------------------------------

namespace {

// One `-s key.path=value` applied to the parsed config. Every error names
// the option, never the file: the file may be fine.
class Override {
 public:
  Override(const std::string& text, ConfigSource& source)
      : text_(text), where_("command line (-s " + text + ")"), source_(source) {}

  void apply(YAML::Node root) {
    const auto eq = text_.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError(where_, 0, "", "expected -s key.path=value, e.g. -s cluster.nodes=4");
    }
    const std::string path = text_.substr(0, eq);
    std::vector<std::string> parts;
    size_t from = 0;
    while (true) {
      const size_t dot = path.find('.', from);
      parts.push_back(path.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
      if (dot == std::string::npos) break;
      from = dot + 1;
    }
    for (const auto& p : parts) {
      if (p.empty()) {
        throw ConfigError(where_, 0, path,
                          "an empty key in the path (two dots, or a dot at either end)");
      }
    }
    YAML::Node value;
    try {
      value = parse_yaml_document(text_.substr(eq + 1), where_);
    } catch (const ConfigError& e) {
      throw ConfigError(where_, 0, path, "bad value: " + e.message());
    }
    YAML::Node cur = root;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = step(cur, parts, i, true);
      cur.reset(next);
    }
    set(cur, parts, value);
    source_.overrides[dotted(parts, parts.size())] = "-s " + text_;
  }

 private:
  static bool is_index(const std::string& p) {
    return !p.empty() && std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c); });
  }

  // The dotted path readers use for parts [0, n): list items as name[i].
  static std::string dotted(const std::vector<std::string>& parts, size_t n) {
    std::string d;
    for (size_t i = 0; i < n; ++i) {
      d += is_index(parts[i]) ? "[" + parts[i] + "]" : (d.empty() ? "" : ".") + parts[i];
    }
    return d;
  }

  size_t list_index(const YAML::Node& list, const std::vector<std::string>& parts, size_t i) const {
    const std::string at = dotted(parts, i) + "." + parts[i];
    if (!is_index(parts[i]) || parts[i].size() > 9) {
      throw ConfigError(where_, 0, at,
                        "'" + dotted(parts, i) + "' is a list: expected a list index from 0 to " +
                            std::to_string(static_cast<long>(list.size()) - 1) + ", got '" +
                            parts[i] + "'");
    }
    const size_t idx = std::stoul(parts[i]);
    if (idx >= list.size()) {
      throw ConfigError(where_, 0, at,
                        "list index " + parts[i] + " out of range: '" + dotted(parts, i) +
                            "' has " + std::to_string(list.size()) + " items");
    }
    return idx;
  }

  // The node under cur for parts[i], creating a map there if absent (the
  // created path is recorded, so that a misspelt key blames this option).
  YAML::Node step(YAML::Node cur, const std::vector<std::string>& parts, size_t i, bool create) {
    if (cur.IsSequence()) return cur[list_index(cur, parts, i)];
    if (cur.IsScalar()) {
      throw ConfigError(where_, 0, dotted(parts, i + 1),
                        "cannot set a key under '" + parts[i - 1] + "': it is a value, not a map");
    }
    if (create && (!cur[parts[i]].IsDefined() || cur[parts[i]].IsNull())) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      source_.overrides[dotted(parts, i + 1)] = "-s " + text_;
    }
    return cur[parts[i]];
  }

  void set(YAML::Node parent, const std::vector<std::string>& parts, const YAML::Node& value) {
    const size_t last = parts.size() - 1;
    if (parent.IsScalar()) {
      throw ConfigError(where_, 0, dotted(parts, parts.size()),
                        "cannot set a key under '" + parts[last - 1] + "': it is a value, not a map");
    }
    if (parent.IsSequence()) {
      parent[list_index(parent, parts, last)] = value;
    } else {
      parent[parts[last]] = value;
    }
  }

  const std::string& text_;
  const std::string where_;
  ConfigSource& source_;
};

}  // namespace

YAML::Node load_yaml_file(const std::string& file, const std::vector<std::string>& overrides,
                          ConfigSource& source, const char* what) {
  source.file = file;
  YAML::Node root = parse_yaml_document(read_input_file(file, kMaxConfigBytes, what), file);
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(file, 1, "", "the top level must be a map of keys");
  for (const std::string& text : overrides) Override(text, source).apply(root);
  return root;
}

YAML::Node load_yaml_text(const std::string& text, const std::string& name) {
  return parse_yaml_document(text, name);
}

namespace {
void emit_json(YAML::Emitter& out, const Json& j, const std::string& path,
               const std::map<std::string, std::string>& docs) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      const std::string child = path.empty() ? k : path + "." + k;
      // A doc trails its own key's line ("nodes: 1  # number of nodes"); a
      // comment before the key would trail the previous key's line instead.
      auto d = docs.find(child);
      const bool block = v.is_object() || (v.is_array() && !std::all_of(v.begin(), v.end(), [](
                                               const Json& e) { return e.is_primitive(); }));
      out << YAML::Key << k << YAML::Value;
      if (d != docs.end() && block) out << YAML::Comment(d->second);
      emit_json(out, v, child, docs);
      if (d != docs.end() && !block) out << YAML::Comment(d->second);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    bool scalars = std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_primitive(); });
    out << (scalars ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (size_t i = 0; i < j.size(); ++i) {
      emit_json(out, j[i], path + "[" + std::to_string(i) + "]", docs);
    }
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << j.get<std::string>();
  } else if (j.is_boolean()) {
    out << j.get<bool>();
  } else if (j.is_number_integer()) {
    out << j.get<int64_t>();
  } else if (j.is_number()) {
    out << j.get<double>();
  } else {
    out << YAML::Null;
  }
}
}  // namespace

std::string to_documented_yaml(const Json& resolved, const ConfigSource& source) {
  std::map<std::string, std::string> docs(source.docs.begin(), source.docs.end());
  YAML::Emitter out;
  emit_json(out, resolved, "", docs);
  return std::string(out.c_str()) + "\n";
}

}  // namespace gcsim::sim::config
