// The flow model's route cache (route_cache.h): lookups by key, shared
// route ids, and the predicted-successor path that a repeated sequence of
// lookups takes, which must return what the hash table would.
#include <vector>

#include "catch.h"
#include "models/network/route_cache.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {
// A route of `n` links starting at link `first` (weights 1), latency n us.
std::vector<WeightedLink> links(int first, int n) {
  std::vector<WeightedLink> v;
  for (int i = 0; i < n; ++i) v.push_back({first + i, 1.0});
  return v;
}

LinkId first_link(const RouteCache::Route& r) { return r.links.empty() ? kNoLink : r.links[0].link; }
}  // namespace

TEST_CASE("route cache: keys in a repeated, broken or new order find their own routes",
          "[flow][route-cache]") {
  RouteCache c;
  // 40 keys (src, dst, qp) -> a route starting at link 10 x key index, and
  // two keys sharing one path (same links and latency: one id).
  std::vector<FlowKey> keys;
  for (int i = 0; i < 40; ++i) keys.push_back({i % 8, 8 + i / 8, static_cast<uint32_t>(i % 3)});
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto l = links(static_cast<int>(10 * i), 3);
    c.insert(keys[i], l, sim::us(int64_t{3}));
  }
  const FlowKey twin{99, 98, 0};
  const RouteCache::Route twin_route = c.insert(twin, links(0, 3), sim::us(int64_t{3}));
  RouteCache::Route first;
  REQUIRE(c.find(keys[0], first));
  CHECK(twin_route.id == first.id);  // same links, weights and latency
  CHECK(c.num_routes() == keys.size());

  auto check_order = [&](const std::vector<size_t>& order) {
    for (size_t i : order) {
      RouteCache::Route r;
      REQUIRE(c.find(keys[i], r));
      CHECK(first_link(r) == static_cast<LinkId>(10 * i));
      CHECK(r.links.size() == 3);
      CHECK(r.latency == sim::us(int64_t{3}));
    }
  };
  std::vector<size_t> forward, backward, skipping;
  for (size_t i = 0; i < keys.size(); ++i) forward.push_back(i);
  for (size_t i = keys.size(); i-- > 0;) backward.push_back(i);
  for (size_t i = 0; i < keys.size(); i += 3) skipping.push_back(i);
  // The insertion order twice (every successor predicted), then orders that
  // break the prediction at every step, then the first again.
  check_order(forward);
  check_order(forward);
  check_order(backward);
  check_order(skipping);
  check_order(forward);

  RouteCache::Route none;
  CHECK_FALSE(c.find({7, 7, 7}, none));
  // After a miss the next lookup still finds its key.
  check_order({5, 6});

  c.clear();
  CHECK(c.size() == 0);
  CHECK_FALSE(c.find(keys[0], none));
  CHECK_FALSE(c.find(keys[1], none));
  // Empty routes (unroutable pairs) are stored like any other.
  const RouteCache::Route empty = c.insert(keys[2], {}, sim::Duration::zero());
  CHECK(empty.links.empty());
  RouteCache::Route again;
  REQUIRE(c.find(keys[2], again));
  CHECK(again.links.empty());
}
