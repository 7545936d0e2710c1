// gcsim's kernel shapes as Chakra node attributes, so that an exported
// trace carries exactly the kernel the GPU model timed and an import with
// `workload.compute: model` rebuilds it (the round trip is exact). Every
// name starts with "gcsim_" to stay clear of tracers' own attributes. Other
// tools see the standard `num_ops` and `tensor_size` beside them.
#pragma once

#include <optional>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "workloads/chakra/et_def.pb.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::chakra {

// The kernel the GPU model builds for `op` (the cost model's tile grid);
// throws std::invalid_argument on a shape `gpu` cannot run.
models::gpu::KernelDesc kernel_of(const gcsim::models::gpu::GpuSpec& gpu, const ComputeOp& op);

// Adds gcsim_kernel (gemm | attention | elementwise | layer_norm | rms_norm
// | softmax | memcpy) and the shape's fields as gcsim_<field>.
void write_kernel_shape(ChakraProtoMsg::Node& node, const ComputeOp& op);

// The shape written by write_kernel_shape, or nullopt when the node has no
// gcsim_kernel attribute. Throws std::invalid_argument on a missing or
// malformed field.
std::optional<ComputeOp> read_kernel_shape(const ChakraProtoMsg::Node& node);

}  // namespace gcsim::workloads::chakra
