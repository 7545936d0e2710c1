#include "sim/engine/recorder.h"

#include <algorithm>

namespace gcsim::sim {

const char* op_category(workloads::OpKind k) {
  switch (k) {
    case workloads::OpKind::compute: return "compute";
    case workloads::OpKind::collective: return "collective";
    case workloads::OpKind::send: return "send";
    case workloads::OpKind::recv: return "recv";
    case workloads::OpKind::memory: return "memory";
    case workloads::OpKind::delay: return "delay";
  }
  return "op";
}

Recorder::Recorder(const workloads::WorkloadGraph& graph, const std::string& trace_path,
                   const std::string& gpu_name)
    : graph_(graph) {
  records_.reserve(graph.total_ops());
  if (trace_path.empty()) return;
  trace_ = std::make_unique<TraceWriter>(trace_path);
  for (int r = 0; r < graph.num_ranks(); ++r) {
    trace_->process_name(r, "GPU " + std::to_string(r) + " (" + gpu_name + ")");
    for (size_t s = 0; s < graph.stream_count(); ++s) {
      trace_->thread_name(r, static_cast<int>(s) + 1, graph.stream(static_cast<uint16_t>(s)));
    }
  }
}

namespace {
uint64_t op_key(int rank, uint32_t op) { return static_cast<uint64_t>(rank) << 32 | op; }
}  // namespace

void Recorder::on_op_met(int rank, uint32_t op_index, Time met) { met_[op_key(rank, op_index)] = met; }

void Recorder::on_op_done(int rank, uint32_t op_index, Time start, Time end) {
  Time met = start;
  if (auto it = met_.find(op_key(rank, op_index)); it != met_.end()) {
    met = it->second;
    met_.erase(it);
  }
  records_.push_back({rank, op_index, start, end, met});
  if (!trace_) return;
  const workloads::Op& op = graph_.program(rank).ops[op_index];
  trace_->span(rank, op.stream + 1, graph_.name(op.name), op_category(op.kind), start, end,
               describe_ ? describe_(rank, op) : std::string());
}

void Recorder::on_memory(int rank, Time when, Bytes used) {
  if (trace_) trace_->counter(rank, "HBM used (GiB)", when, used.as_double() / (1 << 30));
}

void Recorder::on_power(int rank, Time when, double sm_clock_mhz, double power_w) {
  if (!trace_) return;
  trace_->counter(rank, "SM clock (MHz)", when, sm_clock_mhz);
  trace_->counter(rank, "board power (W)", when, power_w);
}

void Recorder::on_link_counter(const std::string& link, Time when, double utilization,
                               int64_t queue_bytes) {
  if (!trace_) return;
  const int pid = graph_.num_ranks();  // GPUs are 0..n-1
  if (!network_named_) {
    trace_->process_name(pid, "network (busiest links)");
    network_named_ = true;
  }
  trace_->counter(pid, link + " utilization", when, utilization);
  trace_->counter(pid, link + " queue (KiB)", when, static_cast<double>(queue_bytes) / 1024.0);
}

void Recorder::finish() {
  if (trace_) trace_->close();
}

std::vector<OpRecord> Recorder::sorted_records() const {
  std::vector<OpRecord> v = records_;
  std::sort(v.begin(), v.end(), [](const OpRecord& a, const OpRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.op < b.op;
  });
  return v;
}

}  // namespace gcsim::sim
