// A whole serving deployment run as events on one simulator: requests
// arrive, the router assigns them to replicas, replicas step, tokens come
// out. With disaggregation, prefill replicas compute each prompt (and one
// token), the router picks a decode replica, whose scheduler reserves blocks
// for the prompt and then pulls its KV over the fabric as point-to-point
// transfers between the two replicas' GPUs (through an OpExecutor, so
// transfers that share links slow each other down); optionally each layer's
// KV leaves as soon as the prefill has computed it. The decode replica then
// recomputes the prompt's last token and decodes; its tokens are the ones
// the client sees.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "workloads/inference/comm_timer.h"
#include "workloads/inference/replica.h"
#include "workloads/inference/router.h"
#include "workloads/inference/serving_config.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::inference {

struct ServingEnvironment {
  sim::Simulator* sim = nullptr;
  gpu::GpuSpec gpu;
  CommTimer* comm = nullptr;              // step collectives (run alone, cached)
  sim::OpExecutor* transport = nullptr;   // KV transfers between replicas, on `sim`
  bool record_steps = true;               // keep a StepRecord per step
  ReplicaClocks clocks;                   // every replica's (replica.h)
};

// KV cache figures of the replicas, from plan_memory().
struct ReplicaMemory {
  int64_t num_blocks = 0;
  int64_t block_bytes = 0;  // per GPU
};

struct TransferRecord {
  int64_t request = 0;
  int src_replica = 0, dst_replica = 0;
  int src_rank = 0, dst_rank = 0;
  sim::Time start, end;
  sim::Bytes bytes;
};

struct ReplicaSummary {
  int index = 0;
  ReplicaRole role = ReplicaRole::unified;
  std::vector<int> ranks;
  int64_t blocks_total = 0;
  int64_t peak_used_blocks = 0;
  int64_t preemptions = 0;
  int64_t rejections = 0;
  int64_t steps = 0;
  double busy_s = 0;
  int64_t prefix_queried_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t requests = 0;  // routed here
  double energy_j = 0;   // its GPUs' board energy to the run's end (J; 0 without the clock model)
};

struct ServingOutcome {
  std::vector<Request> requests;  // final state, by id
  std::vector<double> itl_s;      // pooled inter-token gaps
  std::vector<StepRecord> steps;
  std::vector<TransferRecord> transfers;
  std::vector<ReplicaSummary> replicas;
  int64_t preemptions = 0;
  int64_t rejected = 0;
  sim::Time end;
};

class ServingSystem {
 public:
  // `memory` for unified / decode replicas, `prefill_memory` for the
  // prefill pool (ignored without disaggregation).
  ServingSystem(const ServingConfig& config, ReplicaMemory memory, ReplicaMemory prefill_memory,
                ServingEnvironment env, uint64_t seed);
  ~ServingSystem();

  // Generates the requests, runs the simulator until everything is done.
  ServingOutcome run();
  // Runs `requests` instead of generated ones (tests).
  ServingOutcome run(std::vector<Request> requests);

 private:
  struct Handoff;
  void arrive(Request* r);
  void on_tokens(Request& r, int64_t tokens, bool finished, bool prefill_side);
  void on_remote_admit(Request* r);
  void start_transfers(Request* main);
  void start_transfer(Request* main, int src, int dst, sim::Bytes bytes);
  void deliver(Request* main);
  void layerwise_start(const StepPlan& plan, sim::Time start, const StepCost& cost, int replica);
  void transfer_done(Request* main);
  std::vector<std::pair<int, int>> rank_pairs(const Replica& from, const Replica& to) const;
  sim::Bytes pair_bytes(const Request& r, size_t pairs) const;
  std::unique_ptr<Replica> make_replica(int index, ReplicaRole role, const ParallelShape& p,
                                        std::vector<int> ranks, ReplicaMemory mem);

  const ServingConfig& config_;
  ReplicaMemory memory_, prefill_memory_;
  ServingEnvironment env_;
  uint64_t seed_;
  std::vector<std::unique_ptr<Replica>> replicas_;  // unified or decode
  std::vector<std::unique_ptr<Replica>> prefill_;
  std::unique_ptr<Router> router_, prefill_router_;
  std::vector<Request> requests_;
  std::vector<Request> copies_;  // prefill-side copies (disaggregation)
  std::vector<Handoff> handoffs_;
  std::deque<Op> transfer_ops_;  // the executor may keep pointers to them
  ServingOutcome out_;
};

}  // namespace gcsim::workloads::inference
