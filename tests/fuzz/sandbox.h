// Runs one fuzz input in a child process under limits on CPU time and
// address space, so that a crash, a hang or a runaway allocation in the code
// under test becomes a Verdict instead of the end of the fuzz session. The
// Verdict's signature names the class of outcome (kind, stage, exception
// type and message, or signal and top stack frames) with numbers blanked
// out, so that inputs showing the same bug share one signature.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace gcsim::fuzz {

struct SandboxLimits {
  int cpu_s = 10;           // CPU seconds per input (soft limit; SIGKILL one second later)
  size_t memory_mb = 2048;  // address space per input
};

struct Verdict {
  enum class Kind {
    accepted,       // a valid config (and, with a run stage, it ran)
    rejected,       // ConfigError: the CLI's exit status 2, the expected answer to bad input
    exception,      // any other exception: the CLI's "internal error", exit status 1
    crash,          // a signal (segfault, abort, assertion, uncaught exception in a destructor)
    out_of_memory,  // allocation beyond the address-space limit
    timeout,        // CPU-time (or wall-time) limit reached
  };
  Kind kind = Kind::crash;
  std::string stage;      // "check" or "run": where it was when it ended
  std::string detail;     // message, stderr tail, backtrace: for the report
  std::string signature;  // the finding class; empty for accepted and rejected

  bool is_finding() const { return kind != Kind::accepted && kind != Kind::rejected; }
  // Resource findings depend on the machine's speed and the limits chosen.
  bool is_resource() const { return kind == Kind::out_of_memory || kind == Kind::timeout; }
};

const char* kind_name(Verdict::Kind kind);

// What runs in the child: each stage returns true to go on to the next
// (accepted so far) or false (rejected); it may throw.
struct Stage {
  std::string name;
  std::function<bool()> body;
};

Verdict run_sandboxed(const std::vector<Stage>& stages, const SandboxLimits& limits);

// Digits blanked (runs of them become one 'N'), 'quoted' and [bracketed]
// parts replaced by '?', length capped: a message that names its class
// rather than its input.
std::string normalize_message(const std::string& message, size_t max_length = 160);

}  // namespace gcsim::fuzz
