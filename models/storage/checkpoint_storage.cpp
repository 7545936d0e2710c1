#include "models/storage/checkpoint_storage.h"

#include <algorithm>

namespace gcsim::models::storage {

bool parse_checkpoint_mode(const std::string& name, CheckpointMode& mode) {
  if (name == "sync") {
    mode = CheckpointMode::sync;
  } else if (name == "async") {
    mode = CheckpointMode::async;
  } else if (name == "in-memory") {
    mode = CheckpointMode::in_memory;
  } else {
    return false;
  }
  return true;
}

const char* checkpoint_mode_name(CheckpointMode mode) {
  switch (mode) {
    case CheckpointMode::sync: return "sync";
    case CheckpointMode::async: return "async";
    case CheckpointMode::in_memory: return "in-memory";
  }
  return "?";
}

sim::Bandwidth CheckpointStorage::parallel_bandwidth(int nodes) const {
  const double clients = config_.per_node.bytes_per_s() * std::max(nodes, 1);
  return sim::Bandwidth::bytes_per_s(std::min(config_.aggregate.bytes_per_s(), clients));
}

sim::Duration CheckpointStorage::storage_transfer(const CheckpointShape& s) const {
  return sim::transfer_time(s.total_bytes(), parallel_bandwidth(s.nodes));
}

sim::Duration CheckpointStorage::snapshot(const CheckpointShape& s) const {
  return sim::transfer_time(s.bytes_per_gpu, config_.device_to_host);
}

sim::Duration CheckpointStorage::peer_copy(const CheckpointShape& s) const {
  return sim::transfer_time(s.bytes_per_node() * config_.replicas, config_.peer_network);
}

CheckpointCost CheckpointStorage::cost(const CheckpointShape& s, CheckpointMode mode) const {
  const sim::Duration snap = snapshot(s);
  const sim::Duration to_storage = storage_transfer(s);
  // Host to GPU after a restart runs at the same PCIe rate as the snapshot.
  const sim::Duration to_gpu = snap;
  CheckpointCost c;
  switch (mode) {
    case CheckpointMode::sync:
      // Staged through host memory, one stage after the other, all blocking.
      c.blocking = snap + to_storage;
      c.durable = c.blocking;
      c.load = to_storage + to_gpu;
      break;
    case CheckpointMode::async:
      c.blocking = snap;
      c.durable = snap + to_storage;
      c.load = to_storage + to_gpu;
      break;
    case CheckpointMode::in_memory:
      // Recoverable once the peers hold the copy; a restart pulls the lost
      // node's shard back from a peer while the others reload from their own
      // host memory, so the replacement's network fetch sets the time.
      c.blocking = snap;
      c.durable = snap + peer_copy(s);
      c.load = sim::transfer_time(s.bytes_per_node(), config_.peer_network) + to_gpu;
      break;
  }
  return c;
}

}  // namespace gcsim::models::storage
