#include "workloads/training/op_emitter.h"

#include <algorithm>

namespace gcsim::workloads::training {

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::compute: return "compute";
    case OpCategory::optimizer: return "optimizer";
    case OpCategory::tp: return "tp";
    case OpCategory::cp: return "cp";
    case OpCategory::ep: return "ep";
    case OpCategory::pp: return "pp";
    case OpCategory::dp: return "dp";
    case OpCategory::memory: return "memory";
  }
  return "?";
}

TrainingStreams TrainingStreams::intern(WorkloadGraph& g) {
  TrainingStreams s;
  s.compute[0] = g.intern_stream("compute");
  s.compute[1] = g.intern_stream("compute 2");
  s.tp[0] = g.intern_stream("tp");
  s.tp[1] = g.intern_stream("tp 2");
  s.ep[0] = g.intern_stream("ep");
  s.ep[1] = g.intern_stream("ep 2");
  s.cp_send[0] = g.intern_stream("cp send");
  s.cp_send[1] = g.intern_stream("cp send 2");
  s.cp_recv[0] = g.intern_stream("cp recv");
  s.cp_recv[1] = g.intern_stream("cp recv 2");
  s.dp = g.intern_stream("dp");
  s.pp_send[0] = g.intern_stream("pp send next");
  s.pp_send[1] = g.intern_stream("pp send prev");
  s.pp_recv[0] = g.intern_stream("pp recv next");
  s.pp_recv[1] = g.intern_stream("pp recv prev");
  return s;
}

OpEmitter::OpEmitter(WorkloadGraph& g, RankProgram& program, std::vector<OpCategory>& categories,
                     const TrainingStreams& streams)
    : g_(g), program_(program), categories_(categories), streams_(streams) {}

uint32_t OpEmitter::append(Op op, OpCategory category, std::vector<uint32_t> deps, bool chain) {
  if (chain && cursor_ != kNoOp &&
      ((cursor_ & kExternal) != 0 || program_.ops[cursor_].stream != op.stream)) {
    deps.push_back(cursor_);
  }
  deps.erase(std::remove(deps.begin(), deps.end(), kNoOp), deps.end());
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  // A dependency on the op just before on the same stream is implied.
  op.deps = std::move(deps);
  const auto index = static_cast<uint32_t>(program_.ops.size());
  program_.ops.push_back(std::move(op));
  categories_.push_back(category);
  if (chain) cursor_ = index;
  return index;
}

uint32_t OpEmitter::kernel(const std::string& name, KernelShape shape, OpCategory category,
                           std::vector<uint32_t> extra) {
  Op op;
  op.name = g_.intern_name(name);
  op.kind = OpKind::compute;
  op.stream = streams_.compute[lane_];
  op.payload = ComputeOp{std::move(shape)};
  return append(std::move(op), category, std::move(extra), true);
}

uint32_t OpEmitter::collective(const std::string& name, CollectiveKind kind, int64_t bytes,
                               uint16_t slot, uint16_t stream, OpCategory category,
                               std::vector<uint32_t> extra, bool chain) {
  Op op;
  op.name = g_.intern_name(name);
  op.kind = OpKind::collective;
  op.stream = stream;
  CollectiveOp c;
  c.kind = kind;
  c.bytes = sim::Bytes(bytes);
  c.comm = slot;
  op.payload = c;
  if (!chain && cursor_ != kNoOp) extra.push_back(cursor_);
  return append(std::move(op), category, std::move(extra), chain);
}

uint32_t OpEmitter::all_to_all_v(const std::string& name,
                                 models::collectives::SplitMatrixPtr splits, int64_t largest,
                                 uint16_t slot, uint16_t stream, OpCategory category,
                                 std::vector<uint32_t> extra, bool chain) {
  const uint32_t id = collective(name, CollectiveKind::all_to_all, std::max<int64_t>(1, largest),
                                 slot, stream, category, std::move(extra), chain);
  std::get<CollectiveOp>(program_.ops[id].payload).splits = std::move(splits);
  return id;
}

uint32_t OpEmitter::send(const std::string& name, uint16_t peer_slot, uint16_t stream,
                         int64_t bytes, OpCategory category, std::vector<uint32_t> deps) {
  Op op;
  op.name = g_.intern_name(name);
  op.kind = OpKind::send;
  op.stream = stream;
  op.payload = P2pOp{peer_slot, sim::Bytes(bytes)};
  return append(std::move(op), category, std::move(deps), false);
}

uint32_t OpEmitter::recv(const std::string& name, uint16_t peer_slot, uint16_t stream,
                         int64_t bytes, OpCategory category, std::vector<uint32_t> deps) {
  Op op;
  op.name = g_.intern_name(name);
  op.kind = OpKind::recv;
  op.stream = stream;
  op.payload = P2pOp{peer_slot, sim::Bytes(bytes)};
  return append(std::move(op), category, std::move(deps), false);
}

uint32_t OpEmitter::memory(const std::string& name, int64_t delta, std::vector<uint32_t> deps) {
  Op op;
  op.name = g_.intern_name(name);
  op.kind = OpKind::memory;
  op.stream = streams_.compute[lane_];
  op.payload = MemoryOp{sim::Bytes(delta)};
  return append(std::move(op), OpCategory::memory, std::move(deps), false);
}

uint32_t OpEmitter::append_op(Op op, OpCategory category) {
  const auto index = static_cast<uint32_t>(program_.ops.size());
  program_.ops.push_back(std::move(op));
  categories_.push_back(category);
  return index;
}

void OpEmitter::depend(uint32_t op, uint32_t on) {
  auto& deps = program_.ops[op].deps;
  if (std::find(deps.begin(), deps.end(), on) == deps.end()) deps.push_back(on);
}

}  // namespace gcsim::workloads::training
