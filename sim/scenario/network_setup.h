// Builds what a run's communication moves over: the Fabric from the
// scenario's topology, routing on it, and the network model the config
// names (analytical | flow | packet), with the config's link faults
// scheduled. The stack must outlive the simulation that uses it.
#pragma once

#include <memory>

#include "models/cluster/cluster_model.h"
#include "models/network/fabric.h"
#include "models/network/network_model.h"
#include "models/network/routing.h"
#include "sim/scenario/scenario.h"
#include "sim/engine/simulator.h"

namespace gcsim::cli {

struct NetworkStack {
  models::network::Fabric fabric;
  std::unique_ptr<models::network::Routing> routing;
  std::unique_ptr<models::network::NetworkModel> model;
};

std::unique_ptr<NetworkStack> build_network_stack(sim::Simulator& sim, const Scenario& s);

// The GPUs, their count and the α-β tiers of a scenario's cluster, for the
// ClusterModel every run (and the streamed Chakra replay) builds.
models::cluster::ClusterModelConfig cluster_model_config(const Scenario& s);

// Whether the host launches through one hardware queue (cluster.launch_queues
// resolved): `auto` is one for Megatron-LM training, whose tensor-parallel
// layers rely on CUDA_DEVICE_MAX_CONNECTIONS=1 so that the overlapped
// collectives reach the GPU before the GEMMs issued after them
// (megatron/core/tensor_parallel/layers.py), and CUDA's default otherwise.
bool one_launch_queue(const Scenario& s);

}  // namespace gcsim::cli
