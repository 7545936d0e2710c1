// The instances a mirrored communication stands for: its ranks shifted
// along every mirrored axis, those of the same data-parallel replica first.
#include "catch.h"
#include "workloads/training/mirror_siblings.h"

using namespace gcsim::workloads::training;

namespace {

// TP 2 x CP 2 x DP 2 x PP 2 (16 ranks), order tp-cp-ep-dp-pp: rank =
// tp + 2 cp + 4 dp + 8 pp; TP, CP and DP mirrored as a training run does.
struct Fixture {
  ParallelConfig p;
  std::array<bool, kAxes> mirrored{};
  Fixture() {
    p.tp = 2;
    p.cp = 2;
    p.dp = 2;
    p.pp = 2;
    mirrored[static_cast<size_t>(Axis::tp)] = true;
    mirrored[static_cast<size_t>(Axis::cp)] = true;
    mirrored[static_cast<size_t>(Axis::edp)] = true;
  }
};

using Groups = std::vector<std::vector<int>>;

}  // namespace

TEST_CASE("mirror siblings: a group's copies along the other mirrored axes", "[training][mirror]") {
  Fixture f;
  const RankGrid g(f.p);
  // The TP group {0, 1}: shifts along CP (2 3) and DP (4 5, 6 7); along TP
  // it is itself. Same replica (DP offset 0): only the CP shift.
  const auto tp = mirror_siblings(g, f.mirrored, {0, 1}, false);
  CHECK(tp.groups == Groups{{2, 3}, {4, 5}, {6, 7}});
  CHECK(tp.waited == 1);
  // The DP group {0, 4} spans DP: its copies are the other TP and CP
  // coordinates, all in the simulated rank's replica set, so all waited.
  const auto dp = mirror_siblings(g, f.mirrored, {0, 4}, false);
  CHECK(dp.groups == Groups{{1, 5}, {2, 6}, {3, 7}});
  CHECK(dp.waited == 3);
  // A pipeline pair 0 -> 8 stands for every (tp, cp, dp) pair: 7 others,
  // member order kept (the sender stays first); 3 in the same replica.
  const auto pp = mirror_siblings(g, f.mirrored, {0, 8}, true);
  CHECK(pp.groups == Groups{{1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}});
  CHECK(pp.waited == 3);
}

TEST_CASE("mirror siblings: a ring hop's copies are the ring's other hops", "[training][mirror]") {
  Fixture f;
  const RankGrid g(f.p);
  // The mirrored CP ring's hop into rank 0 comes from its CP neighbour 2,
  // listed {2, 0} (sender first). Shifted along CP it is the hop 0 -> 2
  // (the ring's other hop: listed {0, 2}, a distinct transfer), along TP
  // the hops of the TP peer's ring, along DP those of the other replica.
  const auto hop = mirror_siblings(g, f.mirrored, {2, 0}, true);
  CHECK(hop.groups == Groups{{3, 1}, {0, 2}, {1, 3}, {6, 4}, {7, 5}, {4, 6}, {5, 7}});
  CHECK(hop.waited == 3);
}

TEST_CASE("mirror siblings: nothing mirrored, nothing stood for", "[training][mirror]") {
  Fixture f;
  const RankGrid g(f.p);
  const auto none = mirror_siblings(g, std::array<bool, kAxes>{}, {0, 8}, true);
  CHECK(none.groups.empty());
  CHECK(none.waited == 0);
}
