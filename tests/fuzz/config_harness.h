// What every fuzz driver does with one input: write it as a config file into
// a scratch folder that also holds the files configs name beside them (a
// request trace, Chakra traces, comm groups), then load it exactly as
// `gcsim check` does (check_command: scenario, every workload loader, the
// resolved config printed), and optionally simulate it as `gcsim run` does.
// ConfigError (bad input, exit status 2) is the expected answer to most
// inputs and comes back as `false`; any other exception escapes to the
// driver, which reports it as a finding (the CLI would exit 1).
//
// One oracle beyond "no crash": the resolved config that `gcsim check`
// prints (and every run embeds in summary.json) is a config; loaded again
// it must be accepted and resolve to itself. When it does not, check()
// throws RoundTripError.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gcsim::fuzz {

// The resolved config of an accepted input is rejected, or resolves to
// something else: the printed config does not say what was simulated.
class RoundTripError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FuzzWorkspace {
 public:
  // A fresh folder under the system temp dir, filled with every non-YAML
  // file of configs/examples, tests/data/chakra and tests/data/bad under
  // `source_root`; removed on destruction.
  explicit FuzzWorkspace(const std::filesystem::path& source_root);
  ~FuzzWorkspace();
  FuzzWorkspace(const FuzzWorkspace&) = delete;
  FuzzWorkspace& operator=(const FuzzWorkspace&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Loads a one-GPU config per hardware preset, in this process: what the
  // loaders cache (built-in calibration profiles) is then inherited by
  // every sandboxed child instead of being rebuilt in each.
  void warm_up() const;

  // `gcsim check` on `text`, then on the resolved config it printed: true
  // when it is a valid config, false when it is rejected with a
  // ConfigError; RoundTripError when the resolved config does not load back
  // to itself.
  bool check(std::string_view text) const;
  // `gcsim run -q -o DIR/out` on `text`: true when it ran, false on a ConfigError.
  bool run(std::string_view text) const;

 private:
  std::string write_config(std::string_view text) const;
  // check_command's printout, or nullopt on a ConfigError.
  std::optional<std::string> resolve(std::string_view text) const;

  std::filesystem::path dir_;
};

}  // namespace gcsim::fuzz
