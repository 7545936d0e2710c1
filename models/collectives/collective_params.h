// The numbers that turn NCCL's algorithms into time: per algorithm and
// protocol a launch latency and a per-step cost, per protocol the share of
// wire bytes that is payload and the ceilings of one channel (one SM) and
// one GPU, the pipeline slice and the ring's per-loop turnaround, and the
// payload share of each tier's links. Every figure is physical and shared
// by every op and group size: a protocol's or a link's inefficiency
// lengthens time; only the protocol's own flag bytes (LL, LL128) go on the
// wire.
//
// Defaults follow NCCL 2.28's tuning model (src/graph/tuning.cc, confirmed
// against the tuning table NCCL printed on 2x H200 in
// calibration/measurements/h200-x2/nccl_info_2026-11-22.log): baseLat,
// hwLat, llMaxBws, perChMaxRingLL128Bws, nvlsEfficiency, and NCCL's per-link
// NVLink bandwidth (20.6 GB/s on Hopper: NVL[370.8] for 18 links in that
// log). A calibration fit (models/collectives/collective_fit.h) replaces the
// protocol and latency figures for a GPU it was measured on.
#pragma once

#include <array>
#include <string>

#include "models/collectives/collective.h"
#include "models/collectives/p2p_split.h"
#include "models/gpu/gpu_spec.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::collectives {

// NCCL's latency model for one (algorithm, protocol): time = base + per
// step (the step's wire latency + the step overhead of its tier).
struct StepLatency {
  sim::Duration base;            // once per call (NCCL baseLat)
  sim::Duration step_scale_up;   // per step over NVLink/PCIe, beyond the links' own latency
  sim::Duration step_scale_out;  // per step over the network, beyond the links' own latency
};

struct ProtocolParams {
  // Payload bytes per wire byte: LL 4 data bytes per 8-byte line (0.5),
  // LL128 120 of 128 bytes, Simple 1.
  double wire_efficiency = 1.0;
  // Payload one channel (one SM) can move per second; 0 = no ceiling.
  // NCCL perChMaxRingLL128Bw: 36.7 GB/s on Hopper.
  sim::Bandwidth max_per_channel;
  // Payload one GPU's channels can handle per second with this protocol,
  // sent plus received (the same SMs store what leaves and poll in what
  // arrives), intra-node; 0 = no ceiling. NCCL's llMaxBws (LL 141 GB/s on
  // Hopper, 87.7 Ampere) counts an all-reduce's bytes one way: twice that here.
  sim::Bandwidth max_per_gpu;
  // The same ceiling once the group spans 2 nodes / more than 2 nodes
  // (NCCL llMaxBws N2/N4, Intel hosts: 39 / 20.4 GB/s for LL); 0 = none.
  sim::Bandwidth max_per_gpu_two_nodes;
  sim::Bandwidth max_per_gpu_many_nodes;
  // Payload per channel a pipeline stage must hold before it forwards: the
  // start-up of a pipelined ring or tree costs fill hops of one slice each.
  sim::Bytes slice;
  // One step of a connection's buffer, NCCL_BUFFSIZE / NCCL_STEPS (Simple:
  // 4 MiB / 8 = 512 KiB). A Simple chain (broadcast, reduce) moves one step
  // per slice (BROADCAST_SLICESTEPS = BROADCAST_CHUNKSTEPS = 1) and a rank
  // forwards a slice only once its sender has posted the whole of it, so
  // the chain fills with one step per hop (or a channel's bytes, if fewer),
  // not with the ring's slice. 0 = the chain fills with `slice` (LL and
  // LL128 flag every line, so a rank forwards lines as they land).
  sim::Bytes step;
  // A ring collective (all-reduce, all-gather, reduce-scatter) walks each
  // channel's data in loops of one `chunk` per rank and step; every loop
  // pays `ring_loop_overhead` that the pipeline does not hide (the ring's
  // turnaround: a step waits for its predecessor's flag). Time, never bytes.
  // It is what makes NCCL's ring busbw grow with the group: the overhead is
  // per loop, the bytes per loop grow as 2(n-1) steps. 0 = none.
  sim::Bytes chunk;
  sim::Duration ring_loop_overhead;
  // NCCL launches fewer channels for small messages: one channel per
  // max_threads x thread_threshold bytes (x group size for ring LL).
  int max_threads = 512;
  int thread_threshold = 64;
};

struct CollectiveParams {
  std::string source;  // where the numbers come from, for reports
  std::array<std::array<StepLatency, kNumProtocols>, kNumAlgorithms> latency{};
  std::array<ProtocolParams, kNumProtocols> protocol{};
  // Payload share of a link's datasheet bandwidth once packet headers and
  // flow control are paid: NVLink (NCCL models 20.6 of 25 GB/s per Hopper
  // link), and the NIC (an NDR NIC delivers 46-48 of 50 GB/s: nccl-tests
  // issue 290, ../shared/REFERENCE.md).
  double scale_up_efficiency = 1.0;
  double scale_out_efficiency = 1.0;
  // Share of a GPU's NVLink datasheet bandwidth one transfer moves at while
  // it holds the links that other communicators' transfers wait for: the
  // unit of a transfer's occupancy in cluster/scale_up_ports.h (<=
  // scale_up_efficiency; >= what one collective reaches alone, which then
  // occupies the links all the time). Fitted on 4 H100s: two 256 MiB 2-GPU
  // all-reduces of different communicators at once, 302 and 298 GB/s alone,
  // 1.82x and 1.91x as long together: 1 + 300 / (0.770 x 450) = 1.865.
  double scale_up_shared_efficiency = 1.0;
  // Link time one direction of a GPU's NVLink spends per payload byte the
  // other direction carries: the responses and flow-control credits for the
  // reverse traffic's writes travel in-band, so a GPU that sends X and
  // receives Y through its links needs (X + k Y) / R out and (Y + k X) / R
  // in. A 2-GPU broadcast (one way) levels off at 370.5 GB/s, a 2-GPU
  // send/recv (both ways) at 365.1 (4 GiB, NCCL 2.28.9 on 2x H200): k =
  // 0.0156 on NVLink 4 (models/collectives/fitted_params.cpp). 0 = none.
  double scale_up_reverse_overhead = 0.0;
  // NVLS: share of the in-switch reduction path NCCL reaches (nvlsEfficiency
  // 0.85 on Hopper).
  double nvls_efficiency = 1.0;
  // Double binary tree all-reduce reaches this share of the links (NCCL 0.92).
  double tree_efficiency = 1.0;
  int channels = 24;   // rings/trees in parallel, one SM each (NCCL 2.28 on 2x H200: 24)
  // NCCL's grouped send/recv (all-to-all, send/recv): its channels and
  // chunk (p2p_split.h); the bytes one p2p channel (one CTA) moves per
  // second, summed over every part it serves (sends, receives, the local
  // copy; wire bytes; 0 = no ceiling); the fixed cost of each round of a
  // grouped call (every peer and the rank itself is its own work item with
  // its own connection flags); and the local copy's payload rate (a device
  // memcpy of the rank's own slice: HBM bandwidth x its streaming
  // efficiency / 2, every byte read and written).
  // p2p_connection_rate: the wire bytes one p2p connection (one send part
  // on its channel) moves per second over an idle link: the stores its
  // warps keep in flight over their round trip. k connections leaving a GPU
  // through a link of payload rate R move X with 1/X = 1/(k r) + 1/R (every
  // byte waits its window's round trip and its turn on the link: Little's
  // law for k fixed windows sharing one link), so a grouped call with more
  // parts (more peers, or larger sends split over more channels) gets
  // closer to the link. 0 = none.
  P2pConfig p2p;
  sim::Bandwidth p2p_max_per_channel;
  sim::Bandwidth p2p_connection_rate;
  sim::Duration p2p_round_overhead;
  sim::Bandwidth local_copy;
  bool pxn = true;     // a ring leaves a node through the rail NIC of its entry GPU (NCCL PXN)
  bool nvls = false;   // NVLink SHARP available and enabled

  const StepLatency& latency_of(Algorithm a, Protocol p) const {
    return latency[static_cast<size_t>(a)][static_cast<size_t>(p)];
  }
  StepLatency& latency_of(Algorithm a, Protocol p) {
    return latency[static_cast<size_t>(a)][static_cast<size_t>(p)];
  }
  const ProtocolParams& protocol_of(Protocol p) const {
    return protocol[static_cast<size_t>(p)];
  }
  ProtocolParams& protocol_of(Protocol p) { return protocol[static_cast<size_t>(p)]; }
};

// NCCL 2.28's constants for the GPU generation of `gpu` (Volta, Ampere,
// Hopper, Blackwell, told apart by the preset name), NVLS per the preset.
CollectiveParams nccl_default_params(const gpu::GpuSpec& gpu);

// No latency, no ceilings, every byte payload: the schedule alone, for
// tests against closed forms.
CollectiveParams ideal_params(int channels);

// The parameters to use for `gpu`: a calibration fit when one exists for
// this preset (collective_fit.h), NCCL's defaults otherwise.
CollectiveParams params_for(const gpu::GpuSpec& gpu);

}  // namespace gcsim::models::collectives
