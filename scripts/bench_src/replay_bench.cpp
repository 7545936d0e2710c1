// Full-stack replay cost: the IR, replayer, GPU model and alpha-beta
// communication together, on a data-parallel-like workload whose ranks share
// one program, as the cluster grows from 8 to 16K GPUs. Reports simulated
// ops/s and events/s and the wall time per GPU, so growth with the GPU
// count is visible.
#include <benchmark/benchmark.h>

#include "models/cluster/cluster_model.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/ir.h"

namespace {

using namespace gcsim;
using workloads::Op;
using workloads::OpKind;

constexpr int kGpusPerNode = 8;
constexpr int kLayers = 32;

// Per layer: a GEMM, an all-reduce within the node (tensor parallel) on the
// comm stream after it, an elementwise op after that; at the end of the
// step one all-reduce across the node-rail group (data parallel).
workloads::RankProgram step_program(workloads::WorkloadGraph& g) {
  const uint16_t compute = g.intern_stream("compute"), comm = g.intern_stream("comm");
  workloads::RankProgram p;
  models::gpu::MemoryOpShape act;
  act.elements = 1 << 22;
  for (int l = 0; l < kLayers; ++l) {
    const auto base = static_cast<uint32_t>(p.ops.size());
    std::vector<uint32_t> after_prev;
    if (l > 0) after_prev.push_back(base - 1);
    p.ops.push_back(Op{g.intern_name("gemm"), OpKind::compute, compute, after_prev,
                       workloads::ComputeOp{models::gpu::GemmShape{4096, 4096, 4096}}});
    p.ops.push_back(Op{g.intern_name("tp_allreduce"), OpKind::collective, comm, {base},
                       workloads::CollectiveOp{workloads::CollectiveKind::all_reduce,
                                               sim::MiB(32), 0, 0}});
    p.ops.push_back(Op{g.intern_name("gelu"), OpKind::compute, compute, {base + 1},
                       workloads::ComputeOp{act}});
  }
  p.ops.push_back(Op{g.intern_name("dp_allreduce"), OpKind::collective, comm,
                     {static_cast<uint32_t>(p.ops.size() - 1)},
                     workloads::CollectiveOp{workloads::CollectiveKind::all_reduce,
                                             sim::MiB(512), 1, 0}});
  return p;
}

models::cluster::ClusterModelConfig h100_cluster(int gpus) {
  models::cluster::ClusterModelConfig c;
  c.gpu.name = "h100";
  c.gpu.sm_count = 132;
  c.gpu.tensor_peak[static_cast<size_t>(models::gpu::Dtype::bf16)] = sim::FlopRate::tflops(989);
  c.gpu.vector_fp32_peak = sim::FlopRate::tflops(67);
  c.gpu.hbm_bandwidth = sim::Bandwidth::gb_per_s(3350);
  c.gpu.hbm_capacity = sim::GiB(80);
  c.gpu.kernel_launch_latency = sim::us(int64_t{2});
  c.num_ranks = gpus;
  c.fabric.gpus_per_node = kGpusPerNode;
  c.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  c.fabric.scale_up_latency = sim::ns(int64_t{600});
  c.fabric.scale_out_bandwidth = sim::Bandwidth::gbps(400);
  c.fabric.scale_out_latency = sim::us(int64_t{2});
  c.collective_sms = 16;
  return c;
}

class NullObserver : public sim::OpObserver {
 public:
  void on_op_done(int, uint32_t, sim::Time, sim::Time) override {}
};

void BM_ReplayTrainingLikeStep(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const int nodes = gpus / kGpusPerNode;
  workloads::WorkloadGraph g(gpus);
  const uint32_t program = g.add_program(step_program(g));
  for (int r = 0; r < gpus; ++r) {
    std::vector<int> node, rail;
    for (int i = 0; i < kGpusPerNode; ++i) node.push_back(r / kGpusPerNode * kGpusPerNode + i);
    for (int n = 0; n < nodes; ++n) rail.push_back(n * kGpusPerNode + r % kGpusPerNode);
    const uint32_t tp = g.add_communicator(node), dp = g.add_communicator(rail);
    g.assign(r, program, workloads::RankBinding{{tp, dp}, {}});
  }
  uint64_t events = 0, ops = 0;
  for (auto _ : state) {
    sim::Simulator simulator(1);
    models::cluster::ClusterModel cluster(simulator, h100_cluster(gpus));
    NullObserver observer;
    sim::Replayer replayer(simulator, g, cluster, observer);
    replayer.start();
    simulator.run();
    if (!replayer.outcome().complete) state.SkipWithError("replay did not complete");
    events += simulator.events_executed();
    ops += g.total_ops();
  }
  state.counters["gpus"] = gpus;
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
  // Wall seconds per simulated GPU-step: flat means cost linear in GPUs.
  state.counters["s/gpu"] = benchmark::Counter(static_cast<double>(state.iterations()) * gpus,
                                               benchmark::Counter::kIsRate |
                                                   benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReplayTrainingLikeStep)
    ->RangeMultiplier(4)
    ->Range(8, 16384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
