#include "sim/cli/chakra_stream_run.h"

#include <chrono>
#include <memory>
#include <set>

#include "models/cluster/cluster_model.h"
#include "sim/report/collective_report.h"
#include "sim/scenario/network_setup.h"
#include "sim/engine/recorder.h"
#include "sim/engine/trace_writer.h"
#include "workloads/chakra/stream_source.h"

namespace gcsim::cli {

namespace {

// Spans to a Perfetto trace as ops finish; nothing kept per op.
class SpanWriter : public sim::StreamObserver {
 public:
  SpanWriter(const std::string& path, const sim::OpSource& source, const std::string& gpu)
      : source_(source) {
    if (path.empty()) return;
    trace_ = std::make_unique<sim::TraceWriter>(path);
    for (int r = 0; r < source.num_ranks(); ++r) {
      trace_->process_name(r, "GPU " + std::to_string(r) + " (" + gpu + ")");
    }
  }
  void on_op_done(int rank, const sim::SourcedOp& op, sim::Time start, sim::Time end) override {
    if (!trace_) return;
    const int tid = op.op.stream + 1;
    if (named_.insert({rank, tid}).second) trace_->thread_name(rank, tid, source_.stream_name(op.op.stream));
    trace_->span(rank, tid, op.name.empty() ? "node " + std::to_string(op.id) : op.name,
                 sim::op_category(op.op.kind), start, end);
  }
  void close() {
    if (trace_) trace_->close();
  }

 private:
  const sim::OpSource& source_;
  std::unique_ptr<sim::TraceWriter> trace_;
  std::set<std::pair<int, int>> named_;
};

}  // namespace

ChakraStreamRun run_chakra_streamed(const Scenario& s, const std::string& prefix,
                                    const workloads::chakra::ImportOptions& options, size_t window,
                                    const std::string& trace_path) {
  const auto wall_start = std::chrono::steady_clock::now();
  workloads::chakra::ChakraStreamSource source(prefix, options);
  sim::Simulator simulator(s.seed);
  models::cluster::ClusterModel cluster(simulator, cluster_model_config(s));
  const std::unique_ptr<NetworkStack> network = build_network_stack(simulator, s);
  cluster.attach_network(*network->model, network->fabric);
  configure_collectives(s, cluster);  // as gcsim run does: NCCL's algorithms on a fabric model
  SpanWriter spans(trace_path, source, s.cluster.gpu.name);
  sim::StreamingReplayer replayer(simulator, source, cluster, spans, {window});
  ChakraStreamRun run;
  run.outcome = replayer.run();
  spans.close();
  run.events = simulator.events_executed();
  run.stats = source.stats();
  run.kernel_shapes = source.kernel_shapes();
  for (int r = 0; r < cluster.num_ranks(); ++r) run.memory_peak.push_back(cluster.gpu(r).memory_peak());
  run.network = network->model->stats(run.outcome.makespan - sim::Time::zero());
  run.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return run;
}

}  // namespace gcsim::cli
