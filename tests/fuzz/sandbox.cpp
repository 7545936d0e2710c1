#include "tests/fuzz/sandbox.h"

#include <cxxabi.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <sstream>
#include <typeinfo>
#include <vector>

namespace gcsim::fuzz {

namespace {

constexpr const char* kBacktraceMark = "==gcsim_fuzz backtrace==";
constexpr size_t kMaxCapturedStderr = 64 * 1024;

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The stack, after a marker, on stderr (the parent's pipe); no allocation.
void crash_handler_stack_only() {
  void* frames[48];
  const int n = ::backtrace(frames, 48);
  ::write(2, "\n", 1);
  ::write(2, kBacktraceMark, std::strlen(kBacktraceMark));
  ::write(2, "\n", 1);
  ::backtrace_symbols_fd(frames, n, 2);
}

// In the child: a fatal signal (or the CPU limit's SIGXCPU: where it was
// spinning) prints the stack, then ends the process with the same signal.
void crash_handler(int sig) {
  crash_handler_stack_only();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// In the child: an allocation the address-space limit refuses prints the
// stack (where the memory went), then fails as usual.
void out_of_memory_handler() {
  crash_handler_stack_only();
  std::set_new_handler(nullptr);
  throw std::bad_alloc();
}

void install_crash_handlers() {
  static char alt_stack[1 << 16];  // stack overflows still get a backtrace
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);
  void* warm[1];
  ::backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  struct sigaction sa{};
  sa.sa_handler = crash_handler;
  sa.sa_flags = SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL, SIGXCPU}) ::sigaction(sig, &sa, nullptr);
  std::set_new_handler(out_of_memory_handler);
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
  rlimit r{soft, hard};
  ::setrlimit(resource, &r);
}

[[noreturn]] void child(const std::vector<Stage>& stages, const SandboxLimits& limits, int result_fd,
                        int err_fd) {
  const int null_fd = ::open("/dev/null", O_RDWR);
  ::dup2(null_fd, 0);
  ::dup2(null_fd, 1);
  ::dup2(err_fd, 2);
  ::setsid();  // no controlling terminal: a config naming /dev/tty cannot block on it
  set_limit(RLIMIT_CPU, static_cast<rlim_t>(limits.cpu_s), static_cast<rlim_t>(limits.cpu_s + 1));
  const rlim_t bytes = static_cast<rlim_t>(limits.memory_mb) << 20;
  set_limit(RLIMIT_AS, bytes, bytes);
  set_limit(RLIMIT_CORE, 0, 0);
  install_crash_handlers();
  for (const Stage& stage : stages) {
    write_all(result_fd, "stage " + stage.name + "\n");
    bool go_on = false;
    try {
      go_on = stage.body();
    } catch (const std::bad_alloc&) {
      write_all(result_fd, "oom\n");
      ::_exit(0);
    } catch (const std::exception& e) {
      std::string what = e.what();
      for (char& c : what) c = c == '\n' ? ' ' : c;
      write_all(result_fd, "exception " + demangle(typeid(e).name()) + "\t" + what + "\n");
      ::_exit(0);
    } catch (...) {
      const std::type_info* t = abi::__cxa_current_exception_type();
      write_all(result_fd, "exception " + (t ? demangle(t->name()) : std::string("unknown")) +
                               "\t(not a std::exception)\n");
      ::_exit(0);
    }
    if (!go_on) {
      write_all(result_fd, "rejected\n");
      ::_exit(0);
    }
  }
  write_all(result_fd, "accepted\n");
  ::_exit(0);
}

// Reads both pipes until the child closes them or `deadline` passes; false
// on the deadline.
bool drain(int result_fd, int err_fd, std::string& result, std::string& err,
           std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{result_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&result, &err};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0 ? false : true;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
      } else if (sinks[i]->size() < kMaxCapturedStderr) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      }
    }
  }
  return true;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGXCPU: return "SIGXCPU";
    default: return "signal";
  }
}

// Frames of the standard library (a container growing, operator new): the
// caller below them says more.
bool library_frame(const std::string& name) {
  if (name.rfind("operator new", 0) == 0 || name.find("__gnu_cxx") != std::string::npos) return true;
  const size_t s = name.find("std::"), g = name.find("gcsim::");
  return s != std::string::npos && (g == std::string::npos || s < g);
}

bool uninteresting_frame(const std::string& name) {
  if (library_frame(name) || name.find("out_of_memory_handler") != std::string::npos) return true;
  for (const char* skip : {"crash_handler", "abort", "raise", "gsignal", "__GI_", "__pthread_kill",
                           "__cxa_", "std::terminate", "__cxxabiv1", "__gnu_cxx::__verbose",
                           "__assert", "_Unwind", "__libc_", "__restore_rt", "killpg"}) {
    if (name.find(skip) != std::string::npos) return true;
  }
  return name.empty();
}

// The top two frames of ours in the handler's backtrace, as function names.
std::string top_frames(const std::string& err) {
  const size_t mark = err.find(kBacktraceMark);
  if (mark == std::string::npos) return {};
  std::istringstream lines(err.substr(mark));
  std::string line, out;
  int taken = 0;
  while (taken < 2 && std::getline(lines, line)) {
    const size_t open = line.find('('), plus = line.find('+', open);
    if (open == std::string::npos || plus == std::string::npos) continue;
    std::string name = demangle(line.substr(open + 1, plus - open - 1).c_str());
    const size_t paren = name.find('(');
    if (paren != std::string::npos) name.resize(paren);
    if (uninteresting_frame(name)) continue;
    out += (taken++ ? " < " : "") + name;
  }
  return out;
}

// A line of the child's stderr that names the failure: an assertion, an
// uncaught exception's type, a libstdc++ debug check.
std::string stderr_reason(const std::string& err) {
  std::istringstream lines(err);
  std::string line;
  while (std::getline(lines, line)) {
    for (const char* key : {"Assertion", "terminate called", "what():", "error:", "runtime error"}) {
      if (line.find(key) != std::string::npos) return line;
    }
  }
  return {};
}

Verdict classify(const std::string& result, const std::string& err, int status, bool timed_out,
                 const SandboxLimits& limits) {
  Verdict v;
  std::istringstream lines(result);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.rfind("stage ", 0) == 0) {
      v.stage = line.substr(6);
    } else {
      last = line;
    }
  }
  const std::string at = " (" + (v.stage.empty() ? std::string("start") : v.stage) + ")";
  if (timed_out || (WIFSIGNALED(status) &&
                    (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL))) {
    v.kind = Verdict::Kind::timeout;
    v.detail = timed_out ? "wall-clock limit" : "over " + std::to_string(limits.cpu_s) + " s of CPU";
    const std::string frames = top_frames(err);
    v.signature = "timeout" + at + (frames.empty() ? "" : " at " + frames);
    return v;
  }
  if (last == "accepted" || last == "rejected") {
    v.kind = last == "accepted" ? Verdict::Kind::accepted : Verdict::Kind::rejected;
    return v;
  }
  if (last == "oom" || (WIFSIGNALED(status) && err.find("bad_alloc") != std::string::npos)) {
    v.kind = Verdict::Kind::out_of_memory;
    v.detail = "allocation beyond " + std::to_string(limits.memory_mb) + " MiB of address space";
    const std::string frames = top_frames(err);
    v.signature = "out-of-memory" + at + (frames.empty() ? "" : " at " + frames);
    return v;
  }
  if (last.rfind("exception ", 0) == 0) {
    v.kind = Verdict::Kind::exception;
    const std::string body = last.substr(10);
    const size_t tab = body.find('\t');
    const std::string type = body.substr(0, tab);
    const std::string what = tab == std::string::npos ? "" : body.substr(tab + 1);
    v.detail = type + ": " + what;
    v.signature = "exception" + at + " " + type + ": " + normalize_message(what);
    return v;
  }
  v.kind = Verdict::Kind::crash;
  if (WIFSIGNALED(status)) {
    const std::string frames = top_frames(err);
    const std::string reason = stderr_reason(err);
    v.signature = std::string("crash") + at + " " + signal_name(WTERMSIG(status)) +
                  (reason.empty() ? "" : " " + normalize_message(reason, 100)) +
                  (frames.empty() ? "" : " at " + frames);
  } else {
    v.signature = "crash" + at + " exit " + std::to_string(WEXITSTATUS(status)) + " without a result";
  }
  v.detail = err.size() > 4000 ? err.substr(0, 2000) + "\n...\n" + err.substr(err.size() - 2000) : err;
  return v;
}

}  // namespace

const char* kind_name(Verdict::Kind kind) {
  switch (kind) {
    case Verdict::Kind::accepted: return "accepted";
    case Verdict::Kind::rejected: return "rejected";
    case Verdict::Kind::exception: return "exception";
    case Verdict::Kind::crash: return "crash";
    case Verdict::Kind::out_of_memory: return "out-of-memory";
    case Verdict::Kind::timeout: return "timeout";
  }
  return "?";
}

std::string normalize_message(const std::string& message, size_t max_length) {
  std::string out;
  for (size_t i = 0; i < message.size() && out.size() < max_length; ++i) {
    const char c = message[i];
    const char close = c == '[' ? ']' : c == '\'' ? '\'' : '\0';
    // Brackets may nest (a path of brackets): up to the last one.
    const size_t end = c == '[' ? message.rfind(close) : close ? message.find(close, i + 1)
                                                               : std::string::npos;
    if (end != std::string::npos && end > i) {
      // A quoted value or a bracketed path is the input's, not the bug's.
      out += std::string(1, c) + "?" + close;
      i = end;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      out += 'N';
      while (i + 1 < message.size() && std::isdigit(static_cast<unsigned char>(message[i + 1]))) ++i;
    } else {
      out += c;
    }
  }
  return out;
}

Verdict run_sandboxed(const std::vector<Stage>& stages, const SandboxLimits& limits) {
  int result_pipe[2], err_pipe[2];
  if (::pipe2(result_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("gcsim_fuzz: pipe failed");
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("gcsim_fuzz: fork failed");
  if (pid == 0) {
    ::close(result_pipe[0]);
    ::close(err_pipe[0]);
    child(stages, limits, result_pipe[1], err_pipe[1]);
  }
  ::close(result_pipe[1]);
  ::close(err_pipe[1]);
  // CPU time is the real limit; the wall clock only catches a child that
  // blocks without using CPU.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(3 * limits.cpu_s + 10);
  std::string result, err;
  const bool finished = drain(result_pipe[0], err_pipe[0], result, err, deadline);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ::close(result_pipe[0]);
  ::close(err_pipe[0]);
  return classify(result, err, status, !finished, limits);
}

}  // namespace gcsim::fuzz
