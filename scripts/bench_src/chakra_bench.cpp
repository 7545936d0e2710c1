// Chakra traces: how fast nodes are read and how fast a streamed replay
// runs, and the memory it holds. A synthetic training-like trace on one
// HGX node (8 ranks): blocks of 9 COMP nodes (recorded 5 us each, chained)
// and an all-reduce of 1 MiB over the 8 ranks; 1M and 10M nodes in all.
// Counters: nodes/s; for the replay also the most ops held in the windows
// and the process's resident memory (sampled during the replay) above what
// it was before, which stays flat from 1M to 10M nodes; the whole-trace
// loader's memory per node for contrast.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "models/cluster/cluster_model.h"
#include "sim/engine/streaming_replayer.h"
#include "workloads/chakra/attributes.h"
#include "workloads/chakra/stream_source.h"
#include "workloads/chakra/trace_file.h"
#include "workloads/chakra/trace_loader.h"

namespace {

using namespace gcsim;
namespace fs = std::filesystem;

constexpr int kRanks = 8;
constexpr uint64_t kBlock = 10;  // 9 COMP nodes, then an all-reduce

double resident_mb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

// Writes the trace once per size (kept for the process), returns its prefix.
std::string trace_of(uint64_t total_nodes) {
  static std::map<uint64_t, std::string> made;
  if (auto it = made.find(total_nodes); it != made.end()) return it->second;
  const fs::path dir = fs::temp_directory_path() / ("gcsim_chakra_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string prefix = (dir / ("t" + std::to_string(total_nodes))).string();
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  ChakraProtoMsg::Node n;
  const uint64_t per_rank = total_nodes / kRanks;
  for (int r = 0; r < kRanks; ++r) {
    workloads::chakra::TraceWriter w(workloads::chakra::rank_file(prefix, r), meta);
    for (uint64_t i = 0; i < per_rank; ++i) {
      n.Clear();
      n.set_id(i);
      n.set_name(i % kBlock == kBlock - 1 ? "allreduce" : "layer");
      if (i > 0) n.add_data_deps(i - 1);
      if (i % kBlock == kBlock - 1) {
        n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
        workloads::chakra::add_int(n, "comm_type", 0);
        workloads::chakra::add_uint(n, "comm_size", 1 << 20);
      } else {
        n.set_type(ChakraProtoMsg::COMP_NODE);
        n.set_duration_micros(5);
      }
      w.write(n);
    }
    w.close();
  }
  made[total_nodes] = prefix;
  return prefix;
}

void cleanup() {
  std::error_code ec;
  fs::remove_all(fs::temp_directory_path() / ("gcsim_chakra_bench_" + std::to_string(getpid())), ec);
}

// Parsing alone: TraceReader over every rank file.
void BM_ChakraRead(benchmark::State& state) {
  const auto total = static_cast<uint64_t>(state.range(0));
  const std::string prefix = trace_of(total);
  uint64_t nodes = 0;
  for (auto _ : state) {
    ChakraProtoMsg::Node n;
    for (int r = 0; r < kRanks; ++r) {
      workloads::chakra::TraceReader reader(workloads::chakra::rank_file(prefix, r));
      while (reader.next(n)) ++nodes;
    }
  }
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ChakraRead)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);

class RssSampler : public sim::StreamObserver {
 public:
  void on_op_done(int, const sim::SourcedOp&, sim::Time, sim::Time) override {
    if ((++done_ & 0xFFFF) == 0) peak_ = std::max(peak_, resident_mb());
  }
  double peak_ = 0;
  uint64_t done_ = 0;
};

// Reading, converting and replaying on the cluster model (alpha-beta
// NVLink, collectives holding no SMs), window 4096 ops per rank.
void BM_ChakraStreamReplay(benchmark::State& state) {
  const auto total = static_cast<uint64_t>(state.range(0));
  const std::string prefix = trace_of(total);
  sim::StreamOutcome out;
  double rss_before = 0, rss_peak = 0;
  for (auto _ : state) {
    rss_before = resident_mb();
    workloads::chakra::ImportOptions o;
    o.num_ranks = kRanks;
    workloads::chakra::ChakraStreamSource source(prefix, o);
    sim::Simulator simulator(1);
    models::cluster::ClusterModelConfig c;
    c.gpu.name = "h100";
    c.gpu.sm_count = 132;
    c.gpu.hbm_capacity = sim::GiB(80);
    c.num_ranks = kRanks;
    c.fabric.gpus_per_node = 8;
    c.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
    c.fabric.scale_up_latency = sim::us(int64_t{1});
    c.fabric.has_scale_out = false;
    models::cluster::ClusterModel cluster(simulator, c);
    RssSampler sampler;
    sim::StreamingReplayer replayer(simulator, source, cluster, sampler, {4096});
    out = replayer.run();
    if (!out.complete) state.SkipWithError(out.problem.c_str());
    rss_peak = std::max(sampler.peak_, resident_mb());
  }
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(out.ops_done) * state.iterations(),
                                                 benchmark::Counter::kIsRate);
  state.counters["peak_ops_held"] = static_cast<double>(out.peak_ops_held);
  state.counters["rss_growth_MB"] = rss_peak - rss_before;
  state.counters["simulated_s"] = out.makespan.seconds();
}
BENCHMARK(BM_ChakraStreamReplay)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);

// The whole-trace loader (what `gcsim run` uses) for contrast: resident
// memory grows with the trace.
void BM_ChakraWholeLoad(benchmark::State& state) {
  const auto total = static_cast<uint64_t>(state.range(0));
  const std::string prefix = trace_of(total);
  double growth = 0;
  for (auto _ : state) {
    const double before = resident_mb();
    workloads::chakra::ImportOptions o;
    o.num_ranks = kRanks;
    workloads::chakra::LoadedTrace t = workloads::chakra::load_trace(prefix, o);
    growth = resident_mb() - before;
    benchmark::DoNotOptimize(t.graph->total_ops());
  }
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(total) * state.iterations(),
                                                 benchmark::Counter::kIsRate);
  state.counters["rss_growth_MB"] = growth;
  state.counters["bytes/node"] = growth * 1e6 / static_cast<double>(total);
}
BENCHMARK(BM_ChakraWholeLoad)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);

// Removes the generated traces when the process ends.
struct Cleanup {
  ~Cleanup() { cleanup(); }
} cleanup_at_exit;

}  // namespace
