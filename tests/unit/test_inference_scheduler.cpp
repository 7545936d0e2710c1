// vLLM's scheduling decisions replayed on small hand-worked cases
// (../shared/REFERENCE.md, "Inference"; vllm/core/scheduler.py for V0,
// vllm/v1/core/sched/scheduler.py for V1): admission stops at the first
// request that does not fit; the watermark blocks admission but not decode;
// V0 never mixes prefill and decode; V1 fills its token budget with running
// requests first, then chunks a prompt into what is left; the newest
// running request is preempted; a prefix hit skips the cached blocks but
// recomputes the last token; drafts are verified.
#include <vector>

#include "catch.h"
#include "test_inference_fixtures.h"
#include "workloads/inference/scheduler_v0.h"
#include "workloads/inference/scheduler_v1.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;

namespace {

SchedulerConfig config(SchedulerMode mode, bool prefix_caching = false) {
  SchedulerConfig c;
  c.mode = mode;
  c.block_size = 16;
  c.max_num_seqs = 256;
  c.max_num_batched_tokens = 8192;
  c.max_model_len = 8192;
  c.enable_prefix_caching = prefix_caching;
  c.enable_chunked_prefill = mode == SchedulerMode::v1;
  return c;
}

// Ends a step: every request that completed its tokens emits one.
std::vector<TokenEvent> finish(Scheduler& s, const StepPlan& p, int64_t accepted = 0) {
  std::vector<TokenEvent> ev;
  s.complete(p, [accepted](const Request&) { return accepted; }, ev);
  return ev;
}

}  // namespace

TEST_CASE("V1: admission stops at the first waiting request that does not fit",
          "[inference][scheduler]") {
  // 10 blocks of 16 tokens. A and B (64 tokens, 4 blocks each) fit; C needs
  // 4 with 2 left: admission stops there, and D (1 block) waits behind it.
  KvCacheManager kv(10, 16, false);
  SchedulerV1 s(config(SchedulerMode::v1), kv);
  auto a = test::request(0, 64, 4), b = test::request(1, 64, 4), c = test::request(2, 64, 4),
       d = test::request(3, 16, 4);
  for (Request* r : {&a, &b, &c, &d}) s.add(r);
  const StepPlan p = s.schedule();
  REQUIRE(p.items.size() == 2);
  CHECK(p.items[0].req == &a);
  CHECK(p.items[1].req == &b);
  CHECK(p.tokens == 128);
  CHECK(kv.used_blocks() == 8);
  CHECK(s.num_waiting() == 2);
  CHECK(s.waiting().front() == &c);
}

TEST_CASE("V0: the watermark blocks admission but not decode", "[inference][scheduler]") {
  // 20 blocks, watermark 5% = 1 block. A (304 tokens = 19 blocks) leaves
  // exactly 1 free: admitted. B (1 block) would leave 0 < 1: LATER.
  KvCacheManager kv(20, 16, false);
  auto cfg = config(SchedulerMode::v0);
  cfg.watermark = 0.05;
  SchedulerV0 s(cfg, kv);
  CHECK(s.watermark_blocks() == 1);
  auto a = test::request(0, 304, 4), b = test::request(1, 16, 4);
  s.add(&a);
  s.add(&b);
  StepPlan p1 = s.schedule();
  REQUIRE(p1.items.size() == 1);
  CHECK(p1.items[0].req == &a);
  CHECK(p1.prefills == 1);
  CHECK(kv.free_blocks() == 1);
  finish(s, p1);
  CHECK(a.num_output == 1);
  // A's 305th token needs a 20th block: decode takes the last free block
  // although admission of B may not go below the watermark.
  const StepPlan p2 = s.schedule();
  REQUIRE(p2.items.size() == 1);
  CHECK(p2.items[0].req == &a);
  CHECK(p2.items[0].decode);
  CHECK(kv.free_blocks() == 0);
  CHECK(s.num_waiting() == 1);
}

TEST_CASE("V0: a step is all prefill or all decode", "[inference][scheduler]") {
  KvCacheManager kv(100, 16, false);
  SchedulerV0 s(config(SchedulerMode::v0), kv);
  auto a = test::request(0, 32, 5), b = test::request(1, 48, 5);
  s.add(&a);
  const StepPlan p1 = s.schedule();
  CHECK(p1.prefills == 1);
  finish(s, p1);
  // B arrives while A decodes: the next step prefills B alone; A waits.
  s.add(&b);
  const StepPlan p2 = s.schedule();
  REQUIRE(p2.items.size() == 1);
  CHECK(p2.items[0].req == &b);
  CHECK(p2.decodes == 0);
  CHECK(p2.tokens == 48);
  finish(s, p2);
  const StepPlan p3 = s.schedule();
  CHECK(p3.prefills == 0);
  CHECK(p3.decodes == 2);
  CHECK(p3.tokens == 2);
}

TEST_CASE("V0: a request that can never fit is rejected, not retried", "[inference][scheduler]") {
  // 200 tokens need 13 blocks of 10: AllocStatus.NEVER.
  KvCacheManager kv(10, 16, false);
  SchedulerV0 s(config(SchedulerMode::v0), kv);
  auto a = test::request(0, 200, 4), b = test::request(1, 16, 4);
  s.add(&a);
  s.add(&b);
  const StepPlan p = s.schedule();
  CHECK(a.state == RequestState::rejected);
  CHECK(p.rejected == 1);
  CHECK(s.rejections() == 1);
  REQUIRE(p.items.size() == 1);
  CHECK(p.items[0].req == &b);
}

TEST_CASE("V1: running requests first, then a prompt chunked into the budget left",
          "[inference][scheduler]") {
  KvCacheManager kv(1000, 16, false);
  auto cfg = config(SchedulerMode::v1);
  cfg.max_num_batched_tokens = 100;
  SchedulerV1 s(cfg, kv);
  auto a = test::request(0, 16, 10), b = test::request(1, 16, 10), c = test::request(2, 16, 10);
  for (Request* r : {&a, &b, &c}) s.add(r);
  finish(s, s.schedule());  // three 16-token prefills, one token each
  auto d = test::request(3, 200, 10);
  s.add(&d);
  // Budget 100: three decodes (1 token each) come first, then 97 tokens of
  // D's 200-token prompt: a mixed step of exactly 100 tokens.
  const StepPlan p = s.schedule();
  REQUIRE(p.items.size() == 4);
  for (int i = 0; i < 3; ++i) CHECK(p.items[static_cast<size_t>(i)].decode);
  CHECK(p.items[3].req == &d);
  CHECK(p.items[3].tokens == 97);
  CHECK(p.items[3].context == 0);
  CHECK(p.tokens == 100);
  CHECK(p.decodes == 3);
  CHECK(p.prefills == 1);
  const auto ev = finish(s, p);
  CHECK(ev.size() == 3);  // D's chunk emits nothing
  // Next: the decodes again and 97 more of D (now a running request).
  const StepPlan p2 = s.schedule();
  REQUIRE(p2.items.size() == 4);
  CHECK(p2.items[3].tokens == 97);
  CHECK(p2.items[3].context == 97);
  finish(s, p2);
  const StepPlan p3 = s.schedule();
  CHECK(p3.items[3].tokens == 6);
  const auto ev3 = finish(s, p3);
  CHECK(ev3.size() == 4);
  CHECK(d.num_output == 1);
}

TEST_CASE("V1: under memory pressure the newest running request is preempted",
          "[inference][scheduler]") {
  // 4 blocks: A and B (32 tokens, 2 blocks each) fill them. Their 33rd
  // tokens each need a third block. A goes first; none is free, so the
  // newest running request, B, is preempted (recompute): its blocks are
  // freed and it returns to the front of the waiting queue.
  KvCacheManager kv(4, 16, false);
  SchedulerV1 s(config(SchedulerMode::v1), kv);
  auto a = test::request(0, 32, 8), b = test::request(1, 32, 8), c = test::request(2, 16, 8);
  s.add(&a);
  s.add(&b);
  finish(s, s.schedule());
  s.add(&c);
  const StepPlan p = s.schedule();
  REQUIRE(p.items.size() == 1);
  CHECK(p.items[0].req == &a);
  CHECK(p.preempted == 1);
  CHECK(b.state == RequestState::waiting);
  CHECK(b.blocks.empty());
  CHECK(b.num_computed == 0);
  CHECK(b.num_output == 1);  // its token is kept; 33 tokens will be recomputed
  CHECK(b.preemptions == 1);
  CHECK(s.preemptions() == 1);
  CHECK(s.waiting().front() == &b);  // ahead of C, which arrived earlier than its preemption
  CHECK(kv.used_blocks() == 3);
  // Nothing was admitted in the step that preempted.
  CHECK(s.num_running() == 1);
}

TEST_CASE("V0: swap preemption moves the newest request's blocks to CPU memory",
          "[inference][scheduler]") {
  KvCacheManager kv(4, 16, false);
  auto cfg = config(SchedulerMode::v0);
  cfg.preemption = PreemptionMode::swap;
  cfg.swap_blocks = 10;
  SchedulerV0 s(cfg, kv);
  auto a = test::request(0, 32, 8), b = test::request(1, 32, 8);
  s.add(&a);
  s.add(&b);
  finish(s, s.schedule());
  const StepPlan p = s.schedule();
  CHECK(p.swap_out_blocks == 2);
  CHECK(b.state == RequestState::swapped);
  CHECK(b.swapped_blocks == 2);
  CHECK(b.num_computed == 32);  // its KV is kept, on the host
  REQUIRE(p.items.size() == 1);
  CHECK(p.items[0].req == &a);
}

TEST_CASE("V1: a prefix hit skips the cached blocks but recomputes the last token",
          "[inference][scheduler][prefix]") {
  KvCacheManager kv(100, 16, true);
  SchedulerV1 s(config(SchedulerMode::v1, true), kv);
  auto a = test::request(0, 64, 1, 7, 64);
  s.add(&a);
  finish(s, s.schedule());
  CHECK(a.state == RequestState::finished);
  CHECK(kv.used_blocks() == 0);  // freed, still cached
  // B is A's prompt again: 3 blocks hit (at most (64 - 1) / 16), the last
  // block (with the last token) is recomputed: 16 tokens over 48 cached.
  // C extends the prefix by 6 tokens: all 4 blocks hit, 6 tokens computed.
  auto b = test::request(1, 64, 2, 7, 64), c = test::request(2, 70, 2, 7, 64);
  s.add(&b);
  s.add(&c);
  const StepPlan p = s.schedule();
  REQUIRE(p.items.size() == 2);
  CHECK(p.items[0].tokens == 16);
  CHECK(p.items[0].context == 48);
  CHECK(p.items[1].tokens == 6);
  CHECK(p.items[1].context == 64);
  CHECK(b.cached_tokens == 48);
  CHECK(c.cached_tokens == 64);
  const auto ev = finish(s, p);
  CHECK(ev.size() == 2);
}

TEST_CASE("V1: speculative decoding schedules drafts and keeps the accepted ones",
          "[inference][scheduler]") {
  KvCacheManager kv(100, 16, false);
  auto cfg = config(SchedulerMode::v1);
  cfg.num_spec_tokens = 3;
  SchedulerV1 s(cfg, kv);
  auto a = test::request(0, 16, 10);
  s.add(&a);
  finish(s, s.schedule());
  // A decodes its newest token plus 3 drafts: 4 tokens; 2 drafts accepted
  // gives 3 tokens at once, and the KV of the rejected draft is dropped.
  const StepPlan p = s.schedule();
  REQUIRE(p.items.size() == 1);
  CHECK(p.items[0].tokens == 4);
  CHECK(p.items[0].spec == 3);
  const auto ev = finish(s, p, 2);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].tokens == 3);
  CHECK(a.num_output == 4);
  CHECK(a.num_computed == 19);  // 16 + 1 + 2 accepted
  CHECK(a.num_tokens() - a.num_computed == 1);
}
