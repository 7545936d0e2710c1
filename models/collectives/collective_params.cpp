#include "models/collectives/collective_params.h"

#include <string_view>

#include "models/collectives/fitted_params.h"

namespace gcsim::models::collectives {

namespace {

enum class Generation { volta, ampere, hopper, blackwell };

Generation generation_of(const gpu::GpuSpec& gpu) {
  const std::string_view n = gpu.name;
  if (n.starts_with("v100")) return Generation::volta;
  if (n.starts_with("a100") || n.starts_with("a800")) return Generation::ampere;
  if (n.starts_with("b100") || n.starts_with("b200") || n.starts_with("gb200")) {
    return Generation::blackwell;
  }
  return Generation::hopper;  // h100, h200, h800, h20 and presets written inline
}

sim::Duration us(double v) { return sim::us(v); }

// NCCL 2.28 tuning.cc, in microseconds, [LL, LL128, Simple]:
//   baseLat  Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4}, NVLS {0, 0, 0}
//   hwLat NVLink  Tree {0.6, 1.25, 4.0}, Ring {0.6, 1.9, 3.4}, NVLS Simple 25
//   hwLat NET     Tree {5.0, 8.5, 14},   Ring {2.7, 4.0, 14.0}, NVLS Simple 18
// NCCL's hwLat includes the wire; gcsim's fabric already charges each
// step its links' latency, so the step overhead is hwLat less the bare
// wire, which NCCL's ring LL figure stands for (0.6 us NVLink, 2.7 us NET).
struct NcclLatency {
  double base, nvlink, net;
};
constexpr double kNvlinkWire = 0.6, kNetWire = 2.7;

void set_latency(CollectiveParams& p, Algorithm a, Protocol pr, NcclLatency l) {
  StepLatency& s = p.latency_of(a, pr);
  s.base = us(l.base);
  s.step_scale_up = us(l.nvlink > kNvlinkWire ? l.nvlink - kNvlinkWire : 0.0);
  s.step_scale_out = us(l.net > kNetWire ? l.net - kNetWire : 0.0);
}

}  // namespace

CollectiveParams nccl_default_params(const gpu::GpuSpec& gpu) {
  CollectiveParams p;
  const Generation g = generation_of(gpu);
  p.source = "NCCL 2.28 tuning model defaults";

  const NcclLatency ring[3] = {{6.6, 0.6, 2.7}, {14.0, 1.9, 4.0}, {8.4, 3.4, 14.0}};
  const NcclLatency tree[3] = {{6.8, 0.6, 5.0}, {14.0, 1.25, 8.5}, {8.4, 4.0, 14.0}};
  for (Protocol pr : kAllProtocols) {
    const auto i = static_cast<size_t>(pr);
    set_latency(p, Algorithm::ring, pr, ring[i]);
    set_latency(p, Algorithm::tree, pr, tree[i]);
    // Point-to-point rounds and the hierarchical phases are rings' steps.
    set_latency(p, Algorithm::direct, pr, ring[i]);
    set_latency(p, Algorithm::pairwise, pr, ring[i]);
    set_latency(p, Algorithm::hierarchical, pr, ring[i]);
  }
  // NVLS is Simple only; one multimem step of 25 us NVLink (18 us NET), no base.
  for (Protocol pr : kAllProtocols) set_latency(p, Algorithm::nvls, pr, {0.0, 25.0, 18.0});

  ProtocolParams& ll = p.protocol_of(Protocol::ll);
  ProtocolParams& ll128 = p.protocol_of(Protocol::ll128);
  ProtocolParams& simple = p.protocol_of(Protocol::simple);
  ll.wire_efficiency = 0.5;            // 4 data + 4 flag bytes per 8-byte line
  ll128.wire_efficiency = 120.0 / 128.0;  // 8 flag bytes per 128-byte line
  simple.wire_efficiency = 1.0;
  // llMaxBws [generation][N1], and N2/N4 for Intel hosts (GB/s).
  const double ll_max[4] = {39.0, 87.7, 141.0, 2 * 141.0};
  // (NCCL's figures count one way of a ring, where every GPU sends and
  // receives as much: the ceiling on both together is twice that.)
  ll.max_per_gpu = sim::Bandwidth::gb_per_s(2 * ll_max[static_cast<int>(g)]);
  ll.max_per_gpu_two_nodes = sim::Bandwidth::gb_per_s(2 * 39.0);
  ll.max_per_gpu_many_nodes = sim::Bandwidth::gb_per_s(2 * 20.4);
  // perChMaxRingLL128Bws (GB/s per channel).
  const double ll128_ch[4] = {20.0, 20.0, 36.7, 40.0};
  ll128.max_per_channel = sim::Bandwidth::gb_per_s(ll128_ch[static_cast<int>(g)]);
  // Pipeline slices: Simple, the 256 kB chunk NCCL's tuning comment prices
  // a tree hop with ("Tree/Simple is the latency a 256kB chunk"); LL128,
  // 120 elements x 8 B x 640 threads; LL, 8 lines of 8 B (4 payload) x 512
  // threads.
  simple.slice = sim::KiB(256);
  // A ring loop's chunk per step and channel: NCCL_BUFFSIZE 4 MiB over
  // NCCL_STEPS 8 is a 512 KiB step, and a ring chunk is two of them. NCCL's
  // tuning model charges no turnaround per loop (a fit sets it).
  simple.chunk = sim::MiB(1);
  // One step of Simple's 4 MiB connection buffer (NCCL_BUFFSIZE) over
  // NCCL_STEPS 8: what a broadcast or reduce chain forwards at a time.
  simple.step = sim::KiB(512);
  ll128.slice = sim::Bytes(120 * 8 * 640);
  ll.slice = sim::Bytes(8 * 4 * 512);
  // Channel count for small messages: NCCL_LL_THREAD_THRESHOLD 8 (x ranks
  // for ring), NCCL_LL128_THREAD_THRESHOLD 8, NCCL_SIMPLE_THREAD_THRESHOLD
  // 64; max threads 512 / 640 / 512 (NCCL 2.28's log on 2x H200).
  ll.max_threads = 512;
  ll.thread_threshold = 8;
  ll128.max_threads = 640;
  ll128.thread_threshold = 8;
  simple.max_threads = 512;
  simple.thread_threshold = 64;

  // NCCL's NVLink bandwidth per link against the datasheet's 25 GB/s (50 on
  // Blackwell): SM70/SM80 20.0, SM90 20.6, SM100 40.1.
  const double nvlink_share[4] = {20.0 / 25.0, 20.0 / 25.0, 20.6 / 25.0, 40.1 / 50.0};
  p.scale_up_efficiency = nvlink_share[static_cast<int>(g)];
  // A transfer holding the links beside another communicator's moves at
  // 0.935 of that payload (0.770 of the datasheet, 346.6 of 450 GB/s a
  // direction: two 256 MiB all-reduces at once on 4 H100s, calibration/
  // measurements/h100-x4/concurrent_collectives_2026-11-27); measured on
  // Hopper only, other generations take the same share of their payload.
  p.scale_up_shared_efficiency = p.scale_up_efficiency * (0.770 / 0.824);
  p.scale_out_efficiency = 47.0 / 50.0;  // NDR: 46-48 of 50 GB/s
  p.nvls_efficiency = g == Generation::blackwell ? 0.74 : 0.85;
  p.tree_efficiency = 0.92;
  p.channels = 24;
  p.pxn = true;
  p.nvls = gpu.has_nvls;
  // NCCL's tuning model prices no p2p channel ceiling and no per-round
  // cost (a fit sets them); the local copy streams through HBM.
  p.local_copy = sim::Bandwidth::bytes_per_s(gpu.hbm_bandwidth.bytes_per_s() *
                                             gpu.efficiency.hbm / 2.0);
  return p;
}

CollectiveParams ideal_params(int channels) {
  CollectiveParams p;
  p.source = "ideal (no protocol cost)";
  for (auto& row : p.latency) {
    for (auto& l : row) l = StepLatency{};
  }
  for (auto& pr : p.protocol) {
    pr = ProtocolParams{};
    pr.wire_efficiency = 1.0;
    pr.slice = sim::Bytes(0);
    pr.max_threads = 1;
    pr.thread_threshold = 1;
  }
  p.scale_up_efficiency = 1.0;
  p.scale_up_shared_efficiency = 1.0;
  p.scale_out_efficiency = 1.0;
  p.nvls_efficiency = 1.0;
  p.tree_efficiency = 1.0;
  p.channels = channels;
  p.pxn = false;
  p.nvls = false;
  return p;
}

CollectiveParams params_for(const gpu::GpuSpec& gpu) {
  CollectiveParams p = nccl_default_params(gpu);
  apply_fitted_params(gpu.name, p);
  return p;
}

}  // namespace gcsim::models::collectives
