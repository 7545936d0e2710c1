// The streaming replayer (sim/engine/streaming_replayer.h) and the Chakra stream
// source: a streamed replay is the whole-graph replay, op for op, when the
// window holds the program; a small window still completes and says when
// it held an op back; a million-node trace replays holding a few thousand
// ops; bad traces end with the rank, node and problem named.
#ifndef GCSIM_NO_CHAKRA

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/cluster/cluster_model.h"
#include "scenario/run_gcsim.h"
#include "sim/engine/graph_op_source.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/streaming_replayer.h"
#include "unit/chakra_trace_builder.h"
#include "workloads/chakra/attributes.h"
#include "workloads/chakra/stream_source.h"
#include "workloads/chakra/trace_loader.h"

using namespace gcsim;
using workloads::Op;
using workloads::OpKind;
using Ending = sim::StreamOutcome::Ending;
using test::ChakraTraceBuilder;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Four H100s on NVLink at 400 GB/s, 1 us per hop; collectives hold 16 SMs
// so that they contend with kernels, as in a real run.
models::cluster::ClusterModelConfig cluster_config(int ranks, int collective_sms = 16) {
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = ranks;
  cfg.fabric.gpus_per_node = 8;
  cfg.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(400);
  cfg.fabric.scale_up_latency = sim::us(int64_t{1});
  cfg.fabric.scale_out_bandwidth = sim::Bandwidth::gbps(400);
  cfg.fabric.scale_out_latency = sim::us(int64_t{2});
  cfg.collective_sms = collective_sms;
  return cfg;
}

struct Record {
  int rank;
  uint64_t id;
  int64_t start_ps, end_ps;
  bool operator==(const Record&) const = default;
  bool operator<(const Record& o) const { return rank != o.rank ? rank < o.rank : id < o.id; }
};

class Collect : public sim::StreamObserver {
 public:
  void on_op_done(int rank, const sim::SourcedOp& op, sim::Time s, sim::Time e) override {
    records.push_back({rank, op.id, s.ps(), e.ps()});
  }
  std::vector<Record> records;
};

std::vector<Record> whole_replay(const workloads::WorkloadGraph& g, int collective_sms = 16) {
  sim::Simulator simulator(3);
  models::cluster::ClusterModel cluster(simulator, cluster_config(g.num_ranks(), collective_sms));
  sim::Recorder recorder(g, "", "test");
  sim::Replayer replayer(simulator, g, cluster, recorder);
  replayer.start();
  simulator.run();
  REQUIRE(replayer.outcome().complete);
  std::vector<Record> out;
  for (const auto& r : recorder.records()) out.push_back({r.rank, r.op, r.start.ps(), r.end.ps()});
  return out;
}

struct Streamed {
  sim::StreamOutcome outcome;
  std::vector<Record> records;
};

Streamed stream_replay(sim::OpSource& source, size_t window, int collective_sms = 16) {
  sim::Simulator simulator(3);
  models::cluster::ClusterModel cluster(simulator, cluster_config(source.num_ranks(), collective_sms));
  Collect collect;
  sim::StreamingReplayer replayer(simulator, source, cluster, collect, {window});
  Streamed s;
  s.outcome = replayer.run();
  s.records = std::move(collect.records);
  return s;
}

// A pipeline-like step on 4 ranks: GEMMs and elementwise ops on `compute`,
// a ring of p2p (send on `comm`, receive on its own stream), an
// all-reduce beside the next GEMM, memory alloc/free, a delay.
std::unique_ptr<workloads::WorkloadGraph> ring_step_graph() {
  auto g = std::make_unique<workloads::WorkloadGraph>(4);
  const uint16_t compute = g->intern_stream("compute"), comm = g->intern_stream("comm"),
                 inbox = g->intern_stream("recv");
  const uint32_t world = g->add_communicator({0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    auto& p = g->program(r);
    auto add = [&](const char* name, OpKind kind, uint16_t stream, std::vector<uint32_t> deps,
                   workloads::OpPayload payload) {
      p.ops.push_back(Op{g->intern_name(name), kind, stream, std::move(deps), std::move(payload)});
    };
    const uint16_t next = g->peer_slot(r, (r + 1) % 4), prev = g->peer_slot(r, (r + 3) % 4);
    const uint16_t w = g->comm_slot(r, world);
    models::gpu::MemoryOpShape gelu;
    gelu.elements = (1 << 22) * (r + 1);
    add("alloc", OpKind::memory, compute, {}, workloads::MemoryOp{sim::GiB(1)});
    add("gemm", OpKind::compute, compute, {0},
        workloads::ComputeOp{models::gpu::GemmShape{4096, 4096, 2048 * (r + 1), 1, models::gpu::Dtype::bf16}});
    add("send", OpKind::send, comm, {1}, workloads::P2pOp{next, sim::MiB(32)});
    add("recv", OpKind::recv, inbox, {}, workloads::P2pOp{prev, sim::MiB(32)});
    add("gelu", OpKind::compute, compute, {3}, workloads::ComputeOp{gelu});
    add("allreduce", OpKind::collective, comm, {3},
        workloads::CollectiveOp{workloads::CollectiveKind::all_reduce, sim::MiB(128), w, 0});
    add("gemm2", OpKind::compute, compute, {4},
        workloads::ComputeOp{models::gpu::GemmShape{8192, 8192, 4096, 1, models::gpu::Dtype::bf16}});
    add("wait", OpKind::delay, compute, {5}, workloads::DelayOp{sim::us(int64_t{3})});
    add("free", OpKind::memory, compute, {7}, workloads::MemoryOp{sim::Bytes(-sim::GiB(1).count())});
  }
  REQUIRE(workloads::validate(*g).empty());
  return g;
}

}  // namespace

TEST_CASE("streaming: a graph streamed through a full window replays op for op", "[chakra][stream]") {
  const auto g = ring_step_graph();
  const auto whole = whole_replay(*g);
  sim::GraphOpSource source(*g);
  const Streamed s = stream_replay(source, 1 << 20);
  REQUIRE(s.outcome.complete);
  // Same ops, same times, in the same completion order.
  CHECK(s.records == whole);
  CHECK(s.outcome.late_ops == 0);
  CHECK(s.outcome.window_growths == 0);
  CHECK(s.outcome.peak_rank_window == 9);
}

TEST_CASE("streaming: a small window completes, and counts ops it held back", "[chakra][stream]") {
  const auto g = ring_step_graph();
  auto whole = whole_replay(*g);
  std::sort(whole.begin(), whole.end());
  for (size_t window : {1, 2, 3, 5}) {
    sim::GraphOpSource source(*g);
    Streamed s = stream_replay(source, window);
    INFO("window " << window);
    REQUIRE(s.outcome.complete);
    CHECK(s.outcome.ops_done == g->total_ops());
    CHECK(s.outcome.peak_rank_window <= window * (size_t{1} << s.outcome.window_growths));
    std::sort(s.records.begin(), s.records.end());
    // Either the window changed nothing, or it says it held ops back.
    if (s.records != whole) CHECK(s.outcome.late_ops > 0);
  }
}

TEST_CASE("streaming: a window that stalls grows and the replay goes on", "[chakra][stream]") {
  // Rank 0 computes for 5 us, receives, then runs 8 ops that need the
  // message, then sends; rank 1 answers only after receiving rank 0's
  // send. With a 4-op window rank 0 cannot see its send once the first op
  // is done: every op it holds waits, and the replay stalls at 5 us.
  test::TempDir tmp;
  ChakraTraceBuilder b(2);
  b.comp(0, 100, "x", 5);
  b.recv(0, 0, "r0", 1, 1000, 0);
  for (uint64_t i = 1; i <= 8; ++i) b.comp(0, i, "c" + std::to_string(i), 2, {0});
  b.send(0, 9, "s0", 1, 1000, 0);
  b.recv(1, 0, "r1", 0, 1000, 0);
  b.send(1, 1, "s1", 0, 1000, 0, {0});
  const std::string prefix = (tmp / "stall").string();
  b.write(prefix);
  workloads::chakra::ImportOptions o;
  o.num_ranks = 2;
  o.gpu = test::h100_datasheet();
  workloads::chakra::ChakraStreamSource source(prefix, o);
  const Streamed s = stream_replay(source, 4);
  REQUIRE(s.outcome.complete);
  CHECK(s.outcome.window_growths >= 1);
  // s0 was ready at 0 (its own stream, no deps) but read at the stall.
  CHECK(s.outcome.late_ops >= 1);
  CHECK(s.outcome.max_lateness == sim::us(int64_t{5}));
  CHECK(s.records.size() == 13);  // 11 ops of rank 0, 2 of rank 1
}

TEST_CASE("streaming: a Chakra trace streams to the whole-trace replay's times", "[chakra][stream]") {
  // The hand-built trace of test_chakra_trace.cpp (makespan 1642 us), read
  // two nodes at a time.
  test::TempDir tmp;
  const std::string prefix = (tmp / "hand").string();
  test::write_hand_built_trace(prefix);
  workloads::chakra::ImportOptions o;
  o.num_ranks = 4;
  o.gpu = test::h100_datasheet();
  o.comm_groups["1"] = {0, 1, 2, 3};
  workloads::chakra::ChakraStreamSource source(prefix, o);
  const Streamed s = stream_replay(source, 2, 0);
  REQUIRE(s.outcome.complete);
  CHECK(s.outcome.makespan == sim::Time::zero() + sim::us(int64_t{1642}));
  CHECK(s.outcome.late_ops == 0);
  CHECK(s.outcome.peak_rank_window <= 2);
  auto whole = whole_replay(*workloads::chakra::load_trace(prefix, o).graph, 0);
  // Whole-trace records carry op indices; map them to the node ids.
  const std::vector<std::vector<uint64_t>> ids{{1, 2, 3, 4}, {10, 11, 12, 13}, {0}, {0}};
  for (auto& r : whole) r.id = ids[static_cast<size_t>(r.rank)][r.id];
  auto streamed = s.records;
  std::sort(whole.begin(), whole.end());
  std::sort(streamed.begin(), streamed.end());
  CHECK(streamed == whole);
}

TEST_CASE("streaming: bad traces end naming the rank, node and problem", "[chakra][stream]") {
  test::TempDir tmp;
  int n = 0;
  auto run = [&](const ChakraTraceBuilder& b, int ranks) {
    const std::string prefix = (tmp / ("b" + std::to_string(n++))).string();
    b.write(prefix);
    workloads::chakra::ImportOptions o;
    o.num_ranks = ranks;
    o.gpu = test::h100_datasheet();
    workloads::chakra::ChakraStreamSource source(prefix, o);
    return stream_replay(source, 2).outcome;
  };
  {
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "a", 1);
    b.comp(0, 2, "b", 1, {77});
    const auto out = run(b, 1);
    CHECK(out.ending == Ending::bad_input);
    CHECK(contains(out.problem, ".0.et: rank 0: node 2 ('b') depends on node 77, which is not in the file"));
  }
  {
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "a", 1);
    b.comp(0, 1, "dup", 1);
    const auto out = run(b, 1);
    CHECK(out.ending == Ending::bad_input);
    CHECK(contains(out.problem, "node 1 ('dup'): the id is used by an earlier node"));
  }
  {
    // Nodes before the problem have run when a stream finds it: a replay
    // stops, it never hangs.
    ChakraTraceBuilder b(2);
    b.send(0, 5, "lonely", 1, 64, 3);
    b.comp(1, 1, "x", 1);
    const auto out = run(b, 2);
    CHECK(out.ending == Ending::deadlock);
    CHECK(contains(out.problem, "rank 0: node 5 ('lonely'): SEND to rank 1 (tag 3, 64 B) was never "
                                "matched by a RECV at rank 1 with that tag"));
  }
  {
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "a", 1, {2});
    auto& c = b.comp(0, 2, "b", 1, {1});
    workloads::chakra::add_string(c, "stream", "side");
    const auto out = run(b, 1);
    CHECK(out.ending == Ending::deadlock);
    CHECK(contains(out.problem, "dependency cycle: node 1 ('a') -> node 2 ('b') -> node 1 ('a')"));
  }
  {
    ChakraTraceBuilder b(2);
    b.coll(0, 1, "ar", 0, 64, "");
    b.coll(1, 1, "ar", 0, 128, "");
    const auto out = run(b, 2);
    CHECK(out.ending == Ending::mismatched_communication);
    CHECK(contains(out.problem, "all_reduce of 64 B) meets"));
  }
}

TEST_CASE("streaming: a million-node trace replays holding a bounded window", "[chakra][stream]") {
  // Two ranks, 500 blocks each of 999 chained 1-us COMP nodes and an
  // all-reduce of 0 bytes over both ranks (alpha-beta: 2(n-1) alpha = 2 us,
  // no SMs held). Every block takes 999 + 2 us, so the step is
  // 500 x 1001 us = 500.5 ms. Nodes are written straight to the files.
  test::TempDir tmp;
  const std::string prefix = (tmp / "big").string();
  constexpr uint64_t kBlocks = 500, kPerBlock = 1000;
  {
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    ChakraProtoMsg::Node n;
    for (int r = 0; r < 2; ++r) {
      workloads::chakra::TraceWriter w(workloads::chakra::rank_file(prefix, r), meta);
      for (uint64_t i = 0; i < kBlocks * kPerBlock; ++i) {
        n.Clear();
        n.set_id(i);
        if (i > 0) n.add_data_deps(i - 1);
        if (i % kPerBlock == kPerBlock - 1) {
          n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
          workloads::chakra::add_int(n, "comm_type", 0);
          workloads::chakra::add_int(n, "comm_size", 0);
        } else {
          n.set_type(ChakraProtoMsg::COMP_NODE);
          n.set_duration_micros(1);
        }
        w.write(n);
      }
      w.close();
    }
  }
  workloads::chakra::ImportOptions o;
  o.num_ranks = 2;
  o.gpu = test::h100_datasheet();
  workloads::chakra::ChakraStreamSource source(prefix, o);
  const Streamed s = stream_replay(source, 256, 0);
  REQUIRE(s.outcome.complete);
  CHECK(s.outcome.ops_done == 2 * kBlocks * kPerBlock);
  CHECK(s.outcome.makespan == sim::Time::zero() + sim::us(int64_t{500'500}));
  // A chain needs no look-ahead: nothing held back, never more than the
  // window per rank.
  CHECK(s.outcome.late_ops == 0);
  CHECK(s.outcome.window_growths == 0);
  CHECK(s.outcome.peak_rank_window <= 256);
  CHECK(s.outcome.peak_ops_held <= 512);
}

#endif  // GCSIM_NO_CHAKRA
