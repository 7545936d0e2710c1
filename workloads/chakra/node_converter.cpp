#include "workloads/chakra/node_converter.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/gpu/kernel_cost_model.h"
#include "workloads/chakra/attributes.h"
#include "workloads/chakra/kernel_attrs.h"
#include "workloads/chakra/trace_file.h"

namespace gcsim::workloads::chakra {

using ChakraProtoMsg::Node;
using ChakraProtoMsg::NodeType;

namespace {

// Chakra's CollectiveCommType values (et_def.proto).
enum CommType : int64_t {
  kAllReduce = 0, kReduce = 1, kAllGather = 2, kGather = 3, kScatter = 4, kBroadcast = 5,
  kAllToAll = 6, kReduceScatter = 7, kReduceScatterBlock = 8, kBarrier = 9,
};

sim::Duration micros(uint64_t us) {
  // 2^63 ps is about 106 days; a longer recorded duration is a broken trace.
  if (us > static_cast<uint64_t>(sim::Duration::max().ps() / 1'000'000)) {
    throw std::invalid_argument("duration_micros " + std::to_string(us) +
                                " is beyond the simulator's time range (about 106 days)");
  }
  return sim::ps(static_cast<int64_t>(us) * 1'000'000);
}

int64_t need_int(const Node& n, const char* name, const char* what) {
  auto v = int_attr(n, name);
  if (!v) throw std::invalid_argument(std::string("attribute '") + name + "' (" + what + ") is missing");
  return *v;
}

sim::Bytes need_size(const Node& n) {
  const int64_t b = need_int(n, "comm_size", "bytes");
  if (b < 0) throw std::invalid_argument("attribute 'comm_size' is negative");
  return sim::Bytes(b);
}

std::string ranks_text(const std::vector<int>& r) {
  std::string s;
  for (size_t i = 0; i < r.size() && i < 16; ++i) s += (i ? "," : "") + std::to_string(r[i]);
  if (r.size() > 16) s += ",...";
  return s;
}

}  // namespace

int comm_type_of(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return kAllReduce;
    case CollectiveKind::all_gather: return kAllGather;
    case CollectiveKind::reduce_scatter: return kReduceScatter;
    case CollectiveKind::broadcast: return kBroadcast;
    case CollectiveKind::reduce: return kReduce;
    case CollectiveKind::all_to_all: return kAllToAll;
  }
  return kAllReduce;
}

NodeConverter::NodeConverter(ImportOptions options) : options_(std::move(options)) {
  for (int r = 0; r < options_.num_ranks; ++r) world_.push_back(r);
  for (const auto& [name, ranks] : options_.comm_groups) {
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.empty()) throw std::invalid_argument("comm group '" + name + "' has no ranks");
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw std::invalid_argument("comm group '" + name + "' lists a rank twice");
    }
    if (sorted.front() < 0 || sorted.back() >= options_.num_ranks) {
      throw std::invalid_argument("comm group '" + name + "' names rank " +
                                  std::to_string(sorted.front() < 0 ? sorted.front() : sorted.back()) +
                                  ", but the cluster has ranks 0.." +
                                  std::to_string(options_.num_ranks - 1));
    }
    groups_[name] = std::move(sorted);
  }
}

void NodeConverter::convert(int rank, const std::string& file, const Node& node, ImportedNode& out) {
  out.id = node.id();
  out.deps.clear();
  out.group = nullptr;
  out.group_name.clear();
  out.peer = -1;
  out.tag = 0;
  ++stats_.nodes;
  try {
    for (const auto* list : {&node.ctrl_deps(), &node.data_deps()}) {
      for (uint64_t d : *list) {
        if (d == node.id()) throw std::invalid_argument("it depends on itself (a dependency cycle)");
        if (std::find(out.deps.begin(), out.deps.end(), d) == out.deps.end()) out.deps.push_back(d);
      }
    }
    switch (node.type()) {
      case ChakraProtoMsg::COMP_NODE:
        convert_compute(node, out);
        break;
      case ChakraProtoMsg::COMM_COLL_NODE:
        convert_collective(rank, node, out);
        ++stats_.communication;
        break;
      case ChakraProtoMsg::COMM_SEND_NODE:
      case ChakraProtoMsg::COMM_RECV_NODE:
        convert_p2p(rank, node, out);
        ++stats_.communication;
        break;
      case ChakraProtoMsg::METADATA_NODE:
      case ChakraProtoMsg::INVALID_NODE:
        if (auto delta = int_attr(node, "gcsim_memory_delta")) {
          out.kind = OpKind::memory;
          out.stream = "compute";
          out.payload = MemoryOp{sim::Bytes(*delta)};
        } else {
          out.kind = OpKind::delay;
          out.stream = "metadata";
          out.payload = DelayOp{sim::Duration::zero()};
        }
        ++stats_.other;
        break;
      case ChakraProtoMsg::MEM_LOAD_NODE:
      case ChakraProtoMsg::MEM_STORE_NODE:
        out.kind = OpKind::delay;
        out.stream = "memory";
        out.payload = DelayOp{micros(node.duration_micros())};
        ++stats_.recorded_duration;
        break;
      case ChakraProtoMsg::STORAGE_NODE:
      case ChakraProtoMsg::BATCH_NODE:
      case ChakraProtoMsg::CHECKPOINT_NODE:
        out.kind = OpKind::delay;
        out.stream = "host";
        out.payload = DelayOp{micros(node.duration_micros())};
        ++stats_.recorded_duration;
        break;
      default:
        throw std::invalid_argument("unknown node type " + std::to_string(node.type()));
    }
    if (auto s = string_attr(node, "stream")) {
      if (s->empty()) throw std::invalid_argument("attribute 'stream' is empty");
      out.stream = *s;
    }
  } catch (const std::invalid_argument& e) {
    throw TraceError(file + ": rank " + std::to_string(rank) + ", " + describe_node(node) + ": " +
                     e.what());
  } catch (const sim::TimeOverflow& e) {
    throw TraceError(file + ": rank " + std::to_string(rank) + ", " + describe_node(node) +
                     ": its duration is beyond the simulator's time range (about 106 days)");
  }
}

void NodeConverter::convert_compute(const Node& node, ImportedNode& out) {
  const bool cpu = bool_attr(node, "is_cpu_op").value_or(false);
  out.stream = cpu ? "cpu" : "compute";
  out.kind = OpKind::delay;
  // An exact duration in picoseconds, written by gcsim for its delay ops.
  if (auto ps = int_attr(node, "gcsim_duration_ps")) {
    if (*ps < 0) throw std::invalid_argument("attribute 'gcsim_duration_ps' is negative");
    out.payload = DelayOp{sim::ps(*ps)};
    ++stats_.recorded_duration;
    return;
  }
  if (options_.compute == ComputeTiming::model && !cpu) {
    if (std::optional<ComputeOp> shape = read_kernel_shape(node)) {
      // Cost it once now, so that a shape the GPU cannot run (fp8 on an
      // A100) is refused at load time with its node.
      kernel_of(options_.gpu, *shape);
      out.kind = OpKind::compute;
      out.payload = std::move(*shape);
      ++stats_.kernel_shape;
      return;
    }
    const auto flops = number_attr(node, "num_ops");
    const auto bytes = number_attr(node, "tensor_size");
    if (flops && bytes) {
      if (*flops < 0 || *bytes < 0) throw std::invalid_argument("num_ops and tensor_size must be >= 0");
      // A roofline kernel: num_ops on the tensor cores (bf16 unless
      // gcsim_dtype says otherwise) and tensor_size bytes of HBM traffic,
      // spread over every SM; alone on the GPU, like ASTRA-sim's roofline.
      const auto& gpu = options_.gpu;
      gcsim::models::gpu::KernelDesc k;
      k.name = "roofline";
      const std::string dt = string_attr(node, "gcsim_dtype").value_or("bf16");
      const auto dtype = gcsim::models::gpu::parse_dtype(dt);
      if (!dtype) throw std::invalid_argument("attribute 'gcsim_dtype' names no dtype: '" + dt + "'");
      k.dtype = *dtype;
      const bool tensor = gpu.tensor_peak_for(k.dtype).flops_per_s() > 0.0;
      k.unit = tensor ? gcsim::models::gpu::ExecUnit::tensor : gcsim::models::gpu::ExecUnit::vector;
      k.efficiency = tensor ? gpu.efficiency.tensor_for(k.dtype) : gpu.efficiency.vector;
      k.tiles = gpu.sm_count;
      k.flops_per_tile = *flops / gpu.sm_count;
      k.bytes_per_tile = *bytes / gpu.sm_count;
      out.payload = DelayOp{gcsim::models::gpu::isolated_time(gpu, k, gpu.sm_count)};
      ++stats_.roofline;
      return;
    }
  }
  out.payload = DelayOp{micros(node.duration_micros())};
  ++stats_.recorded_duration;
}

void NodeConverter::convert_collective(int rank, const Node& node, ImportedNode& out) {
  CollectiveOp c;
  const int64_t type = need_int(node, "comm_type", "a CollectiveCommType");
  switch (type) {
    case kAllReduce: c.kind = CollectiveKind::all_reduce; break;
    case kReduce: c.kind = CollectiveKind::reduce; break;
    case kAllGather: c.kind = CollectiveKind::all_gather; break;
    case kBroadcast: c.kind = CollectiveKind::broadcast; break;
    case kAllToAll: c.kind = CollectiveKind::all_to_all; break;
    case kReduceScatter:
    case kReduceScatterBlock: c.kind = CollectiveKind::reduce_scatter; break;
    // A barrier is what PyTorch issues for it: an all-reduce of a tiny buffer.
    case kBarrier: c.kind = CollectiveKind::all_reduce; break;
    case kGather:
    case kScatter:
      throw std::invalid_argument(std::string("comm_type ") +
                                  (type == kGather ? "GATHER" : "SCATTER") +
                                  " is not modelled (NCCL has no such collective)");
    default: throw std::invalid_argument("comm_type " + std::to_string(type) + " is unknown");
  }
  c.bytes = type == kBarrier ? sim::Bytes(int_attr(node, "comm_size").value_or(0)) : need_size(node);
  if (c.bytes.count() < 0) throw std::invalid_argument("attribute 'comm_size' is negative");

  const std::string pg = string_attr(node, "pg_name").value_or("");
  auto it = groups_.find(pg);
  if (it != groups_.end()) {
    out.group = &it->second;
  } else if (pg.empty() || pg == "0") {
    out.group = &world_;
  } else {
    std::string known;
    for (const auto& [name, ranks] : groups_) known += (known.empty() ? "" : ", ") + ("'" + name + "'");
    throw std::invalid_argument("pg_name '" + pg + "' is not in workload.comm_groups (" +
                                (known.empty() ? std::string("none declared") : "declared: " + known) +
                                ")");
  }
  out.group_name = pg;
  const auto& g = *out.group;
  if (!std::binary_search(g.begin(), g.end(), rank)) {
    throw std::invalid_argument("the rank is not in its group '" + pg + "' (ranks " +
                                ranks_text(g) + ")");
  }
  if (c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce) {
    const int64_t root = int_attr(node, "root").value_or(g.front());
    auto pos = std::lower_bound(g.begin(), g.end(), root);
    if (pos == g.end() || *pos != root) {
      throw std::invalid_argument("root " + std::to_string(root) + " is not in the group (ranks " +
                                  ranks_text(g) + ")");
    }
    c.root = static_cast<int>(pos - g.begin());
  }
  out.kind = OpKind::collective;
  out.stream = "comm";
  out.payload = c;
}

void NodeConverter::convert_p2p(int rank, const Node& node, ImportedNode& out) {
  const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
  const int64_t src = send ? int_attr(node, "comm_src").value_or(rank) : need_int(node, "comm_src", "the sending rank");
  const int64_t dst = send ? need_int(node, "comm_dst", "the receiving rank") : int_attr(node, "comm_dst").value_or(rank);
  if ((send ? src : dst) != rank) {
    throw std::invalid_argument(std::string(send ? "a SEND's comm_src" : "a RECV's comm_dst") +
                                " must be the rank whose trace holds it, got " +
                                std::to_string(send ? src : dst));
  }
  const int64_t peer = send ? dst : src;
  if (peer < 0 || peer >= options_.num_ranks) {
    throw std::invalid_argument(std::string(send ? "comm_dst " : "comm_src ") + std::to_string(peer) +
                                " is not a rank of the cluster (0.." +
                                std::to_string(options_.num_ranks - 1) + ")");
  }
  if (peer == rank) throw std::invalid_argument("the node sends to its own rank");
  out.kind = send ? OpKind::send : OpKind::recv;
  out.stream = send ? "send" : "recv";
  out.payload = P2pOp{0, need_size(node)};
  out.peer = static_cast<int>(peer);
  out.tag = int_attr(node, "comm_tag").value_or(0);
}

}  // namespace gcsim::workloads::chakra
