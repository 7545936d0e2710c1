// The simulated cluster as the replayer sees it: one Gpu per rank and the
// communication model between them. It turns IR ops into kernels on GPUs
// and transfers on the network, and reports HBM use as it changes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/cluster/nccl_kernel_holds.h"
#include "models/cluster/scale_up_ports.h"
#include "models/cluster/sibling_contention.h"
#include "models/collectives/collective_engine.h"
#include "models/gpu/gpu.h"
#include "models/gpu/gpu_spec.h"
#include "models/network/alpha_beta.h"
#include "models/network/network_model.h"
#include "sim/engine/replayer.h"

namespace gcsim::models::cluster {

struct ClusterModelConfig {
  gpu::GpuSpec gpu;
  int num_ranks = 1;
  // Ranks whose GPU differs from `gpu` (a straggler: gpu::throttled());
  // every other rank runs `gpu`. Collectives keep `gpu`'s NCCL parameters.
  std::map<int, gpu::GpuSpec> rank_gpu;
  network::AlphaBetaFabric fabric;
  // SMs a collective's kernel holds on each GPU while it moves data (NCCL
  // runs one channel per SM). 0 models copy-engine transfers.
  int collective_sms = 0;
  // NCCL parameters of collectives on an attached network; nullopt:
  // collectives::params_for(gpu) with collective_sms channels.
  std::optional<collectives::CollectiveParams> collective_params;
  // The power cap's clock governor on every GPU (gpu::GpuOptions), its
  // averages at time zero: clock_rank_start[rank] where given (one entry per
  // rank), clock_model_start otherwise.
  bool clock_model = false;
  gpu::GovernorState clock_model_start;
  std::vector<gpu::GovernorState> clock_rank_start;
  // The host launches through one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS
  // =1, as Megatron-LM sets it): kernels and NCCL kernels reach the GPU in
  // issue order, so a collective issued before a kernel gets its SMs before
  // that kernel's CTAs. false (CUDA's default of several queues): a
  // collective issued at the same instant as kernels on other streams gets
  // its SMs after theirs (measured on 2x H100: an all-reduce released with
  // a GEMM mostly waited for the GEMM's last wave).
  bool serial_launch_queue = false;
  // Off: every NCCL kernel asks for its SMs at the meeting (when the last
  // rank arrives), after the kernels launched at that instant.
  bool holds_from_issue = true;
  // How an SM-holding collective and the kernels beside it slow each other
  // (gpu/interference.h): its HBM load, from collective_hbm.h's bytes over
  // its planned time, is registered on every GPU of the group while its
  // data moves; its end is stretched by collective_stretch, the largest
  // over the group (a ring runs at its slowest member's pace).
  gpu::InterferenceParams interference;
  // Transfers in flight at once on a GPU share its NVLink (scale_up_ports.h):
  // on under the analytical network model, whose links have no contention
  // (the flow and packet models share their links themselves).
  bool share_scale_up_ports = false;
};

// What the `collective` workload pins down for every collective: an
// algorithm and protocol instead of the tuner's choice (ignored for an op
// the algorithm does not implement), and NVLS off where the preset has it.
struct CollectiveChoice {
  // Collectives run on the engine when a network is attached; off, they
  // keep the closed α-β form.
  bool on_network = false;
  std::optional<collectives::Algorithm> algorithm;
  std::optional<collectives::Protocol> protocol;
  std::optional<bool> nvls;
  // p2p ops run as NCCL send/recv on the engine (protocol latency and wire
  // efficiency) instead of a bare copy-engine transfer.
  bool p2p_as_nccl = false;
};

// One collective as it ran on the attached network.
struct CollectiveRecord {
  uint32_t op_name = 0;  // the op's name id in the workload graph
  std::vector<int> ranks;
  collectives::Plan plan;
  sim::Time start, end;  // data movement: from the last SM grant to the last byte
};

// Observes HBM use (bytes) per rank over time, for trace counters.
using MemoryListener = std::function<void(int rank, sim::Time when, sim::Bytes used)>;

// The kernel a compute op launches (GEMM, attention or a memory-bound op).
gpu::KernelDesc kernel_for(const gpu::GpuSpec& spec, const workloads::ComputeOp& op);

class ClusterModel : public sim::OpExecutor {
 public:
  ClusterModel(sim::Simulator& sim, ClusterModelConfig config);

  void run_compute(int rank, const workloads::Op& op, sim::OpDone done) override;
  void run_communication(const workloads::Op& op, const std::vector<int>& ranks,
                         sim::OpDone done) override;
  MemoryResult apply_memory(int rank, sim::Bytes delta) override;
  // A rank's NCCL kernel holds its SMs from the rank's own issue
  // (nccl_kernel_holds.h); the data moves once every party's kernel is
  // resident, and the holds end with the op (a send that fits NCCL's
  // buffers: once posted).
  void communication_issued(int rank, const workloads::Op& op, int peer) override;
  void communication_met(int rank, const workloads::Op& op) override { holds_.met(rank, op); }
  // Siblings load the fabric only where collectives run on a network model
  // with contention (flow, packet) and the fabric has an oversubscribed
  // up-link; of those passed, only the ones SiblingContention counts run,
  // starting when the simulated group's data moves (no SM holds: their
  // GPUs are not simulated). The op ends when it and the waited ones have.
  bool loads_siblings() const override;
  void run_communication_beside(const workloads::Op& op, const std::vector<int>& ranks,
                                const sim::SiblingGroups& siblings, sim::OpDone done) override;

  void set_memory_listener(MemoryListener l) { memory_listener_ = std::move(l); }
  // Each GPU's SM clock (MHz) and board power (W) as they change, under
  // the clock model (config.clock_model); nothing otherwise.
  void set_power_listener(std::function<void(int rank, sim::Time when, double mhz, double watts)> l);
  // Point-to-point ops then move over this fabric model (analytical, flow
  // or packet) instead of the closed α-β form, and collectives run as
  // NCCL's algorithms on it (collectives::CollectiveEngine). Must outlive
  // the run. `fabric` is the graph the model runs on (hosts, NICs, switches).
  void attach_network(network::NetworkModel& n, const network::Fabric& fabric);
  void set_collective_choice(const CollectiveChoice& choice);
  // Times each distinct collective once and reuses that time for its
  // repeats (the same TP all-reduce every layer, the same EP all-to-all
  // every micro-batch), counting its bytes on the links as the run did.
  // Exact only where a collective's time cannot depend on other traffic
  // or on when it starts: the analytical network model (no contention)
  // with no link changing state during the run (no network.faults). The
  // caller decides; off by default.
  void set_collective_memo(bool on) { memo_on_ = on; }
  // Collectives answered from the memo and run for it, so far.
  int64_t memo_hits() const { return memo_hits_; }
  int64_t memo_misses() const { return memo_misses_; }
  // Keeps a CollectiveRecord per collective run (off by default: a training
  // run issues millions).
  void record_collectives(bool on) { record_collectives_ = on; }
  const std::vector<CollectiveRecord>& collective_records() const { return collective_records_; }
  // The engine collectives run on; null until a network is attached.
  collectives::CollectiveEngine* collective_engine() const { return engine_.get(); }
  network::NetworkModel* network() const { return network_; }
  const network::Fabric* fabric() const { return fabric_; }
  const gpu::Gpu& gpu(int rank) const { return *gpus_.at(static_cast<size_t>(rank)); }
  int num_ranks() const { return static_cast<int>(gpus_.size()); }
  const ClusterModelConfig& config() const { return config_; }

  // A JSON object literal explaining what `op` costs: for a
  // kernel its tiles, waves, flops, bytes and the bound of a tile; for a
  // transfer its bytes. Shown as trace-event args.
  // `rank` picks the GPU whose spec costs it (a straggler's own).
  std::string describe(const workloads::Op& op, int rank) const;

  // When the last collective timed in closed form (α-β over the tier's
  // bandwidth, with a network attached: the analytical model's) ended;
  // Time::zero() if none ran. Link faults do not reach those collectives,
  // though their bytes are counted on the links (count_closed_form).
  sim::Time closed_form_end() const { return closed_form_end_; }

  // The α-β duration of a communication op among `ranks`.
  sim::Duration communication_time(const workloads::Op& op, const std::vector<int>& ranks) const;
  // A collective op among `ranks` as the engine's request.
  collectives::CollectiveRequest collective_request(const workloads::Op& op,
                                                    const std::vector<int>& ranks) const;

 private:
  sim::Simulator& sim_;
  ClusterModelConfig config_;
  std::vector<std::unique_ptr<gpu::Gpu>> gpus_;
  NcclKernelHolds holds_;
  // SMs the NCCL kernel of `op` holds on a GPU: a collective's channels
  // (collective_sms), a send's or recv's between ranks a and b NCCL's p2p
  // channels for its size (collectives::p2p_parts); 0 when communication
  // holds no SMs (collective_sms 0) or moves nothing.
  int kernel_sms(const workloads::Op& op, int a, int b) const;
  // A send from src to dst on one host whose part per channel fits NCCL's
  // buffer there (NCCL_STEPS steps of the p2p chunk): its kernel writes the
  // parts into the receiver's buffers without waiting for it, for as long
  // as the bytes take over the tier (the α-β time), then exits. nullopt:
  // it waits for its peer.
  std::optional<sim::Duration> send_posting(const workloads::Op& op, int src, int dst) const;
  bool same_host(int a, int b) const;
  MemoryListener memory_listener_;
  network::NetworkModel* network_ = nullptr;
  const network::Fabric* fabric_ = nullptr;
  std::unique_ptr<collectives::CollectiveEngine> engine_;
  CollectiveChoice choice_;
  bool record_collectives_ = false;
  std::vector<CollectiveRecord> collective_records_;
  void build_engine();
  // The collective memo (set_collective_memo): a request's time alone on
  // the fabric, its plan, and the wire bytes it put on each link.
  struct MemoEntry {
    sim::Duration duration;
    collectives::Plan plan;
    network::LinkFootprint footprint;
  };
  using MemoKey = std::tuple<int, int64_t, std::vector<int>, int, bool, int, int, uint64_t>;
  static MemoKey memo_key(const collectives::CollectiveRequest& req);
  // Runs `req` on the engine, or answers it from the memo; `finished` gets
  // the plan that ran.
  void run_on_engine(const collectives::CollectiveRequest& req,
                     std::function<void(const collectives::Plan&)> finished);
  bool memo_on_ = false;
  // The tuner's estimate per distinct request: the collective's planned
  // time, which sets its HBM load (interference).
  std::map<MemoKey, sim::Duration> planned_;
  sim::Duration planned_time(const collectives::CollectiveRequest& req);
  // A collective's data starts moving on `ranks`: registers its HBM load
  // (bytes/s; none if 0) on their GPUs and samples their activity.
  void start_streaming(const std::vector<int>& ranks, double hbm_load,
                       std::vector<gpu::GpuActivityIntegral>& activity, sim::Time& began);
  // Its data has moved (from `sms` SMs on each GPU): how much longer the
  // kernels beside it make it take
  // (gpu::collective_stretch - 1 of the time since `began`, the largest
  // over the group).
  sim::Duration stretch_beyond(const std::vector<int>& ranks, int sms, double hbm_load,
                               const std::vector<gpu::GpuActivityIntegral>& activity,
                               sim::Time began) const;
  // NVLink shared by the transfers in flight on each GPU (null: off).
  std::unique_ptr<ScaleUpPorts> ports_;
  // The loads `op` among `ranks` offers the NVLink of each of its GPUs over
  // `planned` (its time alone); empty when it leaves a host (the NICs are
  // its bottleneck), moves nothing or ports are off.
  std::vector<PortLoad> port_loads(const workloads::Op& op, const std::vector<int>& ranks,
                                   sim::Duration planned) const;
  std::map<MemoKey, MemoEntry> memo_;
  int64_t memo_hits_ = 0;
  int64_t memo_misses_ = 0;
  // run_communication, with `siblings` (null: none) started beside the
  // transfer when its data moves; `done` waits for the waited ones.
  void communicate(const workloads::Op& op, const std::vector<int>& ranks,
                   std::shared_ptr<const sim::SiblingGroups> siblings, sim::OpDone done);
  std::unique_ptr<SiblingContention> contention_;
  // The siblings that count, per sibling list passed (by its address, which
  // the caller keeps for the run), for the fabric version they were found on.
  struct CountedSiblings {
    uint64_t version = 0;
    std::shared_ptr<const sim::SiblingGroups> groups;
  };
  std::unordered_map<const sim::SiblingGroups*, CountedSiblings> counted_siblings_;
  // Counts a closed-form collective's wire traffic on the attached network
  // and notes that it runs until `end`.
  void count_closed_form(const workloads::Op& op, const std::vector<int>& ranks, sim::Time end);
  sim::Time closed_form_end_ = sim::Time::zero();
  // Closed-form traffic per byte, by (algorithm, root, ranks), for the
  // fabric version it was routed on.
  std::map<std::tuple<int, int, std::vector<int>>, network::LinkFootprint> footprints_;
  // An uneven all-to-all's footprint by (split matrix fingerprint, group):
  // a training step repeats each MoE layer's matrices every micro-batch.
  std::map<std::pair<uint64_t, std::vector<int>>, network::LinkFootprint> split_footprints_;
  // Its closed-form time by the same key (each is O(n^2) to find).
  mutable std::map<std::pair<uint64_t, std::vector<int>>, sim::Duration> split_times_;
  uint64_t footprint_version_ = 0;
  // Queue-pair numbers for p2p transfers, so that successive transfers of
  // one rank pair may hash onto different paths (as NCCL's do).
  uint32_t next_qp_ = 0;
  // The distinct GPU specs (index 0: config_.gpu, then each rank_gpu entry)
  // and which one each rank runs.
  std::vector<gpu::GpuSpec> specs_;
  std::vector<int> spec_of_rank_;
  // Kernels costed once per op of a program and per GPU spec, however many
  // ranks run it: building a KernelDesc (tile choice, its name) dominated
  // replay time. A straggler's kernels differ (its rates pick other tiles
  // and durations), hence one cache per spec. Keyed by the op's address, so
  // the graph must outlive the run. A cache, so mutable: describe() (const)
  // shares it.
  mutable std::vector<std::unordered_map<const workloads::Op*, gpu::KernelDesc>> kernels_;
  const gpu::KernelDesc& kernel_of(const workloads::Op& op, int spec) const;
};

}  // namespace gcsim::models::cluster
