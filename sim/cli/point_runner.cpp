#include "sim/cli/point_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace gcsim::cli {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The first line of a gcsim error, without the "gcsim: error: " prefix.
std::string reason_of(const std::string& err) {
  std::string line = err.substr(0, err.find('\n'));
  const std::string prefix = "gcsim: error: ";
  if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  return line.empty() ? "no output" : line;
}

pid_t spawn(const std::string& exe, const std::string& base, const RunPoint& p) {
  fs::create_directories(p.dir);
  std::vector<std::string> args{exe, "run", base, "-o", p.dir.string(), "-q"};
  for (const auto& o : p.overrides) {
    args.push_back("-s");
    args.push_back(o);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, (p.dir / "stdout.txt").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, (p.dir / "stderr.txt").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + exe + ": " + std::strerror(rc));
  return pid;
}

void collect(RunPoint& p, int wait_status) {
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  const std::string err = read_file(p.dir / "stderr.txt");
  if (code == 0 && fs::exists(p.dir / "summary.json")) {
    p.status = "ok";
    p.summary = nlohmann::ordered_json::parse(read_file(p.dir / "summary.json"));
  } else if (code == 2) {
    p.status = "skipped";
    p.reason = reason_of(err);
  } else {
    p.status = "failed";
    p.reason = "exit status " + std::to_string(code) + ": " + reason_of(err);
  }
}

// This rank's results as one JSON array of [index, status, reason, summary].
std::string pack(const std::vector<RunPoint>& points, const MpiWorld& world) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (size_t i = 0; i < points.size(); ++i) {
    if (!world.owns(i)) continue;
    a.push_back({i, points[i].status, points[i].reason, points[i].summary});
  }
  return a.dump();
}

void unpack(const std::string& text, std::vector<RunPoint>& points) {
  for (const auto& e : nlohmann::ordered_json::parse(text)) {
    RunPoint& p = points.at(e[0].get<size_t>());
    p.status = e[1].get<std::string>();
    p.reason = e[2].get<std::string>();
    p.summary = e[3];
  }
}

}  // namespace

void run_points(const std::string& base_config, std::vector<RunPoint>& points, int jobs,
                const MpiWorld& world, const RunHooks& hooks) {
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<size_t> mine;
  for (size_t i = 0; i < points.size(); ++i) {
    if (world.owns(i)) mine.push_back(i);
  }
  std::map<pid_t, size_t> running;
  size_t next = 0, done = 0;
  bool first_heard = !hooks.on_first || mine.size() <= 1;
  const auto start = std::chrono::steady_clock::now();
  const auto finished = [&](RunPoint& p) {
    ++done;
    if (hooks.on_done) hooks.on_done(p, done, mine.size());
    if (first_heard) return;
    first_heard = true;
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string stop = hooks.on_first(p, wall_s, mine.size() - done);
    if (stop.empty()) return;
    for (; next < mine.size(); ++next, ++done) {
      points[mine[next]].status = "skipped";
      points[mine[next]].reason = stop;
    }
  };
  while (done < mine.size()) {
    // Until the first point is heard, it runs alone.
    const size_t limit = first_heard ? static_cast<size_t>(jobs) : 1;
    while (running.size() < limit && next < mine.size()) {
      RunPoint& p = points[mine[next++]];
      try {
        running[spawn(exe, base_config, p)] = mine[next - 1];
      } catch (const std::runtime_error& e) {
        p.status = "failed";
        p.reason = e.what();
        finished(p);
      }
    }
    if (running.empty()) continue;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) throw std::runtime_error("waitpid failed");
    auto it = running.find(pid);
    if (it == running.end()) continue;
    RunPoint& p = points[it->second];
    running.erase(it);
    collect(p, status);
    finished(p);
  }
  if (world.size() > 1) {
    for (const std::string& part : world.all_gather(pack(points, world))) unpack(part, points);
  }
}

double summary_number(const nlohmann::ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : -1;
}

double summary_step_time(const nlohmann::ordered_json& j) {
  const double s = summary_number(j, "step_time_s");
  return s >= 0 ? s : summary_number(j, "simulated_time_s");
}

bool summary_fits(const nlohmann::ordered_json& j) {
  auto m = j.find("memory");
  if (m == j.end()) return true;
  auto f = m->find("fits");
  return f == m->end() || f->get<bool>();
}

double summary_memory_bytes(const nlohmann::ordered_json& j) {
  auto m = j.find("memory");
  return m == j.end() ? -1 : summary_number(*m, "peak_bytes_per_gpu");
}

double summary_breakdown(const nlohmann::ordered_json& j, const char* key) {
  auto b = j.find("breakdown");
  return b == j.end() ? 0 : std::max(0.0, summary_number(*b, key));
}

double summary_exposed(const nlohmann::ordered_json& j, const char* dim) {
  auto b = j.find("breakdown");
  if (b == j.end()) return 0;
  auto e = b->find("exposed_comm_s");
  return e == b->end() ? 0 : std::max(0.0, summary_number(*e, dim));
}

}  // namespace gcsim::cli
