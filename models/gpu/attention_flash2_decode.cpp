#include "models/gpu/attention_flash2_decode.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::gpu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The split kernel's key block (run_mha_fwd_splitkv_dispatch): 256, 128 or
// 64 keys as the head dim grows.
int64_t key_block(int64_t head_dim) { return head_dim <= 64 ? 256 : head_dim <= 128 ? 128 : 64; }

// The query rows of each (batch, head) block and how many such blocks.
struct QueryBlocks {
  int64_t heads = 0;  // per batch
  int64_t rows = 0;   // per head
};
QueryBlocks query_blocks(const AttentionShape& s) {
  const int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
  // seqlenq_ngroups_swapped: one query, more query heads than KV heads.
  if (s.q_len == 1 && s.heads > kv_heads) return {kv_heads, s.heads / kv_heads};
  return {s.heads, s.q_len};
}

}  // namespace

int64_t flash2_num_splits(int64_t row_blocks, int64_t slots, int64_t key_blocks) {
  if (row_blocks < 1 || slots < 1 || key_blocks < 1) return 1;
  if (5 * row_blocks >= 4 * slots) return 1;  // >= 80% of the slots filled
  const int64_t most = std::min({int64_t{128}, slots, key_blocks});
  // A split count that leaves the key blocks per split as the one below it
  // does is the same split: not eligible.
  auto eligible = [&](int64_t n) {
    return n == 1 || ceil_div(key_blocks, n) != ceil_div(key_blocks, n - 1);
  };
  std::vector<double> eff(static_cast<size_t>(most) + 1, 0.0);
  double best = 0.0;
  for (int64_t n = 1; n <= most; ++n) {
    if (!eligible(n)) continue;
    const double waves = static_cast<double>(row_blocks * n) / static_cast<double>(slots);
    eff[static_cast<size_t>(n)] = waves / std::ceil(waves);
    best = std::max(best, eff[static_cast<size_t>(n)]);
  }
  for (int64_t n = 1; n <= most; ++n) {
    if (eligible(n) && eff[static_cast<size_t>(n)] >= 0.85 * best) return n;
  }
  return 1;
}

Flash2DecodeGrid flash2_decode_grid(const GpuSpec& spec, const AttentionShape& s) {
  const QueryBlocks q = query_blocks(s);
  const int64_t kv = s.kv_len > 0 ? s.kv_len : s.q_len;
  Flash2DecodeGrid g;
  g.rows = q.rows;
  // The heuristic counts 64-row blocks (the split kernel's) either way.
  g.splits = flash2_num_splits(s.batch * q.heads * ceil_div(q.rows, 64), 2 * int64_t{spec.sm_count},
                               ceil_div(kv, key_block(s.head_dim)));
  g.block_m = g.splits > 1 ? 64 : 128;
  g.row_blocks = s.batch * q.heads * ceil_div(q.rows, g.block_m);
  return g;
}

KernelDesc flash2_decode_kernel(const GpuSpec& spec, const AttentionShape& s,
                                const Flash2DecodeParams& p) {
  if (!(p.efficiency > 0.0 && p.efficiency <= 1.0) || !(p.bandwidth > 0.0 && p.bandwidth <= 1.0) ||
      p.wave_overhead < sim::Duration::zero() || p.combine_overhead < sim::Duration::zero() ||
      p.combine_per_split < sim::Duration::zero()) {
    throw std::invalid_argument("flash2 decode parameters out of range on " + spec.name);
  }
  KernelDesc k;
  k.dtype = s.dtype;
  // FlashAttention-2 runs fp16/bf16 on the tensor cores; fp32 (not a
  // FlashAttention dtype) is costed on the CUDA cores as the prefill model does.
  k.unit = s.dtype == Dtype::fp32 ? ExecUnit::vector : ExecUnit::tensor;
  if (k.unit == ExecUnit::tensor && !(spec.tensor_peak_for(s.dtype).flops_per_s() > 0.0)) {
    throw std::invalid_argument("attention: " + std::string(dtype_name(s.dtype)) +
                                " is not supported by the tensor cores of " +
                                (spec.name.empty() ? std::string("this GPU") : spec.name));
  }
  const Flash2DecodeGrid g = flash2_decode_grid(spec, s);
  const int64_t kv = s.kv_len > 0 ? s.kv_len : s.q_len;
  const int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
  const double d = static_cast<double>(s.head_dim),
               dv = static_cast<double>(s.head_dim_v > 0 ? s.head_dim_v : s.head_dim);
  // Whole blocks: every CTA row and every key of the last, partial key block.
  const double keys = static_cast<double>(ceil_div(kv, key_block(s.head_dim)) * key_block(s.head_dim));
  const double executed = static_cast<double>(g.row_blocks * g.block_m) * keys * 2.0 * (d + dv);
  const double useful = attention_flops(s);
  // Q read and O written per query row; K and V per key (once if shared).
  const double bytes = (static_cast<double>(s.batch * s.heads * s.q_len) * (d + dv) +
                        static_cast<double>(s.batch * kv_heads * kv) * attention_kv_width(s)) *
                       dtype_bytes(s.dtype);
  k.tiles = g.ctas();
  k.flops_per_tile = useful / static_cast<double>(k.tiles);
  k.bytes_per_tile = bytes / static_cast<double>(k.tiles);
  // The MMA time of the padded tile, folded into one achieved fraction of
  // the unit's peak for the useful flops.
  k.efficiency = std::clamp(p.efficiency * useful / executed, 1e-9, 1.0);
  // bandwidth is of the HBM peak; the kernel desc counts against the
  // streaming rate (peak x efficiency.hbm).
  k.bandwidth_efficiency = p.bandwidth / spec.efficiency.hbm;
  k.extra_wave_overhead = p.wave_overhead;
  if (g.splits > 1) k.setup = p.combine_overhead + p.combine_per_split * g.splits;
  k.name = "attention decode flash2 b" + std::to_string(s.batch) + " h" + std::to_string(s.heads) +
           "/" + std::to_string(kv_heads) + " q" + std::to_string(s.q_len) + " kv" +
           std::to_string(kv) + " d" + std::to_string(s.head_dim) + " splits " +
           std::to_string(g.splits) + " " + std::string(dtype_name(s.dtype));
  return k;
}

}  // namespace gcsim::models::gpu
