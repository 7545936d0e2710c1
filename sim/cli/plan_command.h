// `gcsim plan CONFIG.yaml [--gpus N] [-o DIR] [-j N] [--top K] [-s key=value]... [-q]`:
// capacity planning for a training config (an inference config: serving_plan.h). From its model, cluster and
// global batch, every layout of TP (with or without SP), CP, PP (schedule,
// virtual stages), DP, EP, micro-batch, recompute and ZeRO stage is pruned by
// the strategy's constraints and by memory (counted per rule), the
// survivors are scored by the back-of-envelope estimate (workloads/estimate,
// α-β network forms), and the K best by estimate plus well-known layouts (the
// config's own, FSDP, TP across nodes, the leader without interleaving or
// recompute) are simulated as `gcsim run` would on the config's network
// model. Writes DIR/plan.json, plan.csv, plan.md, best.yaml (a config `gcsim
// run` reproduces the winner with) and each simulated layout under
// DIR/points/. Under `mpirun -n N` the candidates and simulations are spread
// over the ranks and rank 0 writes the same result.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gcsim::cli {

// `args` are the words after `plan`. Returns the exit status; bad input
// throws ConfigError.
int plan_command(const std::vector<std::string>& args, std::ostream& out);

// Throws the ConfigError of `key` under the dotted `section` of the config
// at `path` (with the -s overrides `sets`), naming its line: for checks the
// plan makes after the config has loaded.
[[noreturn]] void fail_config_key(const std::string& path, const std::vector<std::string>& sets,
                                  const std::string& section, const std::string& key, const std::string& message);

}  // namespace gcsim::cli
