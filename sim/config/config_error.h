// The one error type for bad input: it names the file, the line and the key,
// and the command line turns it into exit status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace gcsim::sim::config {

class ConfigError : public std::runtime_error {
 public:
  // line is 1-based; 0 means "no line" (a command-line override, a missing file).
  ConfigError(std::string file, int line, std::string key, std::string message)
      : std::runtime_error(compose(file, line, key, message)),
        file_(std::move(file)),
        line_(line),
        key_(std::move(key)),
        message_(std::move(message)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }
  const std::string& message() const { return message_; }

 private:
  static std::string compose(const std::string& file, int line, const std::string& key,
                             const std::string& message) {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    if (!key.empty()) s += "key '" + key + "': ";
    return s + message;
  }
  std::string file_;
  int line_;
  std::string key_;
  std::string message_;
};

}  // namespace gcsim::sim::config
