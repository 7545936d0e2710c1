// YAML keys of the packet model under `network:`: defaults, overrides, and
// each class of bad value refused with the key (and line) named.
#include <memory>
#include <string>

#include "catch.h"
#include "sim/scenario/packet_config_loader.h"
#include "sim/config/config_error.h"

using namespace gcsim;
using gcsim::models::network::PacketConfig;
using sim::config::ConfigError;
using sim::config::ConfigReader;
using sim::config::ConfigSource;
using sim::config::Json;

namespace {

PacketConfig load(const std::string& yaml) {
  auto source = std::make_shared<ConfigSource>();
  source->file = "packet.yaml";
  Json resolved;
  ConfigReader top(sim::config::load_yaml_text(yaml, "packet.yaml"), "", source, &resolved);
  ConfigReader net = top.child("network", "how communication is simulated");
  net.allow("model");
  PacketConfig c = cli::read_packet_config(net);
  net.finish();
  return c;
}

// The error a config raises: "key: message", or "" if it loads.
std::string error_of(const std::string& yaml, int* line = nullptr) {
  try {
    load(yaml);
  } catch (const ConfigError& e) {
    if (line) *line = e.line();
    return e.key() + ": " + e.message();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TEST_CASE("packet config: defaults and overrides", "[packet][config]") {
  const PacketConfig d = load("network: {model: packet}\n");
  CHECK(d.mtu == sim::Bytes(4096));
  CHECK(d.buffer == sim::MiB(32));
  CHECK(d.pfc.enabled);
  CHECK_FALSE(d.pfc.headroom.has_value());  // auto
  CHECK(d.ecn.kmin == sim::KiB(150));
  CHECK(d.dcqcn.enabled);
  CHECK_FALSE(d.trains.enabled);  // exact per-packet run unless asked
  CHECK(d.trains.packets == 16);
  const PacketConfig t = load("network: {trains: {enabled: true, packets: 64}}\n");
  CHECK(t.trains.enabled);
  CHECK(t.trains.packets == 64);

  const PacketConfig c = load(R"(
network:
  model: packet
  mtu: 1024B
  buffer: 12MiB
  dt_alpha: 0.5
  rto: 100us
  pfc: {enabled: false, xoff: 256KiB, xon: 128KiB, headroom: 96KiB, deadlock_check: 20us}
  ecn: {kmin: 10KiB, kmax: 200KiB, pmax: 0.2}
  dcqcn: {enabled: false, g: 0.0625, ai_rate: 40Mbps, fast_recovery_steps: 1, cnp_interval: 4us}
)");
  CHECK(c.mtu == sim::Bytes(1024));
  CHECK(c.buffer == sim::MiB(12));
  CHECK(c.dt_alpha == 0.5);
  CHECK(c.rto == sim::us(int64_t{100}));
  CHECK_FALSE(c.pfc.enabled);
  CHECK(c.pfc.xoff == sim::KiB(256));
  CHECK(c.pfc.xon == sim::KiB(128));
  REQUIRE(c.pfc.headroom.has_value());
  CHECK(*c.pfc.headroom == sim::KiB(96));
  CHECK(c.pfc.deadlock_check == sim::us(int64_t{20}));
  CHECK(c.ecn.kmax == sim::KiB(200));
  CHECK(c.ecn.pmax == 0.2);
  CHECK_FALSE(c.dcqcn.enabled);
  CHECK(c.dcqcn.g == 0.0625);
  CHECK(c.dcqcn.ai_rate.bytes_per_s() == Approx(40e6 / 8));
  CHECK(c.dcqcn.fast_recovery_steps == 1);
  CHECK(c.dcqcn.cnp_interval == sim::us(int64_t{4}));
  CHECK_FALSE(load("network: {pfc: {headroom: auto}}\n").pfc.headroom.has_value());
}

TEST_CASE("packet config: bad values name their key", "[packet][config]") {
  int line = 0;
  // mtu: zero, above a jumbo frame, not a size.
  CHECK(starts_with(error_of("network:\n  mtu: 0B\n", &line), "network.mtu: must lie in (0, 9216]"));
  CHECK(line == 2);
  CHECK(starts_with(error_of("network: {mtu: 9217B}\n"), "network.mtu: must lie in (0, 9216]"));
  CHECK(starts_with(error_of("network: {mtu: 4096}\n"), "network.mtu: "));  // no unit
  CHECK(starts_with(error_of("network: {buffer: 1KiB}\n"), "network.buffer: must hold"));
  CHECK(starts_with(error_of("network: {dt_alpha: 0}\n"), "network.dt_alpha: must be positive"));
  CHECK(starts_with(error_of("network: {rto: 0us}\n"), "network.rto: must be positive"));
  // PFC: Xon above Xoff, Xoff above the buffer, headroom below a packet.
  CHECK(starts_with(error_of("network:\n  pfc:\n    xoff: 1MiB\n    xon: 2MiB\n", &line),
                    "network.pfc.xon: must not exceed xoff"));
  CHECK(line == 4);
  CHECK(starts_with(error_of("network: {buffer: 1MiB, pfc: {xoff: 2MiB, xon: 1KiB}}\n"),
                    "network.pfc.xoff: must not exceed the buffer"));
  CHECK(starts_with(error_of("network: {pfc: {headroom: 1KiB}}\n"),
                    "network.pfc.headroom: must hold at least one packet"));
  CHECK(starts_with(error_of("network: {pfc: {headroom: lots}}\n"), "network.pfc.headroom: "));
  CHECK(starts_with(error_of("network: {pfc: {deadlock_check: 0us}}\n"),
                    "network.pfc.deadlock_check: must be positive"));
  // ECN: kmin above kmax, pmax outside [0, 1].
  CHECK(starts_with(error_of("network: {ecn: {kmin: 2MiB, kmax: 1MiB}}\n"),
                    "network.ecn.kmin: must not exceed kmax"));
  CHECK(starts_with(error_of("network: {ecn: {pmax: 1.5}}\n"), "network.ecn.pmax: a probability"));
  CHECK(starts_with(error_of("network: {ecn: {pmax: -0.1}}\n"), "network.ecn.pmax: a probability"));
  // DCQCN.
  CHECK(starts_with(error_of("network: {dcqcn: {g: 0}}\n"), "network.dcqcn.g: must lie in (0, 1]"));
  CHECK(starts_with(error_of("network: {dcqcn: {byte_counter: 0B}}\n"),
                    "network.dcqcn.byte_counter: must be positive"));
  CHECK(starts_with(error_of("network: {dcqcn: {fast_recovery_steps: -1}}\n"),
                    "network.dcqcn.fast_recovery_steps: must lie in"));
  CHECK(starts_with(error_of("network: {dcqcn: {ai_rate: 0Gbps}}\n"), "network.dcqcn.ai_rate: "));
  // Trains: a length outside 2..1024, a flag that is not a boolean.
  CHECK(starts_with(error_of("network:\n  trains:\n    packets: 1\n", &line),
                    "network.trains.packets: must lie in"));
  CHECK(line == 3);
  CHECK(starts_with(error_of("network: {trains: {packets: 1025}}\n"), "network.trains.packets: must lie in"));
  CHECK(starts_with(error_of("network: {trains: {enabled: maybe}}\n"), "network.trains.enabled: "));
  // Unknown keys in the nested maps, with a suggestion.
  const std::string unknown = error_of("network: {pfc: {xof: 1MiB}}\n");
  CHECK(unknown.find("xof") != std::string::npos);
  CHECK(unknown.find("xoff") != std::string::npos);
}
