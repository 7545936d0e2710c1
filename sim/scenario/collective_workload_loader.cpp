#include "sim/scenario/collective_workload_loader.h"

#include <algorithm>
#include <string>

#include "sim/scenario/rank_group.h"
#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::Protocol;
using sim::config::ConfigReader;
using workloads::Op;
using workloads::OpKind;
using workloads::WorkloadGraph;

namespace {

std::vector<std::string> op_names() {
  std::vector<std::string> v;
  for (CollectiveOp op : models::collectives::kAllOps) {
    v.emplace_back(models::collectives::op_name(op));
  }
  return v;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> v{"auto"};
  for (Algorithm a : models::collectives::kAllAlgorithms) {
    v.emplace_back(models::collectives::algorithm_name(a));
  }
  return v;
}

sim::Bytes parse_size(ConfigReader& r, const YAML::Node& n) {
  if (!n.IsScalar()) r.fail("bytes", "expected a size such as 64MiB or a list of sizes");
  std::string error;
  const auto b = sim::parse_bytes(n.Scalar(), &error);
  if (!b) r.fail("bytes", "'" + n.Scalar() + "': " + error);
  if (b->count() <= 0) {
    r.fail("bytes", "'" + n.Scalar() + "': a message must hold at least one byte");
  }
  return *b;
}

std::vector<sim::Bytes> read_sizes(ConfigReader& r) {
  const YAML::Node n = r.raw("bytes", "message size, or a list of sizes (all_gather: the output)");
  if (!n.IsDefined() || n.IsNull()) r.fail("bytes", "missing: give a size or a list of sizes");
  std::vector<sim::Bytes> sizes;
  if (n.IsSequence()) {
    for (const auto& item : n) sizes.push_back(parse_size(r, item));
    if (sizes.empty()) r.fail("bytes", "the list of sizes is empty");
  } else {
    sizes.push_back(parse_size(r, n));
  }
  return sizes;
}

workloads::CollectiveKind ir_kind(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_gather: return workloads::CollectiveKind::all_gather;
    case CollectiveOp::reduce_scatter: return workloads::CollectiveKind::reduce_scatter;
    case CollectiveOp::broadcast: return workloads::CollectiveKind::broadcast;
    case CollectiveOp::reduce: return workloads::CollectiveKind::reduce;
    case CollectiveOp::all_to_all: return workloads::CollectiveKind::all_to_all;
    case CollectiveOp::all_reduce:
    case CollectiveOp::send_recv: break;  // send_recv is p2p pairs, not a collective op
  }
  return workloads::CollectiveKind::all_reduce;
}

// Why `a` cannot run `op` on `ranks` of this cluster, or "".
std::string why_not(Algorithm a, CollectiveOp op, const std::vector<int>& ranks,
                    int gpus_per_node, bool nvls) {
  if (!models::collectives::algorithm_supports(a, op)) {
    std::string valid;
    for (Algorithm x : models::collectives::algorithms_for(op)) {
      valid += (valid.empty() ? "" : ", ") + std::string(models::collectives::algorithm_name(x));
    }
    return "algorithm " + std::string(models::collectives::algorithm_name(a)) +
           " does not implement " + std::string(models::collectives::op_name(op)) +
           " (valid: auto, " + valid + ")";
  }
  std::vector<int> per_host;
  int hosts = 0;
  {
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    int last = -1;
    for (int r : sorted) {
      if (r / gpus_per_node != last) {
        last = r / gpus_per_node;
        ++hosts;
        per_host.push_back(0);
      }
      ++per_host.back();
    }
  }
  if (a == Algorithm::nvls) {
    if (!nvls) {
      return "nvls needs NVLink SHARP: the GPU preset has none (H100/H200-class NVSwitch), or "
             "nvls is false";
    }
    if (hosts != 1) return "nvls reduces inside one NVSwitch: the group spans " +
                           std::to_string(hosts) + " nodes";
  }
  if (a == Algorithm::hierarchical &&
      std::any_of(per_host.begin(), per_host.end(), [&](int k) { return k != per_host[0]; })) {
    return "hierarchical needs the same number of group members on every node";
  }
  return "";
}

}  // namespace

std::unique_ptr<WorkloadGraph> load_collective_workload(ConfigReader& w, int num_ranks,
                                                        int gpus_per_node,
                                                        const models::gpu::GpuSpec& gpu,
                                                        CollectiveWorkload& out) {
  out.op = *models::collectives::parse_op(
      w.get_choice("op", op_names(), std::nullopt, "the collective (nccl-tests' *_perf)"));
  out.sizes = read_sizes(w);
  out.ranks = read_rank_group(w, num_ranks, {" (nodes x gpus_per_node)", true, false});
  if (out.ranks.size() < 2) {
    w.fail("ranks", "a collective needs at least two ranks; the cluster or the list has " +
                        std::to_string(out.ranks.size()));
  }
  const std::string algo =
      w.get_choice("algorithm", algorithm_names(), std::string("auto"),
                   "NCCL algorithm, or auto for the tuner's choice (NCCL_ALGO)");
  const std::string proto = w.get_choice("protocol", {"auto", "LL", "LL128", "Simple"},
                                         std::string("auto"),
                                         "NCCL protocol, or auto for the tuner's choice (NCCL_PROTO)");
  std::vector<std::string> dtypes;
  for (auto d : models::gpu::kAllDtypes) dtypes.emplace_back(models::gpu::dtype_name(d));
  out.dtype = *models::gpu::parse_dtype(
      w.get_choice("dtype", dtypes, std::string("bf16"), "element type (reductions)"));
  out.nvls = w.get_bool("nvls", gpu.has_nvls,
                        "NVLink SHARP allowed where the preset has it (NCCL_NVLS_ENABLE)") &&
             gpu.has_nvls;
  const bool rooted = out.op == CollectiveOp::broadcast || out.op == CollectiveOp::reduce;
  if (rooted) {
    const int64_t root = w.get_int("root", out.ranks.front(), "root rank (broadcast, reduce)");
    if (std::find(out.ranks.begin(), out.ranks.end(), root) == out.ranks.end()) {
      w.fail("root", "root " + std::to_string(root) + " is not one of the group's ranks");
    }
    out.root = static_cast<int>(root);
  }
  if (algo != "auto") {
    out.algorithm = models::collectives::parse_algorithm(algo);
    const std::string why = why_not(*out.algorithm, out.op, out.ranks, gpus_per_node, out.nvls);
    if (!why.empty()) w.fail("algorithm", why);
  }
  if (proto != "auto") {
    out.protocol = models::collectives::parse_protocol(proto);
    if (out.algorithm == Algorithm::nvls && out.protocol != Protocol::simple) {
      w.fail("protocol", "nvls runs the Simple protocol only");
    }
  }

  // The IR: every member runs one shared program; a size's op waits for
  // the previous size's (nccl-tests runs them one after another).
  auto graph = std::make_unique<WorkloadGraph>(num_ranks);
  graph->intern_stream("compute");
  workloads::RankProgram program;
  const std::string op_label(models::collectives::op_name(out.op));
  for (size_t i = 0; i < out.sizes.size(); ++i) {
    out.op_names.push_back(graph->intern_name(op_label + " #" + std::to_string(i) + " " +
                                              sim::format_bytes(out.sizes[i])));
  }
  if (out.op == CollectiveOp::send_recv) {
    // Rank i sends to i+1 (peer slot 0) and receives from i-1 (slot 1) on
    // two streams, so that neither waits for the other (ncclGroupStart/End).
    const uint16_t send_stream = graph->intern_stream("send");
    const uint16_t recv_stream = graph->intern_stream("recv");
    for (size_t i = 0; i < out.sizes.size(); ++i) {
      const auto first = static_cast<uint32_t>(program.ops.size());
      for (OpKind k : {OpKind::send, OpKind::recv}) {
        Op op;
        op.name = out.op_names[i];
        op.kind = k;
        op.stream = k == OpKind::send ? send_stream : recv_stream;
        op.payload = workloads::P2pOp{static_cast<uint16_t>(k == OpKind::send ? 0 : 1),
                                      out.sizes[i]};
        if (i > 0) op.deps = {first - 2, first - 1};
        program.ops.push_back(op);
      }
    }
    const uint32_t id = graph->add_program(std::move(program));
    const size_t n = out.ranks.size();
    for (size_t i = 0; i < n; ++i) {
      workloads::RankBinding b;
      b.peers = {out.ranks[(i + 1) % n], out.ranks[(i + n - 1) % n]};
      graph->assign(out.ranks[i], id, b);
    }
  } else {
    std::vector<int> sorted = out.ranks;
    std::sort(sorted.begin(), sorted.end());
    const uint32_t comm = graph->add_communicator(sorted);
    const uint16_t stream = graph->intern_stream("comm");
    for (size_t i = 0; i < out.sizes.size(); ++i) {
      workloads::CollectiveOp c;
      c.kind = ir_kind(out.op);
      c.bytes = out.sizes[i];
      c.comm = 0;  // every member binds slot 0 to the group's communicator
      c.root = static_cast<int>(std::find(sorted.begin(), sorted.end(), out.root) -
                                sorted.begin());
      Op op;
      op.name = out.op_names[i];
      op.kind = OpKind::collective;
      op.stream = stream;
      op.payload = c;
      if (i > 0) op.deps = {static_cast<uint32_t>(i - 1)};
      program.ops.push_back(op);
    }
    const uint32_t id = graph->add_program(std::move(program));
    for (int r : sorted) {
      workloads::RankBinding b;
      b.comms = {comm};
      graph->assign(r, id, b);
    }
  }
  const std::string invalid = workloads::validate(*graph);
  if (!invalid.empty()) throw std::logic_error("collective workload: " + invalid);
  return graph;
}

void add_resolved(const CollectiveWorkload& c, sim::config::Json& workload) {
  sim::config::Json sizes = sim::config::Json::array();
  for (sim::Bytes b : c.sizes) sizes.push_back(sim::format_bytes(b));
  workload["bytes"] = sizes;
  workload["ranks"] = c.ranks;
}

}  // namespace gcsim::cli
