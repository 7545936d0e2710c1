#include "sim/scenario/packet_config_loader.h"

#include <string>

#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using models::network::PacketConfig;
using sim::config::ConfigReader;

namespace {

// The largest jumbo frame switches forward (9216 B): no packet is bigger.
constexpr int64_t kMaxMtu = 9216;

void read_pfc(ConfigReader& r, PacketConfig& c) {
  auto& p = c.pfc;
  p.enabled = r.get_bool("enabled", p.enabled, "priority flow control (lossless); off: full buffers drop");
  p.xoff = r.get_bytes("xoff", p.xoff,
                       "an ingress port-priority pauses its upstream above min(xoff, dt_alpha × free buffer)");
  p.xon = r.get_bytes("xon", p.xon, "resume once its bytes fall to xon (scaled with the threshold)");
  constexpr const char* kHeadroomDoc =
      "buffer reserved per ingress port for bytes in flight after Xoff: auto (3 × rate × link "
      "delay, at least 2 × rate × delay + 2 MTU) or a size";
  const YAML::Node h = r.raw("headroom", kHeadroomDoc);
  if (!h.IsDefined() || h.IsNull() || (h.IsScalar() && h.Scalar() == "auto")) {
    r.get_string("headroom", std::string("auto"), kHeadroomDoc);
    p.headroom.reset();
  } else {
    p.headroom = r.get_bytes("headroom", std::nullopt, kHeadroomDoc);
    if (*p.headroom < c.mtu) r.fail("headroom", "must hold at least one packet (mtu)");
  }
  p.deadlock_check = r.get_duration("deadlock_check", p.deadlock_check,
                                    "how often paused ports are searched for a deadlock cycle");
  if (p.xoff.count() <= 0) r.fail("xoff", "must be positive");
  if (p.xoff > c.buffer) r.fail("xoff", "must not exceed the buffer (" + sim::format_bytes(c.buffer) + ")");
  if (p.xon > p.xoff) {
    r.fail("xon", "must not exceed xoff (" + sim::format_bytes(p.xoff) + "): Xon is the lower mark");
  }
  if (p.deadlock_check <= sim::Duration::zero()) r.fail("deadlock_check", "must be positive");
}

void read_ecn(ConfigReader& r, PacketConfig& c) {
  auto& e = c.ecn;
  e.enabled = r.get_bool("enabled", e.enabled, "mark ECN at switch egress queues");
  e.kmin = r.get_bytes("kmin", e.kmin, "queue bytes above which marking starts");
  e.kmax = r.get_bytes("kmax", e.kmax, "queue bytes above which every packet is marked");
  e.pmax = r.get_double("pmax", e.pmax, "marking probability at kmax, rising linearly from kmin");
  if (e.kmin > e.kmax) {
    r.fail("kmin", "must not exceed kmax (" + sim::format_bytes(e.kmax) + ")");
  }
  if (!(e.pmax >= 0.0 && e.pmax <= 1.0)) r.fail("pmax", "a probability must lie in [0, 1]");
}

void read_dcqcn(ConfigReader& r, PacketConfig& c) {
  auto& d = c.dcqcn;
  d.enabled = r.get_bool("enabled", d.enabled, "DCQCN rate control at the sending NICs");
  d.g = r.get_double("g", d.g, "alpha gain: alpha <- (1 - g) alpha + g per CNP");
  d.alpha_period = r.get_duration("alpha_period", d.alpha_period,
                                  "alpha decays by (1 - g) per period without a CNP");
  d.rate_increase_period = r.get_duration("rate_increase_period", d.rate_increase_period,
                                          "a rate-increase event per period without a CNP");
  d.byte_counter = r.get_bytes("byte_counter", d.byte_counter,
                               "a rate-increase event per this many bytes sent");
  d.fast_recovery_steps = static_cast<int>(r.get_int_in(
      "fast_recovery_steps", d.fast_recovery_steps,
      "increase events that only recover toward the target before additive increase", 0, 1000));
  d.ai_rate = r.get_bandwidth("ai_rate", d.ai_rate, "additive increase of the target rate");
  d.hai_rate = r.get_bandwidth("hai_rate", d.hai_rate, "hyper-additive increase step");
  d.min_rate = r.get_bandwidth("min_rate", d.min_rate, "the rate is never cut below this");
  d.cnp_interval = r.get_duration("cnp_interval", d.cnp_interval,
                                  "the receiver sends at most one CNP per flow per interval");
  if (!(d.g > 0.0 && d.g <= 1.0)) r.fail("g", "must lie in (0, 1]");
  if (d.alpha_period <= sim::Duration::zero()) r.fail("alpha_period", "must be positive");
  if (d.rate_increase_period <= sim::Duration::zero()) {
    r.fail("rate_increase_period", "must be positive");
  }
  if (d.byte_counter.count() <= 0) r.fail("byte_counter", "must be positive");
}

void read_trains(ConfigReader& r, PacketConfig& c) {
  auto& t = c.trains;
  t.enabled = r.get_bool("enabled", t.enabled,
                         "send full packets as trains where no queue has built (an approximation: "
                         "README gives its error); false: every packet is an event");
  t.packets = static_cast<int>(
      r.get_int_in("packets", t.packets, "full packets per train", 2, 1024));
}

}  // namespace

PacketConfig read_packet_config(ConfigReader& network) {
  PacketConfig c;
  c.mtu = network.get_bytes("mtu", c.mtu, "payload bytes per packet (packet model)");
  if (c.mtu.count() <= 0 || c.mtu.count() > kMaxMtu) {
    network.fail("mtu", "must lie in (0, 9216] bytes (the largest jumbo frame), got " +
                            sim::format_bytes(c.mtu));
  }
  c.buffer = network.get_bytes("buffer", c.buffer,
                               "shared packet buffer of each switch, NIC and NVSwitch");
  if (c.buffer < c.mtu) network.fail("buffer", "must hold at least one packet (mtu)");
  c.dt_alpha = network.get_double("dt_alpha", c.dt_alpha,
                                  "dynamic threshold: a queue may hold dt_alpha × the free buffer");
  if (!(c.dt_alpha > 0.0)) network.fail("dt_alpha", "must be positive");
  c.rto = network.get_duration("rto", c.rto,
                               "without PFC, a lost packet is resent this long after it was sent");
  if (c.rto <= sim::Duration::zero()) network.fail("rto", "must be positive");
  c.counter_interval = network.get_duration("counter_interval", c.counter_interval,
                                            "trace counters (utilization, queue depth) period");
  if (c.counter_interval <= sim::Duration::zero()) network.fail("counter_interval", "must be positive");

  ConfigReader pfc = network.child("pfc", "priority flow control (IEEE 802.1Qbb)");
  read_pfc(pfc, c);
  pfc.finish();
  ConfigReader ecn = network.child("ecn", "ECN marking at switch egress (RED-like)");
  read_ecn(ecn, c);
  ecn.finish();
  ConfigReader dcqcn = network.child("dcqcn", "DCQCN rate control (Zhu et al. 2015)");
  read_dcqcn(dcqcn, c);
  dcqcn.finish();
  ConfigReader trains = network.child("trains", "packet trains: fluid transmission where no queue");
  read_trains(trains, c);
  trains.finish();
  return c;
}

}  // namespace gcsim::cli
