// Worksheet section 3, communication per training step per parallel
// dimension: which collective, how many per step on one GPU, bytes each,
// the link class it crosses and its ideal time from bus-bandwidth algebra
// (nccl-tests: a ring all-reduce moves 2(n-1)/n S per GPU, all-gather and
// reduce-scatter (n-1)/n S; models/collectives/collective.h). Ideal = wire
// bytes / link bandwidth, plus the hop latency per ring step, no contention.
#pragma once

#include <string>
#include <vector>

#include "models/collectives/collective.h"
#include "workloads/estimate/estimate_line.h"
#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::estimate {

namespace collectives = ::gcsim::models::collectives;

enum class LinkClass { scale_up, scale_out };
const char* link_class_name(LinkClass k);  // "NVLink (scale-up)", "NIC (scale-out)"

// The cluster as the estimate sees it: per-GPU bandwidth each direction.
struct LinkRates {
  double scale_up_bytes_per_s = 0;   // NVLink per GPU (0: no scale-up domain)
  double scale_out_bytes_per_s = 0;  // NIC per GPU
  double scale_up_latency_s = 0;
  double scale_out_latency_s = 0;
  int gpus_per_node = 8;
  double bandwidth(LinkClass k) const {
    return k == LinkClass::scale_up ? scale_up_bytes_per_s : scale_out_bytes_per_s;
  }
};

// Bytes one GPU sends for `op` on a buffer of `bytes` among n ranks:
// all-reduce 2(n-1)/n S, all-gather / reduce-scatter / all-to-all
// (n-1)/n S, send/recv, broadcast, reduce S.
Line wire_bytes_line(collectives::CollectiveOp op, double bytes, int n);
// Ideal time: wire bytes / bandwidth + ring steps x latency.
Line ideal_time_line(collectives::CollectiveOp op, double bytes, int n, double bytes_per_s,
                     double latency_s);

// One kind of communication of a step.
struct CommRow {
  std::string dimension;       // "TP", "SP", "CP", "EP", "PP", "DP", "DP (experts)"
  collectives::CollectiveOp op = collectives::CollectiveOp::all_reduce;
  int group = 1;               // ranks in the group
  double count = 0;            // per step on one GPU
  double bytes_each = 0;       // buffer, nccl-tests convention
  LinkClass link = LinkClass::scale_up;
  std::string why;             // "2 per layer forward + 2 backward, 24 layers x 8 micro-batches"
  Line wire_bytes;             // per call, per GPU
  Line time_each;              // ideal
  Line time_total;             // count x time_each
};

// The link class a group of `c`'s dimension crosses: scale-out when its
// ranks span more than one node under the placement order.
LinkClass group_link(const training::TrainingConfig& c, const std::string& dimension, int gpus_per_node);
// Nodes that group spans.
int group_nodes(const training::TrainingConfig& c, const std::string& dimension, int gpus_per_node);

// `plan`: c's pipeline plan when the caller has built it (it is built otherwise).
std::vector<CommRow> estimate_training_comm(const training::TrainingConfig& c, const LinkRates& links,
                                            const training::PipelinePlan* plan = nullptr);

}  // namespace gcsim::workloads::estimate

namespace gcsim::workloads::estimate {

// Bandwidth bound of one collective of a group that spans `nodes` nodes of
// `links.gpus_per_node` GPUs: inside one node the NVLink rate; across nodes
// a ring's bus bandwidth is the NIC's, and an all-to-all sends the
// off-node share (n - g)/n S through the NIC while (g - 1)/n S stays on
// NVLink (the slower of the two bounds).
Line collective_bound_line(collectives::CollectiveOp op, double bytes, int n, int nodes, const LinkRates& links);

}  // namespace gcsim::workloads::estimate
