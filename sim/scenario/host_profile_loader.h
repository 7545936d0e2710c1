// `cluster.host`: the machine's host CPU as eager PyTorch uses it, the cost
// of each kind of Python call of an expert-parallel MoE layer (graph `moe`
// ops; workloads/moe/moe_layer.h EagerHostCost). A profile name, or a map
// of a `profile` to start from and the costs to replace.
#pragma once

#include "sim/config/config_reader.h"
#include "workloads/moe/moe_layer.h"

namespace gcsim::cli {

workloads::moe::EagerHostCost read_host_profile(sim::config::ConfigReader& cluster);

}  // namespace gcsim::cli
