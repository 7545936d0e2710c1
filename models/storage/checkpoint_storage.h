// A checkpoint store: a parallel file system (or object store) with an
// aggregate bandwidth shared by all writers and a per-node client bandwidth,
// plus the host path each GPU uses to stage its shard (PCIe device-to-host).
// It turns a checkpoint of a given size into the time that blocks training
// and the time until the checkpoint is durable, for three modes:
//   sync      GPU -> host -> storage, all of it blocks training
//             (Megatron's default torch.save path);
//   async     snapshot GPU -> host blocks; the storage write overlaps
//             training (Nebula, PyTorch DCP async_save, Mohan et al. CheckFreq);
//   in_memory snapshot to host blocks; a copy goes to `replicas` peers' host
//             memory over the scale-out network in the background and the
//             checkpoint is recoverable once that copy lands (Gemini, Wang et
//             al. SOSP'23); the storage write also runs in the background.
// Checkpoints are ZeRO-sharded: every GPU writes bytes_per_gpu, all nodes in
// parallel, so a write is limited by min(aggregate, nodes x per-node).
#pragma once

#include <string>

#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::storage {

enum class CheckpointMode { sync, async, in_memory };

// Parses "sync" | "async" | "in-memory"; returns false for anything else.
bool parse_checkpoint_mode(const std::string& name, CheckpointMode& mode);
const char* checkpoint_mode_name(CheckpointMode mode);

struct StorageConfig {
  sim::Bandwidth aggregate = sim::Bandwidth::gb_per_s(2000);  // whole file system, B/s
  sim::Bandwidth per_node = sim::Bandwidth::gb_per_s(50);     // one node's client (NIC share), B/s
  sim::Bandwidth device_to_host = sim::Bandwidth::gb_per_s(25);  // per GPU, pinned PCIe copy
  sim::Bandwidth peer_network = sim::Bandwidth::gb_per_s(50);    // per node, to peers (in-memory)
  int replicas = 1;  // in-memory: peers holding a copy of each node's shard
};

struct CheckpointShape {
  double bytes_per_gpu = 0;  // this GPU's shard of the model state
  int gpus_per_node = 8;
  int nodes = 1;
  double total_bytes() const { return bytes_per_gpu * gpus_per_node * nodes; }
  double bytes_per_node() const { return bytes_per_gpu * gpus_per_node; }
};

// What one checkpoint costs.
struct CheckpointCost {
  sim::Duration blocking;  // training stops for this long
  sim::Duration durable;   // from the checkpoint's start until a failure can recover from it
  sim::Duration load;      // restart: time to bring the state back onto the GPUs
};

class CheckpointStorage {
 public:
  explicit CheckpointStorage(StorageConfig config) : config_(config) {}

  // Bandwidth `nodes` writers (or readers) get together: min(aggregate, nodes x per-node).
  sim::Bandwidth parallel_bandwidth(int nodes) const;
  // Writing (or reading) the whole checkpoint to (from) storage, all nodes in parallel.
  sim::Duration storage_transfer(const CheckpointShape& s) const;
  // Every GPU copies its shard to host memory at once (each GPU has its own PCIe link).
  sim::Duration snapshot(const CheckpointShape& s) const;
  // A node sends its shard to `replicas` peers; all nodes at once, each limited by its NIC.
  sim::Duration peer_copy(const CheckpointShape& s) const;

  CheckpointCost cost(const CheckpointShape& s, CheckpointMode mode) const;
  const StorageConfig& config() const { return config_; }

 private:
  StorageConfig config_;
};

}  // namespace gcsim::models::storage
