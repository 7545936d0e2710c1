// Reads one YAML map onto typed values, and records as it goes both the
// resolved value (defaults filled in, units canonical) and a one-line doc per
// key. Every key a reader was not asked for is an error with a suggestion,
// raised by finish(). Models never see YAML: loaders in sim/cli use this
// class to fill the models' plain Config structs.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/config/config_error.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::sim::config {

using Json = nlohmann::ordered_json;

// Shared by all readers of one config: where it came from, which paths the
// command line overrode, and the docs collected for `gcsim check`.
struct ConfigSource {
  std::string file;
  std::map<std::string, std::string> overrides;  // dotted path -> "-s path=value"
  std::vector<std::pair<std::string, std::string>> docs;  // dotted path -> doc
  std::set<std::string> documented;
};

class ConfigReader {
 public:
  // `node` must be a map (or null, read as empty); `path` is its dotted key.
  ConfigReader(YAML::Node node, std::string path, std::shared_ptr<ConfigSource> source,
               Json* resolved);

  bool has(const std::string& key) const;
  const std::string& path() const { return path_; }
  const ConfigSource& source() const { return *source_; }

  // Each getter: `fallback` nullopt means the key is required.
  int64_t get_int(const std::string& key, std::optional<int64_t> fallback, const char* doc);
  // An integer that must lie in [lo, hi]; checked before any narrowing, so
  // 2^32 + 1 is refused rather than read as 1.
  int64_t get_int_in(const std::string& key, std::optional<int64_t> fallback, const char* doc,
                     int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max());
  double get_double(const std::string& key, std::optional<double> fallback, const char* doc);
  bool get_bool(const std::string& key, std::optional<bool> fallback, const char* doc);
  std::string get_string(const std::string& key, std::optional<std::string> fallback,
                         const char* doc);
  // A string that must be one of `choices`.
  std::string get_choice(const std::string& key, const std::vector<std::string>& choices,
                         std::optional<std::string> fallback, const char* doc);
  Bytes get_bytes(const std::string& key, std::optional<Bytes> fallback, const char* doc);
  Bandwidth get_bandwidth(const std::string& key, std::optional<Bandwidth> fallback,
                          const char* doc);
  Duration get_duration(const std::string& key, std::optional<Duration> fallback,
                        const char* doc);
  FlopRate get_flop_rate(const std::string& key, std::optional<FlopRate> fallback,
                         const char* doc);
  std::vector<int64_t> get_int_list(const std::string& key, const char* doc);
  std::vector<std::string> get_string_list(const std::string& key, const char* doc);
  // A file path; a relative one is taken beside the config file (as the
  // user writing the config expects) and recorded as an absolute path, so
  // that the resolved config names the same file wherever it is saved.
  // Returns the absolute path ("" for an empty fallback).
  std::string get_path(const std::string& key, std::optional<std::string> fallback,
                       const char* doc);

  // A nested map; absent keys give an empty map (all defaults) unless required.
  ConfigReader child(const std::string& key, const char* doc, bool required = false);
  // A list of maps.
  std::vector<ConfigReader> child_list(const std::string& key, const char* doc);
  // The raw node, for keys whose shape varies (`ranks: all` or a list).
  YAML::Node raw(const std::string& key, const char* doc);

  // Records the resolved value of a key read with raw() (whose shape
  // varies), so that `gcsim check` and summary.json `config` reproduce it.
  void resolve(const std::string& key, Json value) { record(key, std::move(value)); }

  // Declares a key as known without reading it (read by another reader).
  void allow(const std::string& key) { known_.push_back(key); }

  // Raises ConfigError for the first key present but never asked for.
  void finish() const;

  // Errors located at this map or at one of its keys.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  int line_of(const std::string& key) const;

 private:
  std::optional<YAML::Node> lookup(const std::string& key, const char* doc);
  // Reads a scalar key of type T, recording it (or its fallback) as resolved.
  template <typename T>
  T get_scalar(const std::string& key, std::optional<T> fallback, const char* doc,
               const char* type_name);
  template <typename T>
  T scalar_as(const YAML::Node& n, const std::string& key, const char* type_name) const;
  std::string key_path(const std::string& key) const;
  void record(const std::string& key, Json value);

  YAML::Node node_;
  std::string path_;
  std::shared_ptr<ConfigSource> source_;
  Json* resolved_;
  std::vector<std::string> known_;
};

// Loads FILE (at most kMaxConfigBytes, one strict YAML document: see
// input_file.h and yaml_document.h), applies `-s a.b.c=value` overrides, and
// returns the root node. Unreadable files, YAML syntax errors and bad
// overrides become ConfigError. `what` names the file's role in messages.
YAML::Node load_yaml_file(const std::string& file, const std::vector<std::string>& overrides,
                          ConfigSource& source, const char* what = "config");

// Parses YAML text (a preset embedded in the binary, a test's config).
YAML::Node load_yaml_text(const std::string& text, const std::string& name);

// Prints resolved JSON as YAML, each documented key preceded by its doc.
std::string to_documented_yaml(const Json& resolved, const ConfigSource& source);

}  // namespace gcsim::sim::config
