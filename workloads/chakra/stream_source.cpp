#include "workloads/chakra/stream_source.h"

#include <stdexcept>

#include "workloads/chakra/attributes.h"
#include "workloads/chakra/trace_loader.h"

namespace gcsim::workloads::chakra {

namespace {

// Equal keys for equal shapes: every field the cost model reads.
std::string shape_key(const ComputeOp& op) {
  using namespace gcsim::models::gpu;
  return std::visit(
      [](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        auto f = [](auto... v) {
          std::string k;
          ((k += std::to_string(v) + ","), ...);
          return k;
        };
        if constexpr (std::is_same_v<S, GemmShape>) {
          return "g" + f(s.m, s.n, s.k, s.batch, static_cast<int>(s.dtype));
        } else if constexpr (std::is_same_v<S, AttentionShape>) {
          return "a" + f(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, s.causal,
                         s.backward, static_cast<int>(s.dtype));
        } else {
          return "m" + f(static_cast<int>(s.kind), s.elements, s.rows, s.cols, s.inputs,
                         s.flops_per_element, static_cast<int>(s.dtype), s.bytes_per_element,
                         s.bandwidth_efficiency, s.transcendentals_per_element, s.reduction_rows,
                         s.cycles_per_row, s.log_softmax);
        }
      },
      op.shape);
}

}  // namespace

ChakraStreamSource::ChakraStreamSource(std::string prefix, ImportOptions options)
    : prefix_(std::move(prefix)), converter_(std::move(options)) {
  const int n = converter_.options().num_ranks;
  check_rank_files(prefix_, n);
  readers_.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    readers_.push_back(std::make_unique<TraceReader>(rank_file(prefix_, r)));
    // Streams in gcsim's order when gcsim wrote the trace, as the
    // whole-trace loader numbers them.
    try {
      if (auto s = string_list_attr(readers_.back()->metadata(), kStreamsAttr)) {
        for (const auto& name : *s) stream_id(name);
      }
    } catch (const std::invalid_argument& e) {
      throw TraceError(readers_.back()->path() + ": GlobalMetadata: " + e.what());
    }
    stream_id("compute");
  }
}

ChakraStreamSource::~ChakraStreamSource() = default;

std::string ChakraStreamSource::origin(int rank) const {
  return readers_.at(static_cast<size_t>(rank))->path() + ": rank " + std::to_string(rank);
}

uint16_t ChakraStreamSource::stream_id(const std::string& name) {
  auto [it, inserted] = stream_ids_.emplace(name, static_cast<uint16_t>(streams_.size()));
  if (inserted) {
    if (streams_.size() >= 0xFFFF) throw std::length_error("too many distinct stream names");
    streams_.push_back(name);
  }
  return it->second;
}

bool ChakraStreamSource::next(int rank, sim::SourcedOp& out) {
  TraceReader& reader = *readers_.at(static_cast<size_t>(rank));
  if (!reader.next(node_)) return false;
  converter_.convert(rank, reader.path(), node_, in_);
  out.id = in_.id;
  out.name = node_.name();
  out.deps = in_.deps;
  out.op = Op{};
  out.op.kind = in_.kind;
  out.op.stream = stream_id(in_.stream);
  out.op.payload = in_.payload;
  out.kernel = nullptr;
  out.peer = in_.peer;
  out.tag = in_.tag;
  out.communicator = 0;
  if (in_.kind == OpKind::collective) {
    auto [it, inserted] =
        communicator_ids_.emplace(in_.group, static_cast<uint32_t>(communicators_.size()));
    if (inserted) communicators_.push_back(in_.group);
    out.communicator = it->second;
  } else if (in_.kind == OpKind::compute) {
    const auto& c = std::get<ComputeOp>(in_.payload);
    auto& k = kernels_[shape_key(c)];
    if (!k) k = std::make_unique<Op>(out.op);
    out.kernel = k.get();
  }
  return true;
}

}  // namespace gcsim::workloads::chakra
