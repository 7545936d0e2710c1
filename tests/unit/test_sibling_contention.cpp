// Which sibling instances of a mirrored communication load the links it
// shares: the up-links of an oversubscribed switch, reached directly or
// through other counted siblings. Fabrics worked out by hand from the
// sizing rules (topologies/clos_sizing.h): four HGX nodes on radix-16
// leaves hold one node per leaf (leaf ports floor(16 r/(r+1)) >= 8); at
// r = 3 a leaf has ceil(8/3) = 3 up-links for 8 NICs (oversubscribed), at
// r = 1 it has 8 (non-blocking). Node n holds ranks 8n..8n+7 on leaf n.
#include <string>

#include "catch.h"
#include "models/cluster/sibling_contention.h"
#include "topologies/build_fabric.h"

using namespace gcsim;
using namespace gcsim::models::network;
using gcsim::models::cluster::SiblingContention;

namespace {

Fabric four_leaves(double oversubscription) {
  topologies::TopologySpec s;
  s.nodes = 4;
  s.gpus_per_node = 8;
  s.scale_up = {topologies::ScaleUpKind::nvswitch, sim::Bandwidth::gb_per_s(450),
                sim::ns(int64_t{600})};
  s.scale_out.topology = topologies::ScaleOutTopology::fat_tree;
  s.scale_out.radix = 16;
  s.scale_out.tiers = 2;
  s.scale_out.leaf_oversubscription = oversubscription;
  return topologies::build_fabric(s);
}

// Cables from `leaf` to spines.
int uplinks(const Fabric& f, const std::string& leaf) {
  int n = 0;
  for (LinkId l : f.out_links(f.find_node(leaf))) n += f.node(f.link(l).to).tier == 2;
  return n;
}

}  // namespace

TEST_CASE("sibling contention: an oversubscribed leaf's up-links are shared", "[mirror][network]") {
  const Fabric f = four_leaves(3.0);
  REQUIRE(uplinks(f, "leaf0") == 3);
  SiblingContention c(f);
  CHECK(c.any());
  // Inside one node nothing crosses a leaf.
  CHECK(c.contended_links({0, 1, 2, 3, 4, 5, 6, 7}).empty());
  // Ranks 0 (leaf 0) and 8 (leaf 1), both ways: each leaf's 3 up-links and
  // the 3 spine links down into it, 12 directed links in all.
  const auto links = c.contended_links({0, 8});
  CHECK(links.size() == 12);
  for (LinkId l : links) {
    const std::string name = f.link(l).name;
    INFO(name);
    CHECK(name.find("spine") != std::string::npos);
    CHECK((name.find("leaf0") != std::string::npos || name.find("leaf1") != std::string::npos));
  }
  // Siblings of the pair {0, 8}: {9, 17} shares leaf 1; {16, 24} shares
  // nothing with {0, 8} but leaf 2 with {9, 17}, which slows its twin;
  // {26, 27} stays inside node 3.
  const std::vector<std::vector<int>> siblings{{16, 24}, {9, 17}, {26, 27}};
  CHECK(c.sharing({0, 8}, siblings) == std::vector<size_t>{0, 1});
  // A group inside one leaf shares nothing: no sibling counts.
  CHECK(c.sharing({0, 1}, siblings).empty());
}

TEST_CASE("sibling contention: none on a non-blocking fabric until an up-link fails",
          "[mirror][network]") {
  Fabric f = four_leaves(1.0);
  REQUIRE(uplinks(f, "leaf0") == 8);
  SiblingContention c(f);
  CHECK_FALSE(c.any());
  CHECK(c.contended_links({0, 8}).empty());
  CHECK(c.sharing({0, 8}, {{1, 9}, {2, 10}}).empty());
  // One of leaf 0's cables to a spine fails: 8 NICs over 7 up-links. Its 7
  // usable up-links count, both ways (14); leaf 1 is still non-blocking.
  LinkId up = kNoLink;
  for (LinkId l : f.out_links(f.find_node("leaf0"))) {
    if (f.node(f.link(l).to).tier == 2) up = l;
  }
  f.set_link_state(up, LinkState::down);
  f.set_link_state(Fabric::reverse(up), LinkState::down);
  CHECK(c.any());
  CHECK(c.contended_links({0, 8}).size() == 14);
  CHECK(c.sharing({0, 8}, {{1, 9}, {18, 26}}) == std::vector<size_t>{0});
}
