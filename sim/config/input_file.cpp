#include "sim/config/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/config/config_error.h"

namespace gcsim::sim::config {

bool path_exists(const std::string& path, std::string* why) {
  std::error_code ec;
  const bool there = std::filesystem::exists(path, ec);
  if (why) *why = ec ? ec.message() : "";
  return there && !ec;
}

std::string why_suffix(const std::string& why) { return why.empty() ? "" : " (" + why + ")"; }


namespace {

constexpr size_t kChunk = 1 << 16;

// Opens `path` for reading, refusing what cannot be a text file before a
// byte is read. Returns -1 with `error` set.
int open_input(const std::string& path, int64_t cap, const std::string& what, std::string& error) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    error = "cannot open the " + what + " file: " + std::strerror(errno) +
            " (check the path and permissions)";
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "is a directory, not a " + what + " file";
    return -1;
  }
  if (S_ISREG(st.st_mode) && st.st_size > cap) {
    error = "the " + what + " file is " + describe_cap(st.st_size) + ", over the " +
            describe_cap(cap) + " limit for " + what + " files";
    return -1;
  }
  // O_NONBLOCK so that a FIFO without a writer does not hang the open;
  // reads then block as usual (a FIFO without a writer reads as empty).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open the " + what + " file: " + std::strerror(errno) +
            " (check the path and permissions)";
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string too_large(const std::string& what, int64_t cap) {
  return "the " + what + " file goes on past the " + describe_cap(cap) + " limit for " + what +
         " files (a device such as /dev/zero, or the wrong file?)";
}

// A NUL byte means binary data, which no input of gcsim is.
bool check_text(const std::string& text, int64_t offset, const std::string& what,
                std::string& error) {
  const size_t nul = text.find('\0');
  if (nul == std::string::npos) return true;
  error = "is not a text " + what + " file (byte " + std::to_string(offset + static_cast<int64_t>(nul)) +
          " is NUL: binary data?)";
  return false;
}

}  // namespace

std::string describe_cap(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[48];
  if (v == static_cast<double>(static_cast<int64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(v), units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

bool read_input_file(const std::string& path, int64_t cap, const char* what, std::string& text,
                     std::string& error) {
  text.clear();
  const int fd = open_input(path, cap, what, error);
  if (fd < 0) return false;
  char chunk[kChunk];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("cannot read the ") + what + " file: " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    // Checked per chunk, so that /dev/zero stops at its first byte.
    const std::string piece(chunk, static_cast<size_t>(n));
    if (!check_text(piece, static_cast<int64_t>(text.size()), what, error)) {
      ::close(fd);
      return false;
    }
    if (static_cast<int64_t>(text.size()) + n > cap) {
      error = too_large(what, cap);
      ::close(fd);
      return false;
    }
    text += piece;
  }
  ::close(fd);
  return true;
}

std::string read_input_file(const std::string& path, int64_t cap, const char* what) {
  std::string text, error;
  if (!read_input_file(path, cap, what, text, error)) throw ConfigError(path, 0, "", error);
  return text;
}

InputLines::InputLines(const std::string& path, int64_t cap, const char* what)
    : path_(path), what_(what), cap_(cap) {
  fd_ = open_input(path, cap, what_, error_);
}

InputLines::~InputLines() {
  if (fd_ >= 0) ::close(fd_);
}

bool InputLines::fill() {
  if (eof_ || fd_ < 0) return false;
  buffer_.erase(0, pos_);
  pos_ = 0;
  char chunk[kChunk];
  while (true) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = "cannot read the " + what_ + " file: " + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    const std::string piece(chunk, static_cast<size_t>(n));
    if (!check_text(piece, consumed_, what_, error_)) return false;
    if (consumed_ + n > cap_) {
      error_ = too_large(what_, cap_);
      return false;
    }
    consumed_ += n;
    buffer_ += piece;
    return true;
  }
}

std::optional<std::string> InputLines::next() {
  if (!ok()) return std::nullopt;
  while (true) {
    const size_t nl = buffer_.find('\n', pos_);
    const size_t length = (nl == std::string::npos ? buffer_.size() : nl) - pos_;
    if (static_cast<int64_t>(length) > kMaxLineBytes) {
      error_ = "line " + std::to_string(line_ + 1) + " of the " + what_ + " file is longer than " +
               describe_cap(kMaxLineBytes);
      return std::nullopt;
    }
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(pos_, nl - pos_);
      pos_ = nl + 1;
      ++line_;
      return line;
    }
    if (!fill()) {
      if (ok() && static_cast<int64_t>(buffer_.size() - pos_) > kMaxLineBytes) continue;
      if (!ok() || pos_ >= buffer_.size()) return std::nullopt;
      std::string line = buffer_.substr(pos_);  // the last line, without a '\n'
      pos_ = buffer_.size();
      ++line_;
      return line;
    }
  }
}

}  // namespace gcsim::sim::config
