// Settings of the packet-level network model (network.model: packet). The
// defaults follow common 400G RoCE practice; each field names its source.
// YAML maps onto these structs in sim/scenario/packet_config_loader.cpp.
#pragma once

#include <optional>

#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::network {

// IEEE 802.1Qbb priority flow control, per ingress port and priority.
struct PfcConfig {
  // Lossless fabric (NVIDIA Onyx / Cumulus `roce` defaults to lossless
  // mode). Off: a packet that does not fit the buffer is dropped.
  bool enabled = true;
  // An ingress port-priority sends Xoff upstream when its buffered bytes
  // exceed min(xoff, dt_alpha × free shared buffer): the static cap, and the
  // dynamic threshold shared-buffer switches apply to lossless priority
  // groups. 2 MiB lies above ecn.kmax so that ECN marks (and DCQCN acts)
  // before PFC pauses, as Zhu et al. (SIGCOMM 2015, §4) require.
  sim::Bytes xoff = sim::MiB(2);
  // Xon once the buffered bytes fall to xon × (threshold now / xoff), i.e.
  // `xon` when the static cap governs. Half of xoff: 1 MiB drains in 21 us at
  // 400G, far longer than the pause frame's trip, so the queue never runs
  // dry between Xon and the upstream's restart. Chosen, not a vendor figure.
  sim::Bytes xon = sim::MiB(1);
  // Buffer reserved per ingress port for what still arrives after Xoff.
  // nullopt = auto: 3 × rate × link delay (the rule), and never less
  // than 2 × rate × delay + 2 × MTU, the most this model can deliver after
  // an Xoff (bytes on the wire, bytes sent while the pause travels, and a
  // packet mid-serialization), so that PFC is lossless whatever the delay.
  std::optional<sim::Bytes> headroom;
  // How often, while ports are paused, the wait-for graph of paused ports is
  // searched for a cycle (PFC deadlock); also the quiet time after which a
  // fabric with paused ports and no transmission at all is declared stuck.
  sim::Duration deadlock_check = sim::us(int64_t{100});
};

// RED-like ECN marking at switch egress queues (instantaneous queue length,
// as DCQCN's congestion point uses).
struct EcnConfig {
  bool enabled = true;
  // Marking starts above kmin bytes queued (per egress port and priority)
  // and is certain above kmax. NVIDIA Onyx `roce lossless` default: ECN
  // absolute thresholds min 150 KB, max 1500 KB (Onyx user manual, RoCE
  // commands, `show roce`).
  sim::Bytes kmin = sim::KiB(150);
  sim::Bytes kmax = sim::KiB(1500);
  // Marking probability at kmax, rising linearly from 0 at kmin. 1% as in
  // DCQCN (Zhu et al., SIGCOMM 2015, §5 "Pmax = 1%").
  double pmax = 0.01;
};

// DCQCN reaction point at the sending NIC (Zhu et al., SIGCOMM 2015,
// Algorithm 1) and its notification point at the receiver. Timers, byte
// counter, F and g are the paper's (§5; htsim's dcqcn.cpp uses the same).
// The increase steps are scaled to the line rate: the paper's 40 Mb/s at
// 40G would take seconds to regain 400G; htsim uses line/20 and line/10;
// 1% and 10% of 400G are used here. NVIDIA ConnectX firmware ships other
// values (rpg_time_reset 300 us, rpg_byte_reset 32767 B, rpg_ai_rate 5 Mb/s,
// rpg_hai_rate 50 Mb/s) with a different target-rate rule (clamp_tgt_rate
// off) that this paper-faithful reaction point does not reproduce; with them
// two senders sharing a 400G link were cut to under 1 GB/s and stayed there
// for milliseconds (AI of 5 Mb/s per event regains nothing).
struct DcqcnConfig {
  bool enabled = true;
  // alpha <- (1 - g) alpha + g on a CNP, alpha <- (1 - g) alpha per period
  // without one. Paper: g = 1/256, K = 55 us.
  double g = 1.0 / 256.0;
  sim::Duration alpha_period = sim::us(int64_t{55});
  // Rate-increase events: one per `rate_increase_period` (paper T = 55 us)
  // and one per `byte_counter` bytes sent (paper B = 10 MB).
  sim::Duration rate_increase_period = sim::us(int64_t{55});
  sim::Bytes byte_counter = sim::Bytes(10'000'000);
  // Increase events before additive increase starts (paper F = 5).
  int fast_recovery_steps = 5;
  // Additive and hyper-additive increase steps of the target rate: 1% and
  // 10% of a 400G line.
  sim::Bandwidth ai_rate = sim::Bandwidth::gbps(4);
  sim::Bandwidth hai_rate = sim::Bandwidth::gbps(40);
  // Floor of the current rate (ConnectX rpg_min_rate = 1 Mb/s).
  sim::Bandwidth min_rate = sim::Bandwidth::bits_per_s(1e6);
  // The receiver sends at most one CNP per flow per interval (paper N = 50 us).
  sim::Duration cnp_interval = sim::us(int64_t{50});
};

// Packet trains: the switch-over to fluid transmission where no queue has
// built (an approximation, off by default). A source whose flow's whole
// path holds no queued packet sends `packets` full packets back to back as
// one train, one event per hop instead of one per packet; its first and
// last packets keep the exact store-and-forward times of a packet stream.
// A train that reaches a port which is busy or holds a queue is cut back
// into packets there, each arriving at its exact time, so queues, PFC and
// ECN see single packets. What it gives up: a packet reaching a port while
// a train crosses it waits for the train's end (up to packets - 1 packets
// longer), and flows sharing a GPU port take turns per train. README gives
// the measured error.
struct TrainConfig {
  bool enabled = false;
  int packets = 16;  // full packets per train, 2..1024
};

struct PacketConfig {
  // Payload bytes per packet (RoCE / InfiniBand path MTU 4096, what NCCL
  // uses over jumbo-frame fabrics). Headers are not modelled.
  sim::Bytes mtu = sim::Bytes(4096);
  // Shared packet buffer of every forwarding node (network switch, NIC,
  // NVSwitch, PCIe switch). 32 MiB: the order of a 12.8-25.6 Tb/s
  // shared-buffer switch (vendor briefs give tens of MB).
  sim::Bytes buffer = sim::MiB(32);
  // Choudhury-Hahne dynamic threshold (IEEE/ACM ToN 1998): a queue may grow
  // to dt_alpha × the free shared buffer. 1: a lone congested queue takes at
  // most half of the buffer.
  double dt_alpha = 1.0;
  PfcConfig pfc;
  EcnConfig ecn;
  DcqcnConfig dcqcn;
  TrainConfig trains;
  // Without PFC a dropped packet is resent this long after it was first sent
  // (selective repeat, as IRN: Mittal et al., SIGCOMM 2018, RTO_high 320 us).
  sim::Duration rto = sim::us(int64_t{320});
  // Trace counters (utilization, queue depth) are sampled this often, and
  // only while a counter listener is set.
  sim::Duration counter_interval = sim::us(int64_t{10});
};

}  // namespace gcsim::models::network
