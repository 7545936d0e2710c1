// Where a serving run's step time goes, by kind of step: prefill steps
// (any step with a prefill chunk) and pure decode steps, each with the mean
// step time, the mean kernel time per class (as torch.profiler's per-kernel
// table summed by class, all pipeline stages; communication: TP collectives
// and stage sends), the launches per step and the mean time the GPUs waited
// for the host to issue kernels (workload.framework: pytorch-eager outside
// CUDA graphs). summary.json `breakdown`; report.md "Step time by class".
#pragma once

#include <string>
#include <vector>

#include "sim/config/config_reader.h"
#include "workloads/inference/replica.h"

namespace gcsim::cli {

sim::config::Json serving_step_classes_json(const std::vector<workloads::inference::StepRecord>& steps);
std::string serving_step_classes_markdown(const std::vector<workloads::inference::StepRecord>& steps);

}  // namespace gcsim::cli
