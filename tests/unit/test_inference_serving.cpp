// Whole serving runs on the simulator: Little's law at steady state, V0's
// steps never mix prefill and decode while V1's do, the benchmark_serving
// metric definitions, rejection of over-long requests, prefix-affinity
// routing, speculative decoding, and disaggregated KV transfers over a
// fabric (bytes / link bandwidth alone, slower when two share a link).
#include <algorithm>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/cluster/cluster_model.h"
#include "models/network/flow_model.h"
#include "test_inference_fixtures.h"
#include "workloads/inference/serving_metrics.h"
#include "workloads/inference/serving_system.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;

namespace {

using test::h100;
using test::NoComm;

ServingConfig llama8b(SchedulerMode mode) {
  ServingConfig c;
  c.model = test::model_preset("llama3-8b");
  c.scheduler.mode = mode;
  c.scheduler.enable_chunked_prefill = mode == SchedulerMode::v1;
  c.scheduler.enable_prefix_caching = mode == SchedulerMode::v1;
  c.scheduler.max_model_len = 8192;
  c.scheduler.max_num_batched_tokens = 8192;
  return c;
}

// Runs `c` on tp=1 replicas with `blocks` KV blocks each.
ServingOutcome run(const ServingConfig& c, int64_t blocks, uint64_t seed = 1,
                   std::vector<Request>* given = nullptr) {
  sim::Simulator sim(seed);
  NoComm comm;
  ServingEnvironment env;
  env.sim = &sim;
  env.gpu = h100();
  env.comm = &comm;
  ServingSystem system(c, {blocks, 16 * 131072}, {}, env, seed);
  return given ? system.run(*given) : system.run();
}

}  // namespace

TEST_CASE("Little's law: requests in the system = arrival rate x mean latency",
          "[inference][serving]") {
  // 3,000 Poisson requests at 6 req/s on one Llama 3 8B replica: a stable
  // queue (about a quarter of the GPU busy). The time-average number of
  // requests the engine holds must match rate x mean E2E within 5%.
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.requests.count = 3000;
  c.requests.rate = 6.0;
  c.requests.prompt = {LengthKind::uniform, 0, 128, 1024};
  c.requests.output = {LengthKind::uniform, 0, 32, 256};
  const ServingOutcome out = run(c, 20'000);
  const ServingMetrics m = compute_metrics(out.requests, out.itl_s, c.slo);
  CHECK(m.completed == 3000);
  const double in_system = mean_requests_in_system(out.steps, out.end.seconds());
  const double little = c.requests.rate * m.e2e.mean;
  INFO("L = " << in_system << ", lambda W = " << little);
  CHECK(in_system == Approx(little).epsilon(0.05));
}

TEST_CASE("V0 steps never mix prefill and decode; V1 steps do", "[inference][serving]") {
  for (SchedulerMode mode : {SchedulerMode::v0, SchedulerMode::v1}) {
    ServingConfig c = llama8b(mode);
    c.requests.count = 300;
    c.requests.rate = 20.0;
    c.requests.prompt.value = 512;
    c.requests.output.value = 64;
    const ServingOutcome out = run(c, 20'000);
    int64_t mixed = 0;
    for (const StepRecord& s : out.steps) mixed += s.prefills > 0 && s.decodes > 0;
    INFO((mode == SchedulerMode::v0 ? "v0" : "v1"));
    if (mode == SchedulerMode::v0) {
      CHECK(mixed == 0);
    } else {
      CHECK(mixed > 0);
    }
    for (const Request& r : out.requests) CHECK(r.num_output == 64);
  }
}

TEST_CASE("V1 under memory pressure preempts and still finishes everything",
          "[inference][serving]") {
  // 200 blocks (3,200 tokens) for 64 requests of 512 + 256 tokens arriving
  // at once: admission fills the cache, decodes outgrow it, the newest
  // running requests are preempted and recomputed.
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.requests.count = 64;
  c.requests.arrival = ArrivalKind::burst;
  c.requests.prompt.value = 512;
  c.requests.output.value = 256;
  const ServingOutcome out = run(c, 200);
  CHECK(out.preemptions > 0);
  int64_t done = 0;
  for (const Request& r : out.requests) done += r.state == RequestState::finished && r.num_output == 256;
  CHECK(done == 64);
  CHECK(out.replicas[0].peak_used_blocks <= 200);
}

TEST_CASE("metrics follow benchmark_serving's definitions", "[inference][serving]") {
  std::vector<Request> rs(3);
  // A: arrives 0, first token 0.1 s, 5 tokens, finishes 0.5 s:
  //    TTFT 0.1, E2E 0.5, TPOT (0.5 - 0.1) / 4 = 0.1.
  rs[0].arrival = sim::Time::zero();
  rs[0].first_token = sim::Time::zero() + sim::ms(int64_t{100});
  rs[0].finish = sim::Time::zero() + sim::ms(int64_t{500});
  rs[0].num_output = 5;
  rs[0].state = RequestState::finished;
  // B: arrives 1.0, one token at 1.2: TTFT 0.2, no TPOT.
  rs[1].arrival = sim::Time::zero() + sim::seconds(int64_t{1});
  rs[1].first_token = sim::Time::zero() + sim::ms(int64_t{1200});
  rs[1].finish = rs[1].first_token;
  rs[1].num_output = 1;
  rs[1].state = RequestState::finished;
  // C: rejected (too long).
  rs[2].state = RequestState::rejected;
  SloConfig slo;
  slo.ttft = sim::ms(int64_t{150});
  const ServingMetrics m = compute_metrics(rs, {0.1, 0.1, 0.1, 0.1}, slo);
  CHECK(m.completed == 2);
  CHECK(m.rejected == 1);
  CHECK(m.ttft.mean == Approx(0.15));
  CHECK(m.tpot.count == 1);
  CHECK(m.tpot.mean == Approx(0.1));
  CHECK(m.itl.p50 == Approx(0.1));
  CHECK(m.e2e.p50 == Approx(0.35));  // 0.5 and 0.2
  CHECK(m.duration_s == Approx(1.2));
  CHECK(m.requests_per_s == Approx(2 / 1.2));
  CHECK(m.output_tokens_per_s == Approx(6 / 1.2));
  // Only A meets TTFT <= 150 ms; B misses it, C was refused: 1 of 3.
  CHECK(*m.slo_attainment == Approx(1.0 / 3));
  CHECK(*m.goodput_requests_per_s == Approx(1 / 1.2));
  // numpy percentiles: [1, 2, 3, 4] -> p50 2.5, p90 3.7, p99 3.97.
  CHECK(percentile({1, 2, 3, 4}, 50) == Approx(2.5));
  CHECK(percentile({1, 2, 3, 4}, 90) == Approx(3.7));
  CHECK(percentile({1, 2, 3, 4}, 99) == Approx(3.97));
}

TEST_CASE("ITL pools the gaps between emissions; TPOT averages per request",
          "[inference][serving]") {
  // One request alone: every decode step is the same, so TPOT and every ITL
  // equal the step time, and E2E = TTFT + (n - 1) x TPOT.
  ServingConfig c = llama8b(SchedulerMode::v1);
  std::vector<Request> rs{test::request(0, 256, 32)};
  const ServingOutcome out = run(c, 1000, 1, &rs);
  const ServingMetrics m = compute_metrics(out.requests, out.itl_s, c.slo);
  CHECK(m.itl.count == 31);
  // (decode attention reads one more token each step: < 0.1% apart)
  CHECK(m.itl.p99 == Approx(m.itl.p50).epsilon(1e-3));
  CHECK(m.tpot.mean == Approx(m.itl.mean).epsilon(1e-9));
  CHECK(m.e2e.mean == Approx(m.ttft.mean + 31 * m.tpot.mean).epsilon(1e-9));
  CHECK(out.steps.size() == 32);  // one prefill, 31 decodes
}

TEST_CASE("a request longer than max_model_len is rejected and counted, never retried",
          "[inference][serving]") {
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.scheduler.max_model_len = 1024;
  std::vector<Request> rs{test::request(0, 2000, 10), test::request(1, 100, 10),
                          test::request(2, 1000, 100)};
  const ServingOutcome out = run(c, 1000, 1, &rs);
  CHECK(out.requests[0].state == RequestState::rejected);
  CHECK(out.rejected == 1);
  CHECK(out.requests[1].num_output == 10);
  // 1,000 prompt tokens leave room for 24 of the 100 asked.
  CHECK(out.requests[2].num_output == 24);
}

TEST_CASE("prefix-affinity routing keeps a prefix on one replica's cache", "[inference][serving]") {
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.replicas = 4;
  c.requests.count = 400;
  c.requests.rate = 20;
  c.requests.prompt.value = 1024;
  c.requests.output.value = 16;
  c.requests.prefix_groups = 4;
  c.requests.prefix_len = 960;
  double rate[2];
  for (int i = 0; i < 2; ++i) {
    c.router = i == 0 ? RouterKind::round_robin : RouterKind::prefix_affinity;
    const ServingOutcome out = run(c, 5000);
    int64_t q = 0, h = 0;
    for (const auto& r : out.replicas) {
      q += r.prefix_queried_tokens;
      h += r.prefix_hit_tokens;
    }
    rate[i] = static_cast<double>(h) / static_cast<double>(q);
  }
  // Round robin makes each replica see each prefix cold once (16 misses of
  // 400); affinity only 4. Hits are whole 16-token blocks of the 960 shared.
  CHECK(rate[1] > rate[0]);
  CHECK(rate[1] == Approx(960.0 / 1024 * 396 / 400).epsilon(0.01));
}

TEST_CASE("speculative decoding emits accepted drafts at once", "[inference][serving]") {
  ServingConfig c = llama8b(SchedulerMode::v1);
  std::vector<Request> rs{test::request(0, 256, 33)};
  const ServingOutcome plain = run(c, 1000, 1, &rs);
  c.speculative.method = SpecMethod::ngram;  // no draft cost
  c.speculative.num_tokens = 3;
  c.speculative.acceptance_rate = 1.0;
  c.scheduler.num_spec_tokens = 3;
  const ServingOutcome spec = run(c, 1000, 1, &rs);
  // Every step accepts 3 drafts and adds one token: 32 tokens after the
  // first take 8 decode steps instead of 32.
  CHECK(plain.steps.size() == 33);
  CHECK(spec.steps.size() == 9);
  CHECK(spec.requests[0].num_output == 33);
  CHECK(spec.requests[0].finish < plain.requests[0].finish);
  // A draft model costs passes of its own: slower than free drafts.
  c.speculative.method = SpecMethod::draft_model;
  c.speculative.draft = test::model_preset("llama3-8b");
  c.speculative.draft.layers = 2;
  const ServingOutcome drafted = run(c, 1000, 1, &rs);
  CHECK(drafted.steps.size() == 9);
  CHECK(drafted.requests[0].finish > spec.requests[0].finish);
}

TEST_CASE("same seed, same run", "[inference][serving]") {
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.requests.count = 200;
  c.requests.rate = 10;
  c.requests.prompt = {LengthKind::uniform, 0, 16, 2048};
  const ServingOutcome a = run(c, 3000, 4), b = run(c, 3000, 4), d = run(c, 3000, 5);
  bool same = true, differ = false;
  for (size_t i = 0; i < a.requests.size(); ++i) {
    same = same && a.requests[i].first_token == b.requests[i].first_token &&
           a.requests[i].finish == b.requests[i].finish;
    differ = differ || a.requests[i].finish != d.requests[i].finish;
  }
  CHECK(same);
  CHECK(differ);
}

namespace {

// Disaggregation on a hand-built fabric: hosts of one GPU each, every NIC
// 400 Gb/s = 50e9 B/s; the flow model shares links max-min.
struct DisaggRig {
  models::network::Fabric fabric;
  sim::Simulator sim{1};
  std::unique_ptr<models::network::Routing> routing;
  std::unique_ptr<models::network::FlowModel> flow;
  std::unique_ptr<models::cluster::ClusterModel> cluster;
  NoComm comm;

  explicit DisaggRig(int hosts) {
    test::SmallFabricSpec spec;
    spec.hosts = hosts;
    spec.gpus_per_host = 1;
    fabric = test::small_fabric(spec);
    routing = std::make_unique<models::network::Routing>(fabric, 1);
    flow = std::make_unique<models::network::FlowModel>(sim, fabric, *routing,
                                                         models::network::RoutingPolicy::ecmp);
    models::cluster::ClusterModelConfig cc;
    cc.gpu = h100();
    cc.num_ranks = hosts;
    cc.fabric.gpus_per_node = 1;
    cluster = std::make_unique<models::cluster::ClusterModel>(sim, cc);
    cluster->attach_network(*flow, fabric);
  }
  ServingOutcome run(const ServingConfig& c, std::vector<Request> rs) {
    ServingEnvironment env;
    env.sim = &sim;
    env.gpu = h100();
    env.comm = &comm;
    env.transport = cluster.get();
    ServingSystem system(c, {4000, 16 * 131072}, {4000, 16 * 131072}, env, 1);
    return system.run(std::move(rs));
  }
};

ServingConfig disaggregated(int prefill, int decode) {
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.disaggregation.enabled = true;
  c.disaggregation.prefill_replicas = prefill;
  c.disaggregation.decode_replicas = decode;
  c.disaggregation.prefill_tp = 1;
  return c;
}

}  // namespace

TEST_CASE("disaggregation: a KV transfer alone takes latency + bytes / link bandwidth",
          "[inference][serving][disagg]") {
  // Prefill on host 0, decode on host 1. 1,024 prompt tokens x 131,072 B =
  // 134,217,728 B over the 50e9 B/s NICs: 2.684354560 ms, plus 3 us of
  // path latency (PCIe 0.5 us each end, four switch hops of 0.5 us).
  DisaggRig rig(2);
  const ServingOutcome out = rig.run(disaggregated(1, 1), {test::request(0, 1024, 8)});
  REQUIRE(out.transfers.size() == 1);
  const auto& t = out.transfers[0];
  CHECK(t.bytes.count() == 134'217'728);
  CHECK(t.src_rank == 0);
  CHECK(t.dst_rank == 1);
  CHECK((t.end - t.start).seconds() == Approx(3e-6 + 134'217'728 / 50e9).epsilon(1e-9));
  const Request& r = out.requests[0];
  CHECK(r.state == RequestState::finished);
  CHECK(r.num_output == 8);
  // The client's first token comes from the decode replica, after the
  // transfer: TTFT > prefill + transfer.
  CHECK(r.first_token > t.end);
}

TEST_CASE("disaggregation: two transfers into one decode GPU share its link",
          "[inference][serving][disagg]") {
  // Two prefill replicas (hosts 0 and 1) finish identical prompts at the
  // same instant; both KV caches go to the one decode replica (host 2), so
  // both flows cross its 50e9 B/s NIC link: each gets half and takes twice
  // as long as alone.
  DisaggRig rig(3);
  const ServingOutcome out =
      rig.run(disaggregated(2, 1), {test::request(0, 1024, 4), test::request(1, 1024, 4)});
  REQUIRE(out.transfers.size() == 2);
  const double alone = 3e-6 + 134'217'728 / 50e9;
  for (const auto& t : out.transfers) {
    CHECK(t.dst_rank == 2);
    CHECK(t.start == out.transfers[0].start);
    // Twice the bandwidth term; the microseconds of latency overlap.
    CHECK((t.end - t.start).seconds() == Approx(3e-6 + 2 * 134'217'728 / 50e9).epsilon(1e-3));
    CHECK((t.end - t.start).seconds() > 1.9 * alone);
  }
}

TEST_CASE("disaggregation: layer-by-layer transfers overlap the prefill", "[inference][serving][disagg]") {
  DisaggRig whole(2), layered(2);
  ServingConfig c = disaggregated(1, 1);
  const ServingOutcome a = whole.run(c, {test::request(0, 4096, 4)});
  c.disaggregation.layerwise = true;
  c.disaggregation.layers_per_transfer = 8;  // 32 layers in 4 transfers
  const ServingOutcome b = layered.run(c, {test::request(0, 4096, 4)});
  CHECK(b.transfers.size() == 4);
  int64_t bytes = 0;
  for (const auto& t : b.transfers) bytes += t.bytes.count();
  CHECK(bytes == a.transfers[0].bytes.count());
  // The first layers' KV leaves while the prefill still runs, so the decode
  // replica has it all sooner.
  CHECK(b.requests[0].first_token < a.requests[0].first_token);
}

TEST_CASE("pipeline parallelism keeps pp steps in flight", "[inference][serving]") {
  // Llama 3 8B over 2 stages: a step enters stage 0 as soon as the previous
  // one has moved to stage 1 (vLLM runs pp batches at once), so steps
  // overlap, and requests in flight are not scheduled twice.
  ServingConfig c = llama8b(SchedulerMode::v1);
  c.parallel = {1, 2, 1};
  c.requests.count = 64;
  c.requests.arrival = ArrivalKind::burst;
  // 64 x 256 prompt tokens fill two 8,192-token steps: two groups of 32
  // requests that then alternate through the pipeline.
  c.requests.prompt.value = 256;
  c.requests.output.value = 32;
  sim::Simulator sim(1);
  NoComm comm;
  ServingEnvironment env;
  env.sim = &sim;
  env.gpu = h100();
  env.comm = &comm;
  ServingSystem system(c, {4000, 16 * 65536}, {}, env, 1);
  const ServingOutcome out = system.run();
  int64_t overlaps = 0;
  for (size_t i = 1; i < out.steps.size(); ++i) overlaps += out.steps[i].start < out.steps[i - 1].end;
  CHECK(overlaps > 0);
  for (const Request& r : out.requests) CHECK(r.num_output == 32);
  // Two steps at a time, never three: at any step start at most one other
  // step is still running.
  for (size_t i = 2; i < out.steps.size(); ++i) CHECK(out.steps[i].start >= out.steps[i - 2].end);
}
