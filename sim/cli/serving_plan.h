// `gcsim plan` for an inference config: searches the deployment of the
// config's model and load on its cluster against its SLOs. Candidates: TP
// (powers of two up to a node), PP 1 or 2, replicas (powers of two up to
// what the GPUs hold, and that maximum), max_num_seqs 64 / 128 / 256,
// max_num_batched_tokens 2048 / 8192, chunked prefill on and off (vLLM V1).
// Each is loaded by the same reader `gcsim run` uses, so the rules that
// refuse a config prune it, counted by the key they name (heads over TP,
// weights or one request's KV not fitting, a token budget below max_num_seqs
// or below max_model_len without chunking). Every survivor is simulated on
// the analytical network model (a serving run costs well under a second),
// ranked by goodput per GPU (requests/s meeting every SLO, over the GPUs the
// deployment uses) among those whose SLO attainment reaches the target
// (requests.arrival.rate_search.target, 0.9), and the top K are simulated
// again on the config's network model when it is not analytical. Writes
// plan.json, plan.csv, plan.md, best.yaml and report.html as the training
// plan does.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/mpi_world.h"
#include "sim/scenario/scenario.h"

namespace gcsim::cli {

struct ServingPlanArgs {
  std::string config;
  std::string out_dir;
  std::vector<std::string> sets;  // -s overrides (and --gpus' node count)
  int jobs = 1;
  int top = 8;
  bool quiet = false;
};

// `s` is the config loaded as `gcsim run` loads it (kind inference).
int serving_plan(const Scenario& s, const ServingPlanArgs& a, const MpiWorld& world, std::ostream& out);

}  // namespace gcsim::cli
