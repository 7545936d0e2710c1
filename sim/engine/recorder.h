// Records what ran: every finished op (rank, op, start, end) and HBM use
// over time, and streams them to a Perfetto trace when one is asked for.
// The summary and report are built from these records after the run.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/replayer.h"
#include "sim/engine/trace_writer.h"
#include "sim/engine/ir.h"

namespace gcsim::sim {

// An op's kind by name ("compute", "send", ...): the trace's span category
// and the report's kind column.
const char* op_category(workloads::OpKind k);

struct OpRecord {
  int rank;
  uint32_t op;
  Time start;
  Time end;
  // When a communication op met its peers: [start, met) the rank waited for
  // them, [met, end) the transfer ran. `start` for other ops.
  Time met;
};

// Explains an op for the trace: a JSON object literal (kernel shape, tiles,
// flops, bytes, what bounds it) or "" for nothing.
using OpDescriber = std::function<std::string(int rank, const workloads::Op& op)>;

class Recorder : public OpObserver {
 public:
  // `trace_path` empty: no trace file.
  Recorder(const workloads::WorkloadGraph& graph, const std::string& trace_path,
           const std::string& gpu_name);

  void on_op_done(int rank, uint32_t op_index, Time start, Time end) override;
  void on_op_met(int rank, uint32_t op_index, Time met) override;
  void on_memory(int rank, Time when, Bytes used);
  // A GPU's SM clock (MHz) and board power (W) under the power cap's clock
  // model: two counters on the GPU's track.
  void on_power(int rank, Time when, double sm_clock_mhz, double power_w);
  // A network link's utilization (0..1) and queue depth at `when`, drawn as
  // two counters of one "network" track after the GPUs.
  void on_link_counter(const std::string& link, Time when, double utilization,
                       int64_t queue_bytes);
  void finish();  // closes the trace
  void set_describer(OpDescriber d) { describe_ = std::move(d); }

  // Records in (rank, program order): independent of completion order.
  std::vector<OpRecord> sorted_records() const;
  const std::vector<OpRecord>& records() const { return records_; }

 private:
  const workloads::WorkloadGraph& graph_;
  std::unique_ptr<TraceWriter> trace_;
  std::vector<OpRecord> records_;
  // Meeting times of communication ops not yet done, by (rank, op index).
  std::unordered_map<uint64_t, Time> met_;
  OpDescriber describe_;
  bool network_named_ = false;
};

}  // namespace gcsim::sim
