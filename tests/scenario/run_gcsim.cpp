#include "scenario/run_gcsim.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "catch.h"

namespace gcsim::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "gcsim_test_XXXXXX").string();
  if (!mkdtemp(pattern.data())) {
    throw std::runtime_error(std::string("mkdtemp failed: ") + std::strerror(errno));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string source_path(const std::string& relative) {
  return (fs::path(GCSIM_SOURCE_DIR) / relative).string();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << text;
}

nlohmann::ordered_json read_json(const fs::path& path) {
  return nlohmann::ordered_json::parse(read_text(path));
}

GcsimResult run_gcsim(const std::vector<std::string>& args) {
  // The child writes into two files of a private temp dir: no pipes to
  // drain, so a chatty child cannot block on a full pipe.
  TempDir capture;
  const std::string out_path = (capture / "stdout").string();
  const std::string err_path = (capture / "stderr").string();

  std::vector<std::string> argv_storage;
  argv_storage.push_back(GCSIM_BINARY);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
        dup2(err_fd, STDERR_FILENO) < 0) {
      _exit(126);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  GcsimResult r;
  if (WIFEXITED(status)) {
    r.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_status = 128 + WTERMSIG(status);
  }
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

nlohmann::ordered_json run_summary(const std::string& yaml, std::vector<std::string> extra) {
  TempDir tmp;
  write_text(tmp / "config.yaml", yaml);
  std::vector<std::string> args{"run", (tmp / "config.yaml").string(), "-o",
                                (tmp / "out").string(), "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  const GcsimResult r = run_gcsim(args);
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_status == 0);
  return read_json(tmp / "out" / "summary.json");
}

std::string run_bad_config(const std::string& yaml, std::vector<std::string> extra) {
  TempDir tmp;
  write_text(tmp / "config.yaml", yaml);
  std::vector<std::string> args{"run", (tmp / "config.yaml").string(), "-q", "-o",
                                (tmp / "out").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const GcsimResult r = run_gcsim(args);
  CHECK(r.exit_status == 2);
  return r.err;
}

namespace {

// One CSV line split at commas outside double quotes (quotes dropped).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else cur += c;
  }
  out.push_back(cur);
  return out;
}

}  // namespace

std::vector<std::map<std::string, std::string>> run_study(const std::string& study,
                                                          const fs::path& out) {
  const GcsimResult r = run_gcsim({"sweep", source_path(study), "-o", out.string(), "-j", "2", "-q"});
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_status == 0);
  std::istringstream csv(read_text(out / "results.csv"));
  std::string line;
  std::getline(csv, line);
  const std::vector<std::string> header = split_csv(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(csv, line)) {
    const std::vector<std::string> fields = split_csv(line);
    REQUIRE(fields.size() == header.size());
    auto& row = rows.emplace_back();
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
  }
  return rows;
}

}  // namespace gcsim::test
