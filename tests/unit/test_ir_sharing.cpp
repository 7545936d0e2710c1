// Symmetric ranks may share one program (DESIGN.md, Workload graph): the
// shortcut must give exactly the run that per-rank copies give.
#include "catch.h"
#include "gpu_test_specs.h"
#include "models/cluster/cluster_model.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/ir.h"

using namespace gcsim;
using workloads::Op;
using workloads::OpKind;
using workloads::RankBinding;
using workloads::RankProgram;
using workloads::WorkloadGraph;

namespace {

constexpr int kRanks = 16;  // two HGX nodes

// One rank's step of a ring pipeline: a GEMM, send it to the next rank,
// receive from the previous one, an elementwise op, then an all-reduce
// over all ranks on the comm stream after the receive. Peers and the
// communicator are slots: peer 0 = next, peer 1 = previous, comm 0 = world.
RankProgram ring_step(WorkloadGraph& g) {
  // The receive has its own stream: a rendezvous send ahead of it on the
  // same stream would deadlock the ring (NCCL groups send and recv for this).
  const uint16_t compute = g.intern_stream("compute"), comm = g.intern_stream("comm"),
                 inbox = g.intern_stream("recv");
  RankProgram p;
  auto add = [&](const char* name, OpKind kind, uint16_t stream, std::vector<uint32_t> deps,
                 workloads::OpPayload payload) {
    p.ops.push_back(Op{g.intern_name(name), kind, stream, std::move(deps), std::move(payload)});
  };
  add("gemm", OpKind::compute, compute, {},
      workloads::ComputeOp{models::gpu::GemmShape{4096, 4096, 4096, 1, models::gpu::Dtype::bf16}});
  add("send", OpKind::send, comm, {0}, workloads::P2pOp{0, sim::MiB(64)});
  add("recv", OpKind::recv, inbox, {}, workloads::P2pOp{1, sim::MiB(64)});
  models::gpu::MemoryOpShape gelu;
  gelu.elements = 1 << 24;
  add("gelu", OpKind::compute, compute, {2}, workloads::ComputeOp{gelu});
  add("allreduce", OpKind::collective, comm, {2},
      workloads::CollectiveOp{workloads::CollectiveKind::all_reduce, sim::MiB(256), 0, 0});
  return p;
}

RankBinding ring_binding(int r, uint32_t world) {
  return RankBinding{{world}, {(r + 1) % kRanks, (r + kRanks - 1) % kRanks}};
}

std::vector<int> all_ranks() {
  std::vector<int> v;
  for (int r = 0; r < kRanks; ++r) v.push_back(r);
  return v;
}

// Replays `g` on an HGX H100-like cluster and returns every op's record.
std::vector<sim::OpRecord> replay(const WorkloadGraph& g) {
  REQUIRE(workloads::validate(g).empty());
  sim::Simulator simulator(7);
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = kRanks;
  cfg.fabric.gpus_per_node = 8;
  cfg.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  cfg.fabric.scale_up_latency = sim::ns(int64_t{600});
  cfg.fabric.scale_out_bandwidth = sim::Bandwidth::gbps(400);
  cfg.fabric.scale_out_latency = sim::us(int64_t{2});
  cfg.collective_sms = 16;
  models::cluster::ClusterModel cluster(simulator, cfg);
  sim::Recorder recorder(g, "", "test");
  sim::Replayer replayer(simulator, g, cluster, recorder);
  replayer.start();
  simulator.run();
  REQUIRE(replayer.outcome().complete);
  return recorder.sorted_records();
}

}  // namespace

TEST_CASE("ranks sharing one program replay exactly as per-rank copies", "[ir]") {
  // Full: every rank has its own copy of the program.
  WorkloadGraph full(kRanks);
  const uint32_t world_full = full.add_communicator(all_ranks());
  for (int r = 0; r < kRanks; ++r) {
    full.program(r) = ring_step(full);
    full.assign(r, full.program_id(r), ring_binding(r, world_full));
  }
  // Shared: one program, sixteen bindings.
  WorkloadGraph shared(kRanks);
  const uint32_t world = shared.add_communicator(all_ranks());
  const uint32_t program = shared.add_program(ring_step(shared));
  for (int r = 0; r < kRanks; ++r) shared.assign(r, program, ring_binding(r, world));

  CHECK(shared.total_ops() == full.total_ops());
  CHECK(shared.total_ops() == 5 * kRanks);
  const auto a = replay(full), b = replay(shared);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("record " << i);
    CHECK(a[i].rank == b[i].rank);
    CHECK(a[i].op == b[i].op);
    CHECK(a[i].start == b[i].start);
    CHECK(a[i].end == b[i].end);
  }
  // The ring crosses nodes (7 -> 8, 15 -> 0): those sends take the NIC,
  // 2 us + 64 MiB / 50 GB/s = 1344.18 us, against 0.6 us + 64 MiB / 450 GB/s
  // = 149.73 us inside a node; everyone's all-reduce waits for the slowest.
  const auto send_time = [&](int rank) {
    for (const auto& r : b) {
      if (r.rank == rank && r.op == 1) return (r.end - r.start).seconds();
    }
    return -1.0;
  };
  CHECK(send_time(7) - send_time(3) > 1e-3);
}

TEST_CASE("validation finds unmatched communication in shared programs", "[ir]") {
  WorkloadGraph g(2);
  const uint32_t world = g.add_communicator({0, 1});
  RankProgram lonely;
  lonely.ops.push_back(Op{g.intern_name("ar"), OpKind::collective, g.intern_stream("comm"), {},
                          workloads::CollectiveOp{workloads::CollectiveKind::all_reduce,
                                                  sim::MiB(1), 0, 0}});
  const uint32_t p = g.add_program(lonely);
  g.assign(0, p, RankBinding{{world}, {}});
  // Rank 1 keeps its empty program: rank 0's all-reduce has no partner.
  CHECK(workloads::validate(g).find("issues 0 collectives") != std::string::npos);
  g.assign(1, p, RankBinding{{world}, {}});
  CHECK(workloads::validate(g).empty());
  // A send without its receive.
  WorkloadGraph h(2);
  RankProgram sender;
  sender.ops.push_back(Op{h.intern_name("s"), OpKind::send, h.intern_stream("comm"), {},
                          workloads::P2pOp{0, sim::MiB(1)}});
  h.assign(0, h.add_program(sender), RankBinding{{}, {1}});
  CHECK(workloads::validate(h).find("sends more messages to rank 1") != std::string::npos);
}
