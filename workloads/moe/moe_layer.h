// One expert-parallel MoE layer as the kernels and collectives each EP rank
// runs: Megatron-LM's all-to-all token dispatcher with one GEMM pair per
// local expert (SequentialMLP), in eager PyTorch's kernels, as
// calibration/microbench/moe_ep_bench.py runs it on real GPUs.
//
// forward: router GEMM, softmax, top-k; permute (gather of the k copies
//   into expert order); the counts exchange (all_to_all of experts x int64);
//   dispatch (uneven all_to_all: the routed rows of each (source, rank)
//   pair, or DeepSeek-V3's two legs, below); sort into (expert, source)
//   order; per local expert with n rows: fc1 GEMM n x (2)F x H, the
//   activation (SwiGLU: silu and mul, two kernels), fc2 GEMM n x H x F;
//   unsort; combine (the dispatch transposed); unpermute (scale by the
//   routing weight, zero the output, index_add).
// backward: the same in reverse, each expert's dgrad and wgrad GEMMs and
//   the activation's backward (eager SwiGLU: 5 kernels), the router's two
//   GEMMs.
//
// Node-limited routing (DeepSeek-V3 2.1.2: each token's experts on at most
// M nodes) sends a token across the scale-out network once per destination
// node, to the GPU of that node on the sender's rail, which forwards it
// over NVLink to the experts' GPUs: the dispatch is then two uneven
// all-to-alls, the IB leg and the NVLink leg (combine: the reverse). A
// token's copies reach min(M, top_k, nodes) nodes, split over nodes as its
// copies are, at most one per token and node.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/collectives/split_matrix.h"
#include "models/gpu/dtype.h"
#include "sim/engine/ir.h"
#include "workloads/moe/moe_routing.h"

namespace gcsim::workloads::moe {

enum class MoePass { fwd, bwd, fwd_bwd };
enum class ExpertActivation { swiglu, gelu };

// Eager PyTorch's memory-bound kernels that leave the vectorized contiguous
// path reach a fraction of streaming HBM bandwidth. Fitted on the hidden
// 2048 points of calibration/measurements/h200-x2/moe_ep_2026-11-26/
// (rank 0's phases), checked on the hidden 4096 points (tests/scenario/
// test_moe_measured.cpp); each must stay in (0.05, 1].
struct EagerKernelEfficiency {
  // Fitted values, the median over the 6 points with >= 16K tokens (their
  // spread +-0.03): rank 0's phase minus gcsim's other kernels of it.
  double broadcast = 0.33;  // x * w[:, None] (permute_bwd = gather + scale)
  double atomic = 0.17;     // index_add_ of bf16 rows, atomicAdd (unpermute_bwd = zero + index_add)
  // SwiGLU kernels on the two strided halves of fc1's output (experts
  // phase minus gcsim's GEMMs: absorbs the GEMM model's error too).
  double strided = 0.37;

  // The fractions above are of the H200's 4.8 TB/s with its 132 SMs. These
  // kernels are bound by the loads each SM keeps in flight (Little's law,
  // tests/unit/test_moe_eager_ranges.cpp), not by HBM: their bytes per
  // second follow the SMs, and an H100 (132 SMs, 3.35 TB/s) runs them in
  // the same time (measured: unpermute 3.09 ms on 4 H100s, 3.01 ms on 4
  // H200s, hidden 4096, 32K tokens). So on a GPU with `sm_count` SMs and
  // `hbm_bytes_per_s`, each fraction is rescaled to the same bytes per
  // second per SM, at most 1 (streaming).
  EagerKernelEfficiency on_gpu(int sm_count, double hbm_bytes_per_s) const;
};
inline constexpr int kEagerFitSmCount = 132;          // h200-sxm preset
inline constexpr double kEagerFitHbmBytesPerS = 4.8e12;  // h200-sxm preset

// What eager PyTorch's host spends running the layer from Python, on the
// host timeline of workloads/training/host_issue.h (the training framework
// profiles' per-kernel issue model with the layer's sync added): each
// Python call that launches work costs the host its kind's time (the aten
// op's dispatch, the views and the Python around it; NCCL's
// ProcessGroupNCCL all_to_all_single: the splits, its stream events, the
// grouped send/recv launch), and the `.tolist()` of the received counts
// before the dispatch waits for the counts exchange (and everything queued
// before it) to finish on the GPU, then copies them back and returns to
// Python; every launch after it is exposed until the host is ahead of the
// GPU again. The costs are the host machine's, not the GPU's: a profile
// fitted on the machine (cluster.host: FILE) or a measured machine's by
// name (host_profile).
enum class HostCall : uint8_t {
  router,   // the router's forward calls: GEMM, .float(), softmax, top-k
  permute,  // the permute's gathers: index_select of the token copies (forward), and the
            // backward's gather and scale of the output gradient
  launch,   // every other kernel call outside the expert loop: sort, unsort,
            // unpermute's scale/zero/index_add, the router's backward GEMMs
  nccl,     // an NCCL collective call (counts, dispatch, combine)
  expert    // one kernel call of the expert loop (a GEMM or an activation kernel, with the
            // slices and list work around it in the loop body)
};
struct EagerHostCost {
  bool modelled = true;      // false: the host never holds the GPU back
  std::string profile;       // the profile's name ("" when set key by key)
  double router_us = 0;      // per router call
  double permute_us = 0;     // per permute gather call
  double launch_us = 0;      // per other kernel call
  double collective_us = 0;  // per NCCL call
  double sync_us = 0;        // the counts' .tolist() after the GPU is done
  // The expert loop: each kernel call in it, and the loop's fixed cost per
  // pass (what the host spends in the loop whatever the number of local
  // experts: the output's allocation, the loop's set-up, the first
  // iteration's extra), forward and backward. A loop of L experts with k
  // kernels each costs the host loop + k L expert.
  double expert_us = 0;
  double loop_fwd_us = 0;
  double loop_bwd_us = 0;
  // The pace of a layer on several ranks: its slowest rank's host time per
  // call over a typical rank's (>= 1). Every all-to-all waits for the last
  // rank's launch, so a layer's host-bound parts run at its slowest host's
  // pace; each rank's Python, measured alone, is at times 1.2-1.8x slower
  // than its peers for a tenth of a second or more (calibration/
  // measurements/h100-x4/moe_host_timeline_2026-11-26: the median over
  // blocks of 20 passes of the slowest of 4 ranks). Every call and sync of
  // a layer on more than one rank costs this much more; one rank: 1.
  double slowest_rank = 1;
  double call_us(HostCall c) const;
};
// Physical range of each cost (µs): a Python call that launches one CUDA
// kernel costs at least the launch itself (~3 µs) and, for eager PyTorch on
// a server CPU, well under 0.2 ms; an NCCL call at least a kernel launch.
// A loop's fixed cost: none at least, and under a millisecond (a few
// allocator calls and a cudaMalloc's worth).
inline constexpr double kHostCallMinUs = 3, kHostCallMaxUs = 200;
inline constexpr double kHostNcclMaxUs = 400, kHostSyncMinUs = 2, kHostSyncMaxUs = 200;
inline constexpr double kHostLoopMaxUs = 1000;
// A group's slowest host: no faster than its typical rank, and a rank
// issuing at under half its peers' pace is a broken machine, not spread
// (measured per block of passes: 1.02-1.80 on 4 ranks).
inline constexpr double kHostSlowestRankMax = 2;
// The named profiles, each the machines it was read on (calibration/fit/
// moe_host_costs.py, note calibration/fit/moe_host_2026-11-26.md): "h200",
// the H200 machines' host; "h100x4-20261126-2313" and
// "h100x4-20261126-2212", two 4-H100 machines' hosts (once "h100" and
// "h100-fast"). Another machine's host: a profile file fitted on it
// (calibration/fit/host_fit.h, cluster.host: FILE).
const std::vector<std::string>& host_profile_names();
const EagerHostCost* host_profile(const std::string& name);
// The default host (no cluster.host): the H200 machines' profile.
EagerHostCost eager_host_cost();

struct MoeLayerSpec {
  int64_t hidden = 0;      // model width H
  int64_t expert_ffn = 0;  // each expert's FFN width F
  models::gpu::Dtype dtype = models::gpu::Dtype::bf16;
  MoePass pass = MoePass::fwd;
  ExpertActivation activation = ExpertActivation::swiglu;
  int ranks_per_node = 0;   // EP ranks per node (node-limited routing); 0: one node
  int max_route_nodes = 0;  // M of node-limited routing; 0: off (plain all_to_all_single)
  EagerKernelEfficiency eager;
  EagerHostCost host = eager_host_cost();
};

// What each sub-op of the layer is, for the report.
enum class MoeRole : uint8_t {
  router, permute, counts, dispatch, sort, experts, unsort, combine, unpermute,
  host  // the host's launches and its wait-free part of the sync (delays on the host stream)
};
const char* role_name(MoeRole r);

// The layer as built: routing, group and each sub-op's role by name id.
struct MoeLayerInfo {
  std::string name;
  MoeLayerSpec spec;
  std::shared_ptr<const Routing> routing;
  std::vector<int> ranks;  // global ranks in EP order (sorted)
  std::map<uint32_t, MoeRole> roles;  // sub-op name id -> role
  // A layer that follows another on the same Python thread (a backward
  // after its forward): per global rank, the program index of the earlier
  // layer's last op, whose end starts this layer's clock (the bench's event
  // before the backward runs on the GPU then), while its host went on
  // launching from where the earlier layer's host stopped. Empty: the
  // layer's clock starts with its first op (host and GPU together).
  std::map<int, uint32_t> starts_after;
};

// The dispatch as token rows per (source, destination), in EP order: one
// leg (all_to_all_single), or the IB leg then the NVLink leg under
// node-limited routing across nodes.
std::vector<std::vector<int64_t>> dispatch_legs(const Routing& r, const MoeLayerSpec& spec);
// One leg as the bytes of an uneven all-to-all: `rows` (n x n, by source)
// x `bytes_per_row`, or its transpose (the combine runs the leg back).
models::collectives::SplitMatrixPtr leg_bytes(const std::vector<int64_t>& rows, int n,
                                              int64_t bytes_per_row, bool transpose);

// The ops each EP rank runs (outer index: EP rank), in order; every op
// depends on the one before it (deps are indices within the rank's list).
// Collectives go on `comm_stream`, kernels on `compute_stream`, the host's
// launch and sync delays (spec.host) on `host_stream`. `ranks` are
// the global ranks, sorted; the communicator is added to `g`.
std::vector<std::vector<Op>> build_moe_layer(WorkloadGraph& g, const MoeLayerSpec& spec,
                                             const Routing& routing, const std::vector<int>& ranks,
                                             uint16_t compute_stream, uint16_t comm_stream,
                                             uint16_t host_stream, MoeLayerInfo& info);

}  // namespace gcsim::workloads::moe
