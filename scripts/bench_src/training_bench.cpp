// Cost of simulating one training step (generation + replay on the cluster
// model), as the cluster grows: GPT-3 175B with TP 8 x PP 8 (interleaved,
// full recompute) and DP from 1 to 256 (64 to 16,384 GPUs), 8 micro-batches
// per pipeline. With mirrored symmetric ranks the simulated ranks stay at 8
// whatever DP is; BM_TrainingStepAllRanks simulates every rank for
// comparison. Counters: GPUs, simulated ranks, ops replayed, ops/s.
#include <benchmark/benchmark.h>

#include <memory>

#include "models/cluster/cluster_model.h"
#include "sim/scenario/model_spec_loader.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_generator.h"

namespace {

using namespace gcsim;
using namespace gcsim::workloads::training;

TrainingConfig gpt3(int dp) {
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  TrainingConfig c;
  c.model = cli::load_model_preset("gpt3-175b", nowhere, "model");
  c.parallel.tp = 8;
  c.parallel.pp = 8;
  c.parallel.dp = dp;
  c.parallel.schedule = Schedule::interleaved;
  c.parallel.virtual_stages = 2;
  c.batch = {8 * dp, 1};
  c.recompute = Recompute::full;
  c.optimizer.zero_stage = 1;
  return c;
}

models::gpu::GpuSpec a100() {
  models::gpu::GpuSpec s;
  s.name = "a100";
  s.sm_count = 108;
  s.sm_clock_ghz = 1.41;
  s.tensor_peak[static_cast<size_t>(models::gpu::Dtype::bf16)] = sim::FlopRate::tflops(312);
  s.tensor_peak[static_cast<size_t>(models::gpu::Dtype::fp16)] = sim::FlopRate::tflops(312);
  s.vector_fp32_peak = sim::FlopRate::tflops(19.5);
  s.hbm_bandwidth = sim::Bandwidth::gb_per_s(2039);
  s.hbm_capacity = sim::GiB(80);
  s.nvlink_bandwidth = sim::Bandwidth::gb_per_s(300);
  s.kernel_launch_latency = sim::us(int64_t{2});
  return s;
}

void run_step(benchmark::State& state, bool mirror) {
  const int dp = static_cast<int>(state.range(0));
  const TrainingConfig c = gpt3(dp);
  size_t ops = 0, simulated = 0;
  for (auto _ : state) {
    GeneratorOptions o;
    o.mirror = mirror;
    TrainingWorkload w = generate_training(c, o);
    sim::Simulator simulator(1);
    models::cluster::ClusterModelConfig cfg;
    cfg.gpu = a100();
    cfg.num_ranks = c.gpus();
    cfg.fabric.gpus_per_node = 8;
    cfg.fabric.scale_up_bandwidth = cfg.gpu.nvlink_bandwidth;
    cfg.fabric.scale_up_latency = sim::ns(int64_t{600});
    cfg.fabric.scale_out_bandwidth = sim::Bandwidth::gbps(200);
    cfg.fabric.scale_out_latency = sim::us(int64_t{2});
    cfg.collective_sms = 24;
    models::cluster::ClusterModel cluster(simulator, cfg);
    SymmetricExecutor executor(cluster, w);
    sim::Recorder recorder(*w.graph, "", "a100");
    sim::Replayer replayer(simulator, *w.graph, executor, recorder);
    replayer.start();
    simulator.run();
    ops = w.graph->total_ops();
    simulated = w.simulated.size();
    benchmark::DoNotOptimize(replayer.outcome().makespan);
  }
  state.counters["gpus"] = c.gpus();
  state.counters["simulated"] = static_cast<double>(simulated);
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops/s"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TrainingStepMirrored(benchmark::State& state) { run_step(state, true); }
void BM_TrainingStepAllRanks(benchmark::State& state) { run_step(state, false); }

}  // namespace

BENCHMARK(BM_TrainingStepMirrored)->RangeMultiplier(4)->Range(1, 256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainingStepAllRanks)->RangeMultiplier(2)->Range(1, 4)->Unit(benchmark::kMillisecond);
