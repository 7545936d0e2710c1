// `cluster.host`: the machine's host CPU as eager PyTorch uses it, the cost
// of each kind of Python call of an expert-parallel MoE layer (graph `moe`
// ops; workloads/moe/moe_layer.h EagerHostCost). A host profile file
// (`gcsim calibrate --host-fit` fits one on the machine; a relative path is
// taken beside the config), a measured machine's profile by name, or a map
// of a `profile` (either) to start from and the costs to replace.
#pragma once

#include "sim/config/config_reader.h"
#include "workloads/moe/moe_layer.h"

namespace gcsim::cli {

workloads::moe::EagerHostCost read_host_profile(sim::config::ConfigReader& cluster);

}  // namespace gcsim::cli
