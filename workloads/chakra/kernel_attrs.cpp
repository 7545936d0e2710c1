#include "workloads/chakra/kernel_attrs.h"

#include <stdexcept>
#include <string>

#include "models/gpu/kernel_cost_model.h"
#include "workloads/chakra/attributes.h"

namespace gcsim::workloads::chakra {

using gcsim::models::gpu::AttentionShape;
using gcsim::models::gpu::Dtype;
using gcsim::models::gpu::GemmShape;
using gcsim::models::gpu::MemoryOpKind;
using gcsim::models::gpu::MemoryOpShape;

namespace {

const char* memory_kind_name(MemoryOpKind k) {
  switch (k) {
    case MemoryOpKind::elementwise: return "elementwise";
    case MemoryOpKind::layer_norm: return "layer_norm";
    case MemoryOpKind::rms_norm: return "rms_norm";
    case MemoryOpKind::softmax: return "softmax";
    case MemoryOpKind::memcpy: return "memcpy";
  }
  return "?";
}

std::optional<MemoryOpKind> parse_memory_kind(const std::string& s) {
  for (MemoryOpKind k : {MemoryOpKind::elementwise, MemoryOpKind::layer_norm,
                         MemoryOpKind::rms_norm, MemoryOpKind::softmax, MemoryOpKind::memcpy}) {
    if (s == memory_kind_name(k)) return k;
  }
  return std::nullopt;
}

struct Writer {
  ChakraProtoMsg::Node& n;
  void dtype(Dtype d) const { add_string(n, "gcsim_dtype", std::string(gcsim::models::gpu::dtype_name(d))); }
  void operator()(const GemmShape& s) const {
    add_string(n, "gcsim_kernel", "gemm");
    add_int(n, "gcsim_m", s.m);
    add_int(n, "gcsim_n", s.n);
    add_int(n, "gcsim_k", s.k);
    add_int(n, "gcsim_batch", s.batch);
    dtype(s.dtype);
  }
  void operator()(const AttentionShape& s) const {
    add_string(n, "gcsim_kernel", "attention");
    add_int(n, "gcsim_batch", s.batch);
    add_int(n, "gcsim_heads", s.heads);
    add_int(n, "gcsim_kv_heads", s.kv_heads);
    add_int(n, "gcsim_q_len", s.q_len);
    add_int(n, "gcsim_kv_len", s.kv_len);
    add_int(n, "gcsim_head_dim", s.head_dim);
    add_bool(n, "gcsim_causal", s.causal);
    add_bool(n, "gcsim_backward", s.backward);
    add_string(n, "gcsim_attention_kernel",
               std::string(gcsim::models::gpu::attention_family_name(s.family)));
    if (s.head_dim_v > 0) add_int(n, "gcsim_head_dim_v", s.head_dim_v);
    dtype(s.dtype);
  }
  void operator()(const MemoryOpShape& s) const {
    add_string(n, "gcsim_kernel", memory_kind_name(s.kind));
    add_int(n, "gcsim_elements", s.elements);
    add_int(n, "gcsim_rows", s.rows);
    add_int(n, "gcsim_cols", s.cols);
    add_int(n, "gcsim_inputs", s.inputs);
    add_double(n, "gcsim_flops_per_element", s.flops_per_element);
    if (s.bytes_per_element > 0.0) add_double(n, "gcsim_bytes_per_element", s.bytes_per_element);
    if (s.bandwidth_efficiency != 1.0) {
      add_double(n, "gcsim_bandwidth_efficiency", s.bandwidth_efficiency);
    }
    if (s.transcendentals_per_element > 0.0) {
      add_double(n, "gcsim_transcendentals_per_element", s.transcendentals_per_element);
    }
    if (s.reduction_rows > 0) {
      add_int(n, "gcsim_reduction_rows", s.reduction_rows);
      add_double(n, "gcsim_cycles_per_row", s.cycles_per_row);
    }
    if (s.log_softmax) add_bool(n, "gcsim_log_softmax", true);
    dtype(s.dtype);
  }
};

int64_t need_int(const ChakraProtoMsg::Node& n, const char* name) {
  auto v = int_attr(n, name);
  if (!v) throw std::invalid_argument(std::string("attribute '") + name + "' is missing");
  return *v;
}

Dtype need_dtype(const ChakraProtoMsg::Node& n) {
  const std::string s = string_attr(n, "gcsim_dtype").value_or("bf16");
  auto d = gcsim::models::gpu::parse_dtype(s);
  if (!d) throw std::invalid_argument("attribute 'gcsim_dtype' names no dtype: '" + s + "'");
  return *d;
}

}  // namespace

models::gpu::KernelDesc kernel_of(const gcsim::models::gpu::GpuSpec& gpu, const ComputeOp& op) {
  return std::visit(
      [&](const auto& s) -> gcsim::models::gpu::KernelDesc {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, GemmShape>) {
          return gcsim::models::gpu::gemm_kernel(gpu, s);
        } else if constexpr (std::is_same_v<S, AttentionShape>) {
          return gcsim::models::gpu::attention_kernel(gpu, s);
        } else {
          return gcsim::models::gpu::memory_kernel(gpu, s);
        }
      },
      op.shape);
}

void write_kernel_shape(ChakraProtoMsg::Node& node, const ComputeOp& op) {
  std::visit(Writer{node}, op.shape);
}

std::optional<ComputeOp> read_kernel_shape(const ChakraProtoMsg::Node& n) {
  const std::optional<std::string> kind = string_attr(n, "gcsim_kernel");
  if (!kind) return std::nullopt;
  if (*kind == "gemm") {
    GemmShape s;
    s.m = need_int(n, "gcsim_m");
    s.n = need_int(n, "gcsim_n");
    s.k = need_int(n, "gcsim_k");
    s.batch = int_attr(n, "gcsim_batch").value_or(1);
    s.dtype = need_dtype(n);
    return ComputeOp{s};
  }
  if (*kind == "attention") {
    AttentionShape s;
    s.batch = need_int(n, "gcsim_batch");
    s.heads = need_int(n, "gcsim_heads");
    s.kv_heads = int_attr(n, "gcsim_kv_heads").value_or(0);
    s.q_len = need_int(n, "gcsim_q_len");
    s.kv_len = int_attr(n, "gcsim_kv_len").value_or(0);
    s.head_dim = need_int(n, "gcsim_head_dim");
    s.causal = bool_attr(n, "gcsim_causal").value_or(false);
    s.backward = bool_attr(n, "gcsim_backward").value_or(false);
    s.head_dim_v = int_attr(n, "gcsim_head_dim_v").value_or(0);
    if (auto fam = string_attr(n, "gcsim_attention_kernel")) {
      auto f = gcsim::models::gpu::parse_attention_family(*fam);
      if (!f) {
        throw std::invalid_argument("attribute 'gcsim_attention_kernel' names no family: '" + *fam +
                                    "' (flash2, flash3, cudnn, unfused)");
      }
      s.family = *f;
    }
    s.dtype = need_dtype(n);
    return ComputeOp{s};
  }
  if (auto mk = parse_memory_kind(*kind)) {
    MemoryOpShape s;
    s.kind = *mk;
    s.elements = int_attr(n, "gcsim_elements").value_or(0);
    s.rows = int_attr(n, "gcsim_rows").value_or(0);
    s.cols = int_attr(n, "gcsim_cols").value_or(0);
    s.inputs = static_cast<int>(int_attr(n, "gcsim_inputs").value_or(1));
    s.flops_per_element = number_attr(n, "gcsim_flops_per_element").value_or(1.0);
    s.bytes_per_element = number_attr(n, "gcsim_bytes_per_element").value_or(0.0);
    s.bandwidth_efficiency = number_attr(n, "gcsim_bandwidth_efficiency").value_or(1.0);
    if (!(s.bandwidth_efficiency > 0.0 && s.bandwidth_efficiency <= 1.0)) {
      throw std::invalid_argument("attribute 'gcsim_bandwidth_efficiency' must be in (0, 1]");
    }
    s.transcendentals_per_element = number_attr(n, "gcsim_transcendentals_per_element").value_or(0.0);
    s.reduction_rows = int_attr(n, "gcsim_reduction_rows").value_or(0);
    s.cycles_per_row = number_attr(n, "gcsim_cycles_per_row").value_or(0.0);
    s.log_softmax = bool_attr(n, "gcsim_log_softmax").value_or(false);
    if (!(s.transcendentals_per_element >= 0.0) || s.reduction_rows < 0 || !(s.cycles_per_row >= 0.0)) {
      throw std::invalid_argument(
          "attributes 'gcsim_transcendentals_per_element', 'gcsim_reduction_rows' and "
          "'gcsim_cycles_per_row' must be >= 0");
    }
    s.dtype = need_dtype(n);
    return ComputeOp{s};
  }
  throw std::invalid_argument("attribute 'gcsim_kernel' names no kernel: '" + *kind +
                              "' (gemm, attention, elementwise, layer_norm, rms_norm, softmax, "
                              "memcpy)");
}

}  // namespace gcsim::workloads::chakra
