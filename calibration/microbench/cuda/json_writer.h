// A minimal JSON object builder for the microbenchmark's output (the device
// machine needs nothing beyond the CUDA toolkit to build it). Keys keep the
// order they are added in.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace gcsim::microbench {

class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value) {
    return raw(key, quote(value));
  }
  JsonObject& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonObject& add(const std::string& key, double value) {
    if (!std::isfinite(value)) return raw(key, "null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    return raw(key, buf);
  }
  JsonObject& add(const std::string& key, long long value) { return raw(key, std::to_string(value)); }
  JsonObject& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  JsonObject& add(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  JsonObject& add(const std::string& key, const JsonObject& value) { return raw(key, value.str()); }
  JsonObject& add(const std::string& key, const std::vector<JsonObject>& values) {
    std::string s = "[";
    for (size_t i = 0; i < values.size(); ++i) s += (i ? ",\n  " : "\n  ") + values[i].str();
    return raw(key, s + (values.empty() ? "]" : "\n]"));
  }
  // `value` must already be valid JSON text.
  JsonObject& raw(const std::string& key, const std::string& value) {
    body_ += (body_.empty() ? "" : ", ") + quote(key) + ": " + value;
    return *this;
  }
  std::string str() const { return "{" + body_ + "}"; }

  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += c;
          }
      }
    }
    return out + "\"";
  }

 private:
  std::string body_;
};

}  // namespace gcsim::microbench
