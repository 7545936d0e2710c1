// Maps the packet model's keys, read directly under `network:`, onto
// models::network::PacketConfig. scenario.cpp calls it when
// `network.model: packet`; keys absent from the YAML keep the documented
// defaults of packet_config.h.
//
//   network:
//     model: packet
//     mtu: 4096B            # payload bytes per packet, (0, 9216]
//     buffer: 32MiB         # shared buffer per switch / NIC / NVSwitch
//     dt_alpha: 1.0         # dynamic threshold: a queue may hold alpha × free buffer
//     rto: 320us            # lossy fabrics: resend a lost packet this long after it left
//     counter_interval: 10us
//     pfc: {enabled: true, xoff: 2MiB, xon: 1MiB, headroom: auto, deadlock_check: 100us}
//     ecn: {enabled: true, kmin: 150KiB, kmax: 1500KiB, pmax: 0.01}
//     dcqcn: {enabled: true, g: 0.00390625, alpha_period: 55us, rate_increase_period: 55us,
//             byte_counter: 10MB, fast_recovery_steps: 5, ai_rate: 4Gbps, hai_rate: 40Gbps,
//             min_rate: 1Mbps, cnp_interval: 50us}
//     trains: {enabled: false, packets: 16}   # fluid trains where no queue (approximation)
#pragma once

#include "models/network/packet/packet_config.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// Reads the packet model's keys from `network` (its own nested maps are
// finished here; `network` itself is finished by the caller, which owns
// its other keys). Bad values raise ConfigError naming the key.
models::network::PacketConfig read_packet_config(sim::config::ConfigReader& network);

}  // namespace gcsim::cli
