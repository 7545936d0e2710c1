#include "sim/scenario/fabric_loader.h"

#include <optional>
#include <sstream>
#include <string>

#include "sim/config/unit_parse.h"
#include "topologies/build_fabric.h"
#include "topologies/topology_error.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using topologies::PlaneAttachment;
using topologies::ScaleOutTopology;
using topologies::ScaleUpKind;
using topologies::TopologyError;
using topologies::TopologySpec;

namespace {

// A link's latency is nanoseconds to microseconds; past a second it is a
// typo, and sums of such hops along a path would overflow simulated time
// (int64 picoseconds, ~106 days).
void check_link_latency(const ConfigReader& at, const std::string& key, sim::Duration d) {
  if (d > sim::seconds(1)) {
    at.fail(key, "a link latency of " + sim::format_duration(d) +
                     " is beyond 1 s; a link takes nanoseconds to microseconds (e.g. 500ns)");
  }
}


// 1.5, not 1.500000.
std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

ScaleUpKind scale_up_kind(const std::string& s) {
  if (s == "pcie") return ScaleUpKind::pcie;
  if (s == "none") return ScaleUpKind::none;
  return ScaleUpKind::nvswitch;
}

ScaleOutTopology topology_of(const std::string& s) {
  for (const auto& t : topologies::topology_catalog()) {
    if (topologies::topology_name(t.topology) == s) return t.topology;
  }
  return ScaleOutTopology::none;
}

std::vector<std::string> topology_names() {
  std::vector<std::string> names;
  for (const auto& t : topologies::topology_catalog()) {
    names.emplace_back(topologies::topology_name(t.topology));
  }
  return names;
}

// A key that belongs to other topologies is an error, not silently unused.
void only_for(const ConfigReader& out, const std::string& key, bool applies,
              const std::string& topology, const std::string& which) {
  if (!applies && out.has(key)) {
    out.fail(key, "applies only to topology " + which + ", not to '" + topology + "'");
  }
}

void read_scale_up(ConfigReader& c, ClusterConfig& cluster, TopologySpec& spec) {
  ConfigReader up = c.child("scale_up", "links inside a node");
  cluster.scale_up.kind = up.get_choice("kind", {"nvswitch", "pcie", "none"},
                                        std::string("nvswitch"), "intra-node interconnect");
  const bool pcie = cluster.scale_up.kind == "pcie";
  cluster.scale_up.bandwidth =
      up.get_bandwidth("bandwidth", pcie ? cluster.gpu.pcie_bandwidth : cluster.gpu.nvlink_bandwidth,
                       "per GPU, each direction (default: the GPU preset's)");
  cluster.scale_up.latency =
      up.get_duration("latency", pcie ? sim::us(int64_t{2}) : cluster.gpu.nvlink_latency,
                      "GPU to GPU through the switch (each GPU-switch link carries half)");
  if (cluster.scale_up.kind == "none" && cluster.gpus_per_node > 1) {
    up.fail("kind", "a node of " + std::to_string(cluster.gpus_per_node) +
                        " GPUs needs a scale-up interconnect (nvswitch or pcie)");
  }
  up.finish();
  spec.scale_up = {scale_up_kind(cluster.scale_up.kind), cluster.scale_up.bandwidth,
                   cluster.scale_up.latency};
}

// `oversubscription: 3` (the leaf tier) or `{leaf: 3, spine: 2}`.
void read_oversubscription(ConfigReader& out, topologies::ScaleOutSpec& o) {
  const char* doc = "downlink:uplink ratio, >= 1 (1 = non-blocking): a number for the leaf tier, "
                    "or {leaf, spine} per tier";
  const YAML::Node n = out.raw("oversubscription", doc);
  if (n.IsSequence()) {
    out.fail("oversubscription", "give a number (the leaf tier) or per tier {leaf: 3, spine: 2}, "
                                 "not a list");
  }
  if (n.IsMap()) {
    ConfigReader per_tier = out.child("oversubscription", doc);
    o.leaf_oversubscription =
        per_tier.get_double("leaf", 1.0, "leaf (tier 1): NIC ports : spine ports");
    o.spine_oversubscription = per_tier.get_double(
        "spine", 1.0, "spine (tier 2, 3 tiers only): leaf ports : core ports");
    for (const char* key : {"leaf", "spine"}) {
      const double r = std::string(key) == "leaf" ? o.leaf_oversubscription
                                                  : o.spine_oversubscription;
      if (!(r >= 1.0)) per_tier.fail(key, "must be >= 1 (1 = non-blocking), got " + number(r));
    }
    if (o.tiers == 2 && o.spine_oversubscription != 1.0) {
      per_tier.fail("spine", "with 2 tiers the spines have no uplinks: spine oversubscription "
                             "needs tiers: 3");
    }
    per_tier.finish();
    return;
  }
  o.leaf_oversubscription = out.get_double("oversubscription", 1.0, doc);
  if (!(o.leaf_oversubscription >= 1.0)) {
    out.fail("oversubscription", "must be >= 1 (1 = non-blocking)");
  }
}

void read_custom(ConfigReader& out, topologies::ScaleOutSpec& o,
                 std::vector<ConfigReader>& switch_readers,
                 std::vector<ConfigReader>& link_readers) {
  switch_readers = out.child_list("switches", "switches of a custom fabric: {name, tier}");
  for (ConfigReader& r : switch_readers) {
    topologies::CustomSwitch s;
    s.name = r.get_string("name", std::nullopt, "unique switch name");
    s.tier = static_cast<int>(
        r.get_int_in("tier", 1, "1 leaf, 2 spine, 3 core (for reports)", 1, 3));
    r.finish();
    o.switches.push_back(std::move(s));
  }
  link_readers = out.child_list(
      "links", "cables of a custom fabric: {from, to, bandwidth, latency}; NICs are node<h>/nic<i>");
  for (ConfigReader& r : link_readers) {
    topologies::CustomLink l;
    l.from = r.get_string("from", std::nullopt, "a switch or a NIC");
    l.to = r.get_string("to", std::nullopt, "a switch or a NIC");
    l.bandwidth = r.get_bandwidth("bandwidth", o.nic_bandwidth,
                                  "each direction (default: scale_out.nic_bandwidth)");
    l.latency = r.get_duration("latency", o.hop_latency, "default: scale_out.hop_latency");
    if (l.latency) check_link_latency(r, "latency", *l.latency);
    r.finish();
    o.links.push_back(std::move(l));
  }
}

// hop_latency (one network link) or latency (NIC to NIC through the top
// tier, 2 x tiers links): either determines the other.
void read_latency(ConfigReader& out, topologies::ScaleOutSpec& o, bool custom,
                  sim::Duration& nic_to_nic) {
  const int links = 2 * o.tiers;
  const char* hop_doc = "one network link: cable plus switch forwarding (0.5 us: see "
                        "topologies/topology_spec.h)";
  const std::string e2e_text = "NIC to NIC through the top tier (" + std::to_string(links) +
                               " links); sets hop_latency = latency / " + std::to_string(links);
  if (custom && out.has("latency")) {
    out.fail("latency", "a custom fabric has no fixed path length: give hop_latency, or latency "
                        "per cable");
  }
  // hop_latency is recorded first whichever was given, so the resolved
  // config keeps one key order; a given latency sets its default.
  sim::Duration hop_default = o.hop_latency;
  const YAML::Node given = out.raw("latency", e2e_text.c_str());
  if (given.IsScalar()) {
    std::string error;
    const auto d = sim::parse_duration(given.Scalar(), &error);
    if (d && *d >= sim::Duration::zero()) hop_default = d->scaled(1.0 / links);
  }
  o.hop_latency = out.get_duration("hop_latency", hop_default, hop_doc);
  check_link_latency(out, "hop_latency", o.hop_latency);
  if (custom) {
    nic_to_nic = o.hop_latency * links;
    return;
  }
  nic_to_nic = out.get_duration("latency", o.hop_latency * links, e2e_text.c_str());
  const sim::Duration hop = nic_to_nic.scaled(1.0 / links);
  if (hop != o.hop_latency) {  // both given (a config printed by `gcsim check` has both)
    out.fail("latency", "disagrees with hop_latency: " + sim::format_duration(nic_to_nic) +
                            " over " + std::to_string(links) + " links is " +
                            sim::format_duration(hop) + " per link, not " +
                            sim::format_duration(o.hop_latency) + " (give one of the two)");
  }
}

}  // namespace

TopologySpec read_topology(ConfigReader& c, ClusterConfig& cluster) {
  TopologySpec spec;
  spec.nodes = cluster.nodes;
  spec.gpus_per_node = cluster.gpus_per_node;
  spec.pcie_bandwidth = cluster.gpu.pcie_bandwidth;
  read_scale_up(c, cluster, spec);

  ConfigReader out = c.child("scale_out", "network between nodes");
  const std::string topology = out.get_choice(
      "topology", topology_names(),
      std::string(cluster.nodes > 1 ? "fat-tree" : "none"), "fabric between nodes");
  topologies::ScaleOutSpec& o = spec.scale_out;
  o.topology = topology_of(topology);
  const bool clos = o.topology == ScaleOutTopology::fat_tree ||
                    o.topology == ScaleOutTopology::rail_optimized ||
                    o.topology == ScaleOutTopology::multi_plane;
  const bool multi = o.topology == ScaleOutTopology::multi_plane;
  const bool custom = o.topology == ScaleOutTopology::custom;
  const std::string clos_names = "fat-tree, rail-optimized or multi-plane";
  for (const char* key : {"tiers", "radix", "oversubscription"}) {
    only_for(out, key, clos, topology, clos_names);
  }
  for (const char* key : {"planes", "plane_attachment"}) {
    only_for(out, key, multi, topology, "multi-plane");
  }
  for (const char* key : {"switches", "links"}) only_for(out, key, custom, topology, "custom");

  if (clos) {
    o.tiers = static_cast<int>(out.get_int_in("tiers", 2, "switch tiers (2 or 3)", 2, 3));
    o.radix = static_cast<int>(out.get_int_in(
        "radix", 64, "ports per switch (64 x 400G: NVIDIA Quantum-2, Spectrum-4)", 2, 4096));
  }
  o.nic_bandwidth = out.get_bandwidth("nic_bandwidth", sim::Bandwidth::gbps(400),
                                      "per GPU (one NIC per GPU, rail)");
  if (clos) read_oversubscription(out, o);
  sim::Duration nic_to_nic;
  read_latency(out, o, custom, nic_to_nic);
  o.nic_latency = out.get_duration("nic_latency", o.nic_latency,
                                   "GPU to its NIC over PCIe, one way, NIC pipeline included");
  if (multi) {
    o.planes = static_cast<int>(out.get_int_in("planes", 2, "independent network planes", 1, 64));
    o.attachment =
        out.get_choice("plane_attachment", {"port-per-plane", "nic-per-plane"},
                       std::string("port-per-plane"),
                       "port-per-plane: each NIC splits its bandwidth over one port per plane "
                       "(Alibaba HPN); nic-per-plane: NIC i in plane i mod planes (DeepSeek-V3)") ==
                "nic-per-plane"
            ? PlaneAttachment::nic_per_plane
            : PlaneAttachment::port_per_plane;
  }
  std::vector<ConfigReader> switch_readers, link_readers;
  if (custom) read_custom(out, o, switch_readers, link_readers);
  out.finish();

  cluster.scale_out.topology = topology;
  cluster.scale_out.tiers = o.tiers;
  cluster.scale_out.nic_bandwidth = o.nic_bandwidth;
  cluster.scale_out.oversubscription = o.leaf_oversubscription;
  cluster.scale_out.latency = nic_to_nic;

  if (cluster.nodes > 1 && o.topology == ScaleOutTopology::none) {
    c.fail("scale_out", "there are " + std::to_string(cluster.nodes) +
                            " nodes but scale_out.topology is none: choose fat-tree, "
                            "rail-optimized, multi-plane or custom");
  }
  try {
    topologies::check_topology(spec);
  } catch (const TopologyError& e) {
    std::vector<ConfigReader>* items = e.key() == "switches" ? &switch_readers
                                       : e.key() == "links"  ? &link_readers
                                                             : nullptr;
    if (items && e.index() >= 0 && e.index() < static_cast<int>(items->size())) {
      (*items)[static_cast<size_t>(e.index())].fail(e.field(), e.what());
    }
    out.fail(e.key(), e.what());
  }
  return spec;
}

std::vector<topologies::FaultSpec> read_faults(ConfigReader& network,
                                               const TopologySpec& topology) {
  const char* doc = "link faults: {link: \"leaf0->spine1\" (one direction) or \"leaf0<->spine1\" "
                    "(the cable), at, state: down | degraded | up, bandwidth_fraction}";
  std::vector<topologies::FaultSpec> faults;
  if (!network.has("faults")) {
    network.raw("faults", doc);  // known and documented, even when absent
    return faults;
  }
  std::optional<models::network::Fabric> fabric;
  for (ConfigReader& r : network.child_list("faults", doc)) {
    topologies::FaultSpec f;
    f.config_line = r.line_of("link");
    f.link = r.get_string("link", std::nullopt, "\"a->b\" (one direction) or \"a<->b\" (both)");
    f.at = sim::Time::zero() + r.get_duration("at", std::nullopt, "simulated time of the change");
    const std::string state = r.get_choice("state", {"down", "degraded", "up"},
                                           std::string("down"), "the link's new state");
    using models::network::LinkState;
    f.state = state == "up" ? LinkState::up
              : state == "degraded" ? LinkState::degraded
                                    : LinkState::down;
    if (f.state == LinkState::degraded) {
      f.bandwidth_fraction = r.get_double("bandwidth_fraction", std::nullopt,
                                          "share of the nominal bandwidth left, in (0, 1]");
      if (!(f.bandwidth_fraction > 0.0 && f.bandwidth_fraction <= 1.0)) {
        r.fail("bandwidth_fraction", "must lie in (0, 1] (0 would be down), got " +
                                         number(f.bandwidth_fraction));
      }
    } else if (r.has("bandwidth_fraction")) {
      r.fail("bandwidth_fraction", "applies only to state: degraded");
    }
    r.finish();
    if (!fabric) fabric.emplace(topologies::build_fabric(topology));
    try {
      topologies::fault_links(*fabric, f.link);
    } catch (const TopologyError& e) {
      r.fail("link", e.what());
    }
    faults.push_back(std::move(f));
  }
  return faults;
}

}  // namespace gcsim::cli
