// Every file a user names (a config, a study, a profile, a quiz answers
// file, a serving trace) is read through here, with a stated size cap, so
// that /dev/zero, /dev/urandom, a FIFO, a directory or a 10 GB log given by
// mistake ends with a message instead of exhausting memory or never
// returning. Regular files are refused from their size before any byte is
// read; anything else is read up to the cap and refused beyond it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gcsim::sim::config {

// Caps, in bytes, stated in README.md ("Limits").
inline constexpr int64_t kMaxConfigBytes = 16LL << 20;   // YAML configs, studies, profiles, answers
inline constexpr int64_t kMaxDataBytes = 256LL << 20;    // serving traces, measurement JSON
inline constexpr int64_t kMaxLineBytes = 64LL << 10;     // one line of a streamed trace

// "16 MiB": a cap as the messages print it.
std::string describe_cap(int64_t bytes);

// Whether `path` names an existing file or folder, without throwing: a
// name the system cannot even look up (longer than NAME_MAX, a part that is
// not a folder, no permission) is "not there", and `why` (when given) gets
// the system's reason, e.g. "File name too long"; "" otherwise.
bool path_exists(const std::string& path, std::string* why = nullptr);

// " (File name too long)" from path_exists' `why`, or "" when it is empty.
std::string why_suffix(const std::string& why);

// Reads all of `path` (at most `cap` bytes) into `text`. On failure returns
// false and sets `error` to one sentence naming the path and what is wrong
// (missing, a directory, unreadable, larger than the cap, binary). `what`
// names the file's role ("config", "serving trace") for the message.
bool read_input_file(const std::string& path, int64_t cap, const char* what, std::string& text,
                     std::string& error);

// The same, throwing ConfigError(path, 0, "", error) on failure.
std::string read_input_file(const std::string& path, int64_t cap, const char* what);

// Reads a text file one line at a time, for inputs too large to hold twice
// (serving traces): at most `cap` bytes in all and kMaxLineBytes per line.
class InputLines {
 public:
  // Opens `path`; check ok() and error() before reading.
  InputLines(const std::string& path, int64_t cap, const char* what);
  ~InputLines();
  InputLines(const InputLines&) = delete;
  InputLines& operator=(const InputLines&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // The next line without its '\n'; nullopt at the end of the file or on an
  // error (then ok() is false and error() says why).
  std::optional<std::string> next();
  int line_number() const { return line_; }

 private:
  bool fill();

  std::string path_;
  std::string what_;
  int64_t cap_;
  int fd_ = -1;
  std::string buffer_;
  size_t pos_ = 0;
  int64_t consumed_ = 0;
  bool eof_ = false;
  int line_ = 0;
  std::string error_;
};

}  // namespace gcsim::sim::config
