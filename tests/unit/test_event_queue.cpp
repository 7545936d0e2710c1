// The pending-event set pops in one total order: time, then priority (lower
// first), then insertion sequence. Checked by hand on small cases and against
// a sorted reference on a seeded random workload with many ties.
#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "catch.h"
#include "sim/engine/event_queue.h"
#include "sim/engine/random.h"

using namespace gcsim::sim;

namespace {

class NullHandler : public EventHandler {
 public:
  void handle_event(uint64_t) override {}
};

Time at_ps(int64_t p) { return Time::from_ps(p); }

}  // namespace

TEST_CASE("event queue orders by time, then priority, then insertion", "[engine]") {
  NullHandler h;
  EventQueue q;
  // tag = insertion index. Pushed as (time ps, priority):
  //   0:(5,0) 1:(3,1) 2:(3,0) 3:(3,0) 4:(3,-1) 5:(1,7) 6:(5,0)
  // Expected pops: 5 (t=1), then t=3: priority -1 (4), 0 in insertion order
  // (2, 3), 1 (1); then t=5, both priority 0, in insertion order (0, 6).
  const std::vector<std::pair<int64_t, int32_t>> pushes{{5, 0},  {3, 1}, {3, 0}, {3, 0},
                                                        {3, -1}, {1, 7}, {5, 0}};
  for (size_t i = 0; i < pushes.size(); ++i)
    q.push(at_ps(pushes[i].first), pushes[i].second, &h, i);
  REQUIRE(q.size() == 7);
  CHECK(q.top().tag == 5);
  CHECK(q.top().time == at_ps(1));

  std::vector<uint64_t> order;
  while (!q.empty()) {
    Event e = q.pop();
    CHECK(e.handler == &h);
    order.push_back(e.tag);
  }
  CHECK(order == std::vector<uint64_t>{5, 4, 2, 3, 1, 0, 6});
}

TEST_CASE("event queue: identical keys pop in insertion order", "[engine]") {
  NullHandler h;
  EventQueue q;
  // 1000 events at the same time and priority: sequence alone decides, so
  // the tags come back 0, 1, ..., 999.
  for (uint64_t i = 0; i < 1000; ++i) q.push(at_ps(42), 3, &h, i);
  for (uint64_t i = 0; i < 1000; ++i) {
    Event e = q.pop();
    REQUIRE(e.tag == i);
    REQUIRE(e.time == at_ps(42));
    REQUIRE(e.priority == 3);
  }
  CHECK(q.empty());
}

TEST_CASE("event queue: sequence keeps increasing across pops", "[engine]") {
  NullHandler h;
  EventQueue q;
  // Push A(t=10), pop it, push B(t=10) and C(t=10): B and C were inserted
  // after A, and among themselves B first, whatever the heap held before.
  q.push(at_ps(10), 0, &h, 'A');
  CHECK(q.pop().tag == 'A');
  q.push(at_ps(10), 0, &h, 'B');
  q.push(at_ps(10), 0, &h, 'C');
  Event b = q.pop();
  Event c = q.pop();
  CHECK(b.tag == 'B');
  CHECK(c.tag == 'C');
  CHECK(b.sequence < c.sequence);
}

TEST_CASE("event queue: extreme priorities and times", "[engine]") {
  NullHandler h;
  EventQueue q;
  // At equal time INT32_MIN runs before -1 before 0 before INT32_MAX; an
  // event at Time::max() runs after all of them whatever its priority.
  q.push(Time::max(), INT32_MIN, &h, 4);
  q.push(at_ps(0), INT32_MAX, &h, 3);
  q.push(at_ps(0), 0, &h, 2);
  q.push(at_ps(0), -1, &h, 1);
  q.push(at_ps(0), INT32_MIN, &h, 0);
  for (uint64_t i = 0; i < 5; ++i) CHECK(q.pop().tag == i);
}

TEST_CASE("event queue matches a sorted reference on 100k random events", "[engine]") {
  NullHandler h;
  EventQueue q;
  RandomStream rng(2024, "test/event_queue");
  // Reference: an ordered set of (time, priority, sequence, tag). Times are
  // drawn from only 64 values at or after the last popped time and priorities
  // from {-1, 0, 1}, so most events tie on time and many on priority too;
  // the sequence must break those ties exactly as insertion order.
  using Key = std::tuple<int64_t, int32_t, uint64_t, uint64_t>;
  std::set<Key> reference;
  uint64_t inserted = 0;
  int64_t now = 0;
  size_t max_size = 0;
  uint64_t pops = 0;

  auto push_one = [&] {
    const int64_t t = now + static_cast<int64_t>(rng.uniform_int(64));
    const auto p = static_cast<int32_t>(rng.uniform_int(3)) - 1;
    const uint64_t tag = rng.next_u64();
    q.push(at_ps(t), p, &h, tag);
    reference.emplace(t, p, inserted, tag);
    ++inserted;
  };
  auto pop_one = [&] {
    REQUIRE(q.size() == reference.size());
    const Key expected = *reference.begin();
    reference.erase(reference.begin());
    REQUIRE(q.top().time == at_ps(std::get<0>(expected)));
    Event e = q.pop();
    REQUIRE(e.time == at_ps(std::get<0>(expected)));
    REQUIRE(e.priority == std::get<1>(expected));
    REQUIRE(e.sequence == std::get<2>(expected));
    REQUIRE(e.tag == std::get<3>(expected));
    REQUIRE(e.handler == &h);
    now = e.time.ps();
    ++pops;
  };

  // Three phases: grow (push 2 for every pop), churn (1:1), drain (pop 2 for
  // every push), with the push/pop choice itself random in each phase.
  for (int i = 0; i < 50'000; ++i) {
    if (reference.empty() || rng.uniform() < 2.0 / 3.0)
      push_one();
    else
      pop_one();
    max_size = std::max(max_size, q.size());
  }
  for (int i = 0; i < 50'000; ++i) {
    if (reference.empty() || rng.uniform() < 0.5)
      push_one();
    else
      pop_one();
  }
  while (inserted < 100'000) {
    if (reference.empty() || rng.uniform() < 1.0 / 3.0)
      push_one();
    else
      pop_one();
  }
  while (!reference.empty()) pop_one();

  CHECK(q.empty());
  CHECK(inserted == 100'000);
  CHECK(pops == 100'000);
  // The grow phase left roughly 50k/3 ~ 16.7k events pending at its peak.
  CHECK(max_size > 10'000);
}

TEST_CASE("event queue: bulk push then drain equals a stable sort", "[engine]") {
  NullHandler h;
  EventQueue q;
  RandomStream rng(99, "test/event_queue/bulk");
  // 100k events pushed before any pop, times from 1000 values and 5
  // priorities: the pop order must equal std::stable_sort of the insertion
  // list by (time, priority), since stability is exactly "then sequence".
  struct Item {
    int64_t time;
    int32_t priority;
    uint64_t index;
  };
  std::vector<Item> items;
  items.reserve(100'000);
  q.reserve(100'000);
  for (uint64_t i = 0; i < 100'000; ++i) {
    Item it{static_cast<int64_t>(rng.uniform_int(1000)),
            static_cast<int32_t>(rng.uniform_int(5)) - 2, i};
    items.push_back(it);
    q.push(at_ps(it.time), it.priority, &h, i);
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.time != b.time ? a.time < b.time : a.priority < b.priority;
  });
  for (const Item& it : items) {
    Event e = q.pop();
    REQUIRE(e.tag == it.index);
    REQUIRE(e.sequence == it.index);  // the queue's first sequence number is 0
  }
  CHECK(q.empty());
}

namespace {

// Pushes `n` events and pops `pops` of them, checking each pop against an
// ordered reference; times are drawn by `draw(now)` where `now` is the last
// popped time.
template <class Draw>
void run_against_reference(uint64_t seed, int rounds, Draw draw) {
  NullHandler h;
  EventQueue q;
  RandomStream rng(seed, "test/event_queue/reference");
  using Key = std::tuple<int64_t, int32_t, uint64_t>;
  std::set<Key> reference;
  uint64_t sequence = 0;
  int64_t now = 0;
  for (int round = 0; round < rounds; ++round) {
    // Bursts of pushes and pops of random length keep the size swinging
    // between empty and several thousand.
    const auto pushes = static_cast<int>(rng.uniform_int(3000));
    for (int i = 0; i < pushes; ++i) {
      const int64_t t = draw(rng, now);
      const auto p = static_cast<int32_t>(rng.uniform_int(3)) - 1;
      q.push(Time::from_ps(t), p, &h, sequence);
      reference.emplace(t, p, sequence);
      ++sequence;
    }
    const auto pops = static_cast<int>(rng.uniform_int(3000));
    for (int i = 0; i < pops && !reference.empty(); ++i) {
      const Key expected = *reference.begin();
      reference.erase(reference.begin());
      REQUIRE(q.size() == reference.size() + 1);
      REQUIRE(q.next_time() == Time::from_ps(std::get<0>(expected)));
      const Event e = q.pop();
      REQUIRE(e.time.ps() == std::get<0>(expected));
      REQUIRE(e.priority == std::get<1>(expected));
      REQUIRE(e.tag == std::get<2>(expected));
      now = e.time.ps();
    }
  }
  while (!reference.empty()) {
    const Key expected = *reference.begin();
    reference.erase(reference.begin());
    const Event e = q.pop();
    REQUIRE(e.tag == std::get<2>(expected));
  }
  CHECK(q.empty());
}

}  // namespace

TEST_CASE("event queue: large queues with times at or after the last pop", "[engine]") {
  // The simulator's pattern at scale: thousands pending (well past the
  // point where the queue switches from a plain heap to radix buckets),
  // delays from 0 to 2 us, half of them whole microseconds so that equal
  // times are common.
  run_against_reference(11, 60, [](RandomStream& rng, int64_t now) {
    const auto d = static_cast<int64_t>(rng.uniform_int(2'000'000));
    return now + (rng.uniform() < 0.5 ? d - d % 1'000'000 : d);
  });
}

TEST_CASE("event queue: any order of pushes, including before the last pop", "[engine]") {
  // Used on its own the queue accepts any time; events earlier than those
  // already sorted into buckets must still come out first, and the whole
  // range of Time (negative, zero, Time::max) must order correctly.
  run_against_reference(12, 60, [](RandomStream& rng, int64_t now) -> int64_t {
    // Offsets from `now` saturate at the ends of the range.
    const auto offset = [now](int64_t d) {
      int64_t t;
      return __builtin_add_overflow(now, d, &t) ? (d < 0 ? INT64_MIN : INT64_MAX) : t;
    };
    switch (rng.uniform_int(6)) {
      case 0:
        return offset(-static_cast<int64_t>(rng.uniform_int(1'000'000)));  // the past
      case 1:
        return static_cast<int64_t>(rng.next_u64());  // anywhere
      case 2:
        return Time::max().ps();
      case 3:
        return now;
      default:
        return offset(static_cast<int64_t>(rng.uniform_int(1'000'000'000)));
    }
  });
}

TEST_CASE("event queue: thousands of events at one time keep priority and insertion order",
          "[engine]") {
  NullHandler h;
  EventQueue q;
  RandomStream rng(13, "test/event_queue/ties");
  // 5000 events at t = 7 ps with priorities 0..3, plus 5000 spread later:
  // the tied block must come out grouped by priority, each group in
  // insertion order (tags increase), before any later event.
  for (uint64_t i = 0; i < 5000; ++i) {
    q.push(Time::from_ps(7), static_cast<int32_t>(rng.uniform_int(4)), &h, i);
    q.push(Time::from_ps(8 + static_cast<int64_t>(rng.uniform_int(1'000'000))), 0, &h, 100'000 + i);
  }
  int32_t priority = -1;
  uint64_t last_tag = 0;
  for (int i = 0; i < 5000; ++i) {
    const Event e = q.pop();
    REQUIRE(e.time == Time::from_ps(7));
    REQUIRE(e.priority >= priority);
    if (e.priority == priority) REQUIRE(e.tag > last_tag);
    priority = e.priority;
    last_tag = e.tag;
    // Pushing more at the same time now: they are later in sequence than
    // every pending one of their priority, and 3 is the last priority.
    if (i < 100) q.push(Time::from_ps(7), 3, &h, 50'000 + static_cast<uint64_t>(i));
  }
  for (int i = 0; i < 100; ++i) {
    const Event e = q.pop();
    REQUIRE(e.time == Time::from_ps(7));
    REQUIRE(e.tag == 50'000 + static_cast<uint64_t>(i));
  }
  Time last = Time::from_ps(7);
  while (!q.empty()) {
    const Event e = q.pop();
    REQUIRE(e.time >= last);
    last = e.time;
  }
}

TEST_CASE("event queue: an event pushed before the next pending one comes first", "[engine]") {
  NullHandler h;
  EventQueue q;
  // 4000 events at 1000, 1001, ... ps. Peeking sorts the earliest into the
  // queue's front; an event then pushed at 999 ps, and one at 1000 ps with
  // priority -1, must still precede them (what Simulator::run(until) does
  // when it peeks past `until` and the caller schedules in the gap).
  for (int64_t i = 0; i < 4000; ++i)
    q.push(Time::from_ps(1000 + i), 0, &h, static_cast<uint64_t>(i));
  CHECK(q.top().time == Time::from_ps(1000));
  q.push(Time::from_ps(999), 0, &h, 9999);
  q.push(Time::from_ps(1000), -1, &h, 8888);
  CHECK(q.pop().tag == 9999);
  CHECK(q.pop().tag == 8888);
  for (uint64_t i = 0; i < 4000; ++i) REQUIRE(q.pop().tag == i);
  CHECK(q.empty());
}
