#include "workloads/chakra/trace_exporter.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/gpu/kernel_cost_model.h"
#include "workloads/chakra/attributes.h"
#include "workloads/chakra/kernel_attrs.h"
#include "workloads/chakra/node_converter.h"
#include "workloads/chakra/trace_file.h"
#include "workloads/chakra/trace_loader.h"

namespace gcsim::workloads::chakra {

namespace {

uint64_t rounded_micros(sim::Duration d) {
  return static_cast<uint64_t>(std::llround(static_cast<double>(d.ps()) * 1e-6));
}

// The pg_name of communicator `c`: "0" is every rank in ASTRA-sim, so ours
// count from 1.
std::string group_name(uint32_t c) { return std::to_string(c + 1); }

}  // namespace

ExportResult export_trace(const WorkloadGraph& g, const gcsim::models::gpu::GpuSpec& gpu,
                          const std::string& dir, const std::string& stem) {
  ExportResult out;
  const std::filesystem::path base = std::filesystem::path(dir) / stem;
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version(kSchemaVersion);
  {
    ChakraProtoMsg::AttributeProto* a = meta.add_attr();
    a->set_name(kStreamsAttr);
    for (size_t s = 0; s < g.stream_count(); ++s) {
      a->mutable_string_list()->add_values(g.stream(static_cast<uint16_t>(s)));
    }
  }
  // Kernels are costed once per distinct op object: programs shared by
  // symmetric ranks cost once.
  std::unordered_map<const Op*, gcsim::models::gpu::KernelDesc> kernels;
  std::vector<bool> used_comm(g.communicator_count(), false);
  ChakraProtoMsg::Node node;
  for (int r = 0; r < g.num_ranks(); ++r) {
    const std::string file = rank_file(base.string(), r);
    TraceWriter writer(file, meta);
    const RankProgram& prog = g.program(r);
    std::map<int, int64_t> sent, received;  // messages so far per peer
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      node.Clear();
      node.set_id(i);
      node.set_name(g.name(op.name));
      for (uint32_t d : op.deps) node.add_data_deps(d);
      switch (op.kind) {
        case OpKind::compute: {
          const auto& c = std::get<ComputeOp>(op.payload);
          auto it = kernels.find(&op);
          if (it == kernels.end()) it = kernels.emplace(&op, kernel_of(gpu, c)).first;
          const gcsim::models::gpu::KernelDesc& k = it->second;
          node.set_type(ChakraProtoMsg::COMP_NODE);
          node.set_duration_micros(rounded_micros(gcsim::models::gpu::isolated_time(gpu, k, gpu.sm_count)));
          add_int(node, "num_ops", static_cast<int64_t>(std::llround(k.total_flops())));
          add_uint(node, "tensor_size", static_cast<uint64_t>(std::llround(k.total_bytes())));
          write_kernel_shape(node, c);
          break;
        }
        case OpKind::delay: {
          const sim::Duration d = std::get<DelayOp>(op.payload).duration;
          node.set_type(ChakraProtoMsg::COMP_NODE);
          node.set_duration_micros(rounded_micros(d));
          add_int(node, "gcsim_duration_ps", d.ps());
          break;
        }
        case OpKind::memory:
          node.set_type(ChakraProtoMsg::METADATA_NODE);
          add_int(node, "gcsim_memory_delta", std::get<MemoryOp>(op.payload).delta.count());
          break;
        case OpKind::collective: {
          const auto& c = std::get<CollectiveOp>(op.payload);
          const uint32_t comm = g.communicator_of(r, c);
          used_comm[comm] = true;
          node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
          add_int(node, "comm_type", comm_type_of(c.kind));
          add_uint(node, "comm_size", static_cast<uint64_t>(c.bytes.count()));
          add_string(node, "pg_name", group_name(comm));
          if (c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce) {
            add_int(node, "root", g.communicator(comm).at(static_cast<size_t>(c.root)));
          }
          break;
        }
        case OpKind::send:
        case OpKind::recv: {
          const auto& p = std::get<P2pOp>(op.payload);
          const int peer = g.peer_of(r, p);
          const bool send = op.kind == OpKind::send;
          node.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
          add_int(node, "comm_src", send ? r : peer);
          add_int(node, "comm_dst", send ? peer : r);
          add_uint(node, "comm_size", static_cast<uint64_t>(p.bytes.count()));
          add_int(node, "comm_tag", (send ? sent : received)[peer]++);
          break;
        }
      }
      add_string(node, "stream", g.stream(op.stream));
      writer.write(node);
      ++out.nodes;
    }
    writer.close();
    out.files.push_back(file);
  }
  for (uint32_t c = 0; c < g.communicator_count(); ++c) {
    if (!used_comm[c]) continue;
    out.comm_groups[group_name(c)] = g.communicator(c);
  }
  out.comm_groups_file = base.string() + ".comm_groups.json";
  // One group per line, as ASTRA-sim's examples are written.
  std::ofstream f(out.comm_groups_file);
  f << "{";
  bool first = true;
  for (const auto& [name, ranks] : out.comm_groups) {
    f << (first ? "\n" : ",\n") << "  " << nlohmann::json(name).dump() << ": "
      << nlohmann::json(ranks).dump();
    first = false;
  }
  f << "\n}\n";
  if (!f.good()) throw TraceError(out.comm_groups_file + ": cannot write the comm groups");
  return out;
}

}  // namespace gcsim::workloads::chakra
