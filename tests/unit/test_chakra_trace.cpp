// Chakra execution traces (workloads/chakra/): attributes of every integer
// type, the delimited file format, node conversion, and a hand-built trace
// replayed with times computed by hand.
#ifndef GCSIM_NO_CHAKRA

#include <filesystem>
#include <fstream>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/cluster/cluster_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "scenario/run_gcsim.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "unit/chakra_trace_builder.h"
#include "workloads/chakra/attributes.h"
#include "workloads/chakra/kernel_attrs.h"
#include "workloads/chakra/node_converter.h"
#include "workloads/chakra/trace_file.h"
#include "workloads/chakra/trace_loader.h"

using namespace gcsim;
using namespace gcsim::workloads::chakra;
using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;
using test::ChakraTraceBuilder;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The message of the TraceError `f` throws ("" if it throws none).
template <typename F>
std::string trace_error(F&& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

ImportOptions options(int ranks) {
  ImportOptions o;
  o.num_ranks = ranks;
  o.gpu = test::h100_datasheet();
  return o;
}

}  // namespace

TEST_CASE("chakra: comm_size is read from every integer attribute type", "[chakra]") {
  // Tracers disagree on the type of integer attributes; all must read.
  const int64_t v = 123456;
  std::vector<std::function<void(AttributeProto&)>> setters{
      [&](AttributeProto& a) { a.set_int32_val(static_cast<int32_t>(v)); },
      [&](AttributeProto& a) { a.set_int64_val(v); },
      [&](AttributeProto& a) { a.set_uint32_val(static_cast<uint32_t>(v)); },
      [&](AttributeProto& a) { a.set_uint64_val(static_cast<uint64_t>(v)); },
      [&](AttributeProto& a) { a.set_sint32_val(static_cast<int32_t>(v)); },
      [&](AttributeProto& a) { a.set_sint64_val(v); },
      [&](AttributeProto& a) { a.set_fixed32_val(static_cast<uint32_t>(v)); },
      [&](AttributeProto& a) { a.set_fixed64_val(static_cast<uint64_t>(v)); },
      [&](AttributeProto& a) { a.set_sfixed32_val(static_cast<int32_t>(v)); },
      [&](AttributeProto& a) { a.set_sfixed64_val(v); },
  };
  for (size_t i = 0; i < setters.size(); ++i) {
    Node n;
    AttributeProto* a = n.add_attr();
    a->set_name("comm_size");
    setters[i](*a);
    INFO("setter " << i);
    CHECK(int_attr(n, "comm_size") == v);
    CHECK(number_attr(n, "comm_size") == static_cast<double>(v));
  }
  Node n;
  add_uint(n, "huge", uint64_t{1} << 63);
  CHECK_THROWS_WITH(int_attr(n, "huge"), Catch::Contains("beyond the largest supported value"));
  add_string(n, "text", "ten");
  CHECK_THROWS_WITH(int_attr(n, "text"), Catch::Contains("'text' must be an integer"));
  CHECK_FALSE(int_attr(n, "absent").has_value());
  add_int(n, "pg", 3);
  CHECK(string_attr(n, "pg") == "3");  // pg_name written as an integer
}

TEST_CASE("chakra: the reader returns the nodes written, then the end", "[chakra]") {
  test::TempDir tmp;
  ChakraTraceBuilder b(1);
  b.comp(0, 7, "first", 3);
  b.comp(0, 9, "second", 4, {7});
  b.write((tmp / "t").string());
  TraceReader r(rank_file((tmp / "t").string(), 0));
  CHECK(r.metadata().version() == "0.0.4");
  Node n;
  REQUIRE(r.next(n));
  CHECK(n.id() == 7);
  CHECK(n.name() == "first");
  REQUIRE(r.next(n));
  CHECK(n.id() == 9);
  CHECK(n.data_deps_size() == 1);  // not merged with the first node's fields
  CHECK_FALSE(r.next(n));
  CHECK(r.nodes_read() == 2);
}

TEST_CASE("chakra: a truncated file names the node before the cut", "[chakra]") {
  test::TempDir tmp;
  ChakraTraceBuilder b(1);
  b.comp(0, 1, "a", 3);
  b.comp(0, 2, "b", 4, {1});
  b.comp(0, 3, "c", 5, {2});
  const std::string prefix = (tmp / "t").string();
  b.write(prefix);
  const std::string file = rank_file(prefix, 0);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 3);
  const std::string err = trace_error([&] {
    TraceReader r(file);
    Node n;
    while (r.next(n)) {
    }
  });
  INFO(err);
  CHECK(contains(err, file));
  CHECK(contains(err, "truncated or malformed"));
  CHECK(contains(err, "after node 2 ('b')"));

  std::ofstream(rank_file(prefix, 1));  // empty: no GlobalMetadata
  CHECK(contains(trace_error([&] { TraceReader r(rank_file(prefix, 1)); }), "the file is empty"));
  CHECK(contains(trace_error([&] { TraceReader r(rank_file(prefix, 5)); }), "cannot open"));
}

TEST_CASE("chakra: kernel shapes survive the gcsim_* attributes", "[chakra]") {
  models::gpu::GemmShape g{8192, 12288, 4096, 2, models::gpu::Dtype::fp8};
  models::gpu::AttentionShape a;
  a.batch = 4, a.heads = 32, a.kv_heads = 8, a.q_len = 2048, a.kv_len = 4096, a.head_dim = 128;
  a.causal = true, a.backward = true;
  models::gpu::MemoryOpShape m;
  m.kind = models::gpu::MemoryOpKind::rms_norm, m.rows = 8192, m.cols = 4096,
  m.flops_per_element = 8, m.dtype = models::gpu::Dtype::fp16;
  const auto spec = test::h100_datasheet();
  for (const workloads::ComputeOp& op :
       {workloads::ComputeOp{g}, workloads::ComputeOp{a}, workloads::ComputeOp{m}}) {
    Node n;
    write_kernel_shape(n, op);
    const auto back = read_kernel_shape(n);
    REQUIRE(back.has_value());
    // Equal shapes build the same kernel: the same grid, flops and bytes.
    const auto k1 = kernel_of(spec, op), k2 = kernel_of(spec, *back);
    CHECK(k1.name == k2.name);
    CHECK(k1.tiles == k2.tiles);
    CHECK(k1.total_flops() == k2.total_flops());
    CHECK(k1.total_bytes() == k2.total_bytes());
  }
}

TEST_CASE("chakra: num_ops and tensor_size are timed as a roofline kernel", "[chakra]") {
  // H100 datasheet, bf16 at 0.5 of 989 TF/s = 494.5 TF/s, HBM at 3350 GB/s,
  // no per-wave overhead, 2 us launch. One wave of 132 tiles, each 1/132 of
  // the work:
  //   compute-bound: 4.945e11 flops / 494.5e12 = 1 ms (+2 us launch);
  //   memory-bound: 3.35e9 B / 3.35e12 B/s = 1 ms (+2 us launch).
  ImportOptions o = options(1);
  o.compute = ComputeTiming::model;
  o.gpu.efficiency.tensor[static_cast<size_t>(models::gpu::Dtype::bf16)] = 0.5;
  o.gpu.efficiency.hbm = 1.0;
  o.gpu.efficiency.tile_overhead = sim::Duration::zero();
  NodeConverter conv(o);
  ImportedNode out;
  auto roofline = [&](double flops, double bytes) {
    Node n;
    n.set_id(1);
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_duration_micros(77);  // ignored: the model times it
    add_double(n, "num_ops", flops);
    add_uint(n, "tensor_size", static_cast<uint64_t>(bytes));
    conv.convert(0, "f.0.et", n, out);
    REQUIRE(out.kind == workloads::OpKind::delay);
    return std::get<workloads::DelayOp>(out.payload).duration;
  };
  CHECK(std::llabs(roofline(4.945e11, 1e6).ps() - sim::us(int64_t{1002}).ps()) <= 2);
  CHECK(std::llabs(roofline(1e6, 3.35e9).ps() - sim::us(int64_t{1002}).ps()) <= 2);
  CHECK(conv.stats().roofline == 2);

  // Without them, or with compute: trace, the recorded duration stands.
  Node plain;
  plain.set_type(ChakraProtoMsg::COMP_NODE);
  plain.set_duration_micros(77);
  conv.convert(0, "f.0.et", plain, out);
  CHECK(std::get<workloads::DelayOp>(out.payload).duration == sim::us(int64_t{77}));
  CHECK(out.stream == "compute");
  add_bool(plain, "is_cpu_op", true);
  conv.convert(0, "f.0.et", plain, out);
  CHECK(out.stream == "cpu");
}

TEST_CASE("chakra: node types map to the ops and streams documented", "[chakra]") {
  ImportOptions o = options(4);
  o.comm_groups["7"] = {3, 1};
  NodeConverter conv(o);
  ImportedNode out;
  ChakraTraceBuilder b(4);
  // comm_type 5 = BROADCAST, root 3 of group "7" (ranks 1, 3: index 1).
  auto& bc = b.coll(1, 1, "bc", 5, 4096, "7");
  add_int(bc, "root", 3);
  conv.convert(1, "f.1.et", bc, out);
  REQUIRE(out.kind == workloads::OpKind::collective);
  CHECK(*out.group == std::vector<int>{1, 3});
  CHECK(std::get<workloads::CollectiveOp>(out.payload).kind == workloads::CollectiveKind::broadcast);
  CHECK(std::get<workloads::CollectiveOp>(out.payload).root == 1);
  CHECK(std::get<workloads::CollectiveOp>(out.payload).bytes == sim::Bytes(4096));
  CHECK(out.stream == "comm");
  // No pg_name, "" or an undeclared "0": every rank (ASTRA-sim's default).
  conv.convert(0, "f.0.et", b.coll(0, 2, "ar", 0, 8, "0"), out);
  CHECK(out.group->size() == 4);
  // REDUCE_SCATTER_BLOCK (8) is a reduce-scatter.
  conv.convert(0, "f.0.et", b.coll(0, 3, "rs", 8, 8, ""), out);
  CHECK(std::get<workloads::CollectiveOp>(out.payload).kind ==
        workloads::CollectiveKind::reduce_scatter);
  conv.convert(2, "f.2.et", b.send(2, 4, "s", 0, 100, 9), out);
  CHECK((out.kind == workloads::OpKind::send && out.peer == 0 && out.tag == 9 && out.stream == "send"));
  conv.convert(0, "f.0.et", b.recv(0, 5, "r", 2, 100, 9), out);
  CHECK((out.kind == workloads::OpKind::recv && out.peer == 2 && out.stream == "recv"));
  auto& meta = b.node(0, 6, "m", ChakraProtoMsg::METADATA_NODE, {4});
  conv.convert(0, "f.0.et", meta, out);
  CHECK((out.kind == workloads::OpKind::delay && out.stream == "metadata" && out.deps == std::vector<uint64_t>{4}));
  add_int(meta, "gcsim_memory_delta", -64);
  conv.convert(0, "f.0.et", meta, out);
  CHECK(std::get<workloads::MemoryOp>(out.payload).delta == sim::Bytes(-64));
  auto& with_stream = b.comp(0, 8, "c", 1);
  add_string(with_stream, "stream", "side");
  conv.convert(0, "f.0.et", with_stream, out);
  CHECK(out.stream == "side");

  // Errors name the file, the rank and the node.
  const std::string unknown = trace_error([&] { conv.convert(0, "f.0.et", b.coll(0, 9, "x", 0, 8, "5"), out); });
  CHECK(contains(unknown, "f.0.et: rank 0, node 9 ('x'): pg_name '5' is not in workload.comm_groups (declared: '7')"));
  const std::string outside = trace_error([&] { conv.convert(0, "f.0.et", b.coll(0, 10, "y", 0, 8, "7"), out); });
  CHECK(contains(outside, "the rank is not in its group '7'"));
  const std::string gather = trace_error([&] { conv.convert(0, "f.0.et", b.coll(0, 11, "g", 3, 8, ""), out); });
  CHECK(contains(gather, "GATHER is not modelled"));
  const std::string self = trace_error([&] { conv.convert(0, "f.0.et", b.comp(0, 12, "z", 1, {12}), out); });
  CHECK(contains(self, "depends on itself"));
}

TEST_CASE("chakra: a hand-built trace replays with hand-computed times", "[chakra]") {
  // Four ranks on one node, α-β NVLink at 400 GB/s with 1 us per hop, and
  // collectives that hold no SMs:
  //   rank 0: A (10 us), B (20 us, after A), S: send 40 MB to rank 1 (after
  //           B), AR: all-reduce of 400 MB over group "1" (after S)
  //   rank 1: C (50 us), R: recv 40 MB from rank 0, D (5 us, after R),
  //           AR (after D)
  //   ranks 2, 3: AR
  // A 0-10, B 10-30. R waits from 0; S/R run 30 .. 30 + 1 + 40e6/4e11 s =
  // 131 us. D waits for R and for C (its stream): 131-136. AR starts when
  // rank 1 arrives (136) and takes 2(n-1) alpha + 2(n-1)/n S/beta =
  // 6 us + 1.5 x 400e6 / 400e9 s = 1506 us: 136-1642 us, the makespan.
  test::TempDir tmp;
  const std::string prefix = (tmp / "hand").string();
  test::write_hand_built_trace(prefix);

  ImportOptions o = options(4);
  o.comm_groups["1"] = {0, 1, 2, 3};
  LoadedTrace t = load_trace(prefix, o);
  REQUIRE(t.graph->total_ops() == 10);
  CHECK(t.version == "0.0.4");

  sim::Simulator simulator(1);
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = 4;
  cfg.fabric.gpus_per_node = 8;
  cfg.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(400);
  cfg.fabric.scale_up_latency = sim::us(int64_t{1});
  cfg.fabric.has_scale_out = false;
  cfg.collective_sms = 0;
  models::cluster::ClusterModel cluster(simulator, cfg);
  sim::Recorder recorder(*t.graph, "", "test");
  sim::Replayer replayer(simulator, *t.graph, cluster, recorder);
  replayer.start();
  simulator.run();
  REQUIRE(replayer.outcome().complete);
  CHECK(replayer.outcome().makespan == sim::Time::zero() + sim::us(int64_t{1642}));

  auto times = [&](int rank, const std::string& name) {
    for (const auto& r : recorder.records()) {
      if (r.rank == rank && t.graph->name(t.graph->program(rank).ops[r.op].name) == name) {
        return std::pair{r.start.ps() / 1'000'000, r.end.ps() / 1'000'000};  // us
      }
    }
    FAIL("no op " << name << " on rank " << rank);
    return std::pair<int64_t, int64_t>{};
  };
  CHECK(times(0, "A") == std::pair<int64_t, int64_t>{0, 10});
  CHECK(times(0, "B") == std::pair<int64_t, int64_t>{10, 30});
  CHECK(times(0, "S") == std::pair<int64_t, int64_t>{30, 131});
  CHECK(times(1, "R") == std::pair<int64_t, int64_t>{0, 131});  // posted at 0, waits
  CHECK(times(1, "C") == std::pair<int64_t, int64_t>{0, 50});
  CHECK(times(1, "D") == std::pair<int64_t, int64_t>{131, 136});
  CHECK(times(1, "AR") == std::pair<int64_t, int64_t>{136, 1642});
  CHECK(times(2, "AR") == std::pair<int64_t, int64_t>{0, 1642});
}

TEST_CASE("chakra: whole-trace loading refuses what could not replay", "[chakra]") {
  test::TempDir tmp;
  auto load = [&](const ChakraTraceBuilder& b, int ranks) {
    const std::string prefix = (tmp / ("t" + std::to_string(std::rand()))).string();
    b.write(prefix);
    ImportOptions o = options(ranks);
    return trace_error([&] { load_trace(prefix, o); });
  };
  {
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "a", 1, {99});
    const auto e = load(b, 1);
    CHECK(contains(e, "rank 0: node 1 ('a') depends on node 99, which is not in the file"));
  }
  {
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "a", 1, {3});
    b.comp(0, 2, "b", 1, {1});
    auto& c = b.comp(0, 3, "c", 1, {2});
    add_string(c, "stream", "other");
    const auto e = load(b, 1);
    CHECK(contains(e, "dependency cycle: node 1 ('a') -> node 3 ('c') -> node 2 ('b') -> node 1 ('a')"));
  }
  {
    // b waits for c, which its stream runs after b: never runs.
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "b", 1, {2});
    b.comp(0, 2, "c", 1);
    const auto e = load(b, 1);
    CHECK(contains(e, "wait for each other through dependencies and stream order"));
  }
  {
    ChakraTraceBuilder b(1);
    b.comp(0, 1, "a", 1);
    b.comp(0, 1, "again", 1);
    CHECK(contains(load(b, 1), "node 1 ('again'): the id is used by an earlier node"));
  }
  {
    ChakraTraceBuilder b(2);
    b.send(0, 1, "s", 1, 64, 0);
    const auto e = load(b, 2);
    CHECK(contains(e, "SEND node 1 ('s') (tag 0, 64 B) to rank 1 has no matching RECV"));
  }
  {
    ChakraTraceBuilder b(2);
    b.recv(1, 1, "r", 0, 64, 0);
    CHECK(contains(load(b, 2), "RECV node 1 ('r') (tag 0, 64 B) from rank 0 has no matching SEND"));
  }
  {
    ChakraTraceBuilder b(2);
    b.send(0, 1, "s", 1, 64, 5);
    b.recv(1, 1, "r", 0, 64, 6);
    CHECK(contains(load(b, 2), "tags and sizes must agree"));
  }
  {
    ChakraTraceBuilder b(2);
    b.coll(0, 1, "ar", 0, 64, "");
    b.coll(0, 2, "ar2", 0, 64, "");
    b.coll(1, 1, "ar", 0, 64, "");
    const auto e = load(b, 2);
    CHECK(contains(e, "node 2 ('ar2') is collective 2 of group of every rank, but rank 1 issues only 1"));
  }
  {
    ChakraTraceBuilder b(2);
    b.comp(0, 1, "a", 1);
    b.comp(1, 1, "a", 1);
    CHECK(contains(load(b, 1), "the trace has more ranks than the cluster's 1 GPUs"));
    CHECK(contains(load(b, 3), ".2.et: missing: the cluster has 3 GPUs"));
  }
}

#endif  // GCSIM_NO_CHAKRA
