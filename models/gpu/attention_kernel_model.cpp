#include "models/gpu/attention_kernel_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpu/attention_grid_tail.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::gpu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t kv_len_of(const AttentionShape& s) { return s.kv_len > 0 ? s.kv_len : s.q_len; }
int64_t kv_heads_of(const AttentionShape& s) { return s.kv_heads > 0 ? s.kv_heads : s.heads; }
int64_t dv_of(const AttentionShape& s) { return s.head_dim_v > 0 ? s.head_dim_v : s.head_dim; }

double tensor_rate(const GpuSpec& spec, const AttentionShape& s, const char* what) {
  const double peak = spec.tensor_peak_for(s.dtype).flops_per_s();
  if (s.dtype == Dtype::fp32 || !(peak > 0.0)) {
    throw std::invalid_argument(std::string(what) + " attention needs a tensor-core dtype on " +
                                (spec.name.empty() ? std::string("this GPU") : spec.name) +
                                ", got " + std::string(dtype_name(s.dtype)));
  }
  return peak;
}

std::string shape_name(const AttentionShape& s) {
  return std::string(s.backward ? "attention bwd " : "attention fwd ") +
         std::string(attention_family_name(s.family)) + " b" + std::to_string(s.batch) + " h" +
         std::to_string(s.heads) + "/" + std::to_string(kv_heads_of(s)) + " q" +
         std::to_string(s.q_len) + " kv" + std::to_string(kv_len_of(s)) + " d" +
         std::to_string(s.head_dim) +
         (s.head_dim_v > 0 && s.head_dim_v != s.head_dim ? "/" + std::to_string(s.head_dim_v)
                                                         : std::string()) +
         (s.causal ? " causal " : " ") + std::string(dtype_name(s.dtype));
}

// HBM bytes of Q, K, V, O (and their gradients backward), each moved once
// (K and V once together when V is a slice of K).
double io_bytes(const AttentionShape& s) {
  const double b = static_cast<double>(s.batch), h = static_cast<double>(s.heads),
               hkv = static_cast<double>(kv_heads_of(s)), q = static_cast<double>(s.q_len),
               kv = static_cast<double>(kv_len_of(s)),
               dsum = static_cast<double>(s.head_dim + dv_of(s));
  const double once =
      (b * h * q * dsum + b * hkv * kv * attention_kv_width(s)) * dtype_bytes(s.dtype);
  return s.backward ? 2.0 * once : once;
}

// One CTA per (batch, KV head, split of the keys), as kernel_cost_model's
// flash-decoding; a family with decode_min_split_keys does not split fewer
// keys than that (cuDNN: 1024).
int64_t decode_tiles(const GpuSpec& spec, const AttentionShape& s) {
  const int64_t heads_total = s.batch * kv_heads_of(s);
  const int64_t kv = kv_len_of(s);
  if (kv < spec.efficiency.fused_attention(s.family).decode_min_split_keys) return heads_total;
  return heads_total * decode_kv_splits(spec, heads_total, kv);
}

// Keys a decode CTA's tile covers at a time (cuDNN's sm80 split-KV kernel
// is knob_35_16x128x128: 128 keys a step).
constexpr int64_t kDecodeKeyBlock = 128;

}  // namespace

AttentionTile attention_tile(AttentionFamily family, int64_t d, bool backward) {
  if (family == AttentionFamily::flash2) {
    if (backward) {
      if (d <= 64) return {128, 128, 8};
      if (d <= 128) return {64, 128, 8};
      return {64, 64, 8};
    }
    if (d <= 64) return {128, 128, 4};
    if (d <= 128) return {128, 64, 4};
    if (d <= 160) return {128, 32, 4};
    if (d <= 224) return {128, 64, 8};
    return {64, 64, 4};
  }
  if (family == AttentionFamily::flash3) {
    if (d <= 64) return backward ? AttentionTile{128, 128} : AttentionTile{192, 128};
    if (d <= 128) return backward ? AttentionTile{64, 128} : AttentionTile{128, 128};
    if (d <= 192) return backward ? AttentionTile{64, 96} : AttentionTile{128, 96};
    return backward ? AttentionTile{64, 64} : AttentionTile{128, 80};
  }
  // cudnn: the forward kernel PyTorch 2.11 runs up to d = 128 is
  // sm90_flash_fprop_wgmma_f16_knob_7_64x128x128 (torch.profiler in
  // calibration/measurements/h100-sxm/attention_families_2026-11-26 and
  // serving_kernels_2026-11-27): 64 query rows by 128 keys; above 128 the
  // model keeps half-width key blocks of 128 rows (the d-192 trace's
  // knob_7_64x128x192 is not taken up here). The backward is
  // sm90_flash_bprop_wgmma_f16_knob_26_64x64xD at d = 64, 128 and 192 (the
  // same traces): a CTA per 64-key block over 64-row query blocks (16 heads
  // at 512 tokens: 128 CTAs).
  if (backward) return AttentionTile{64, 64};
  if (d <= 128) return AttentionTile{64, 128};
  return AttentionTile{128, 64};
}

int64_t attention_ctas_per_sm(AttentionFamily family, AttentionTile tile, int64_t d,
                              bool backward) {
  if (family != AttentionFamily::flash2) return 1;
  constexpr int64_t kRegistersPerSm = 65536, kRegistersPerThread = 255;
  constexpr int64_t kSmemPerSm = 228 * 1024;  // bytes, Hopper
  const int64_t by_registers = kRegistersPerSm / (tile.warps * 32 * kRegistersPerThread);
  // Forward: Q (m rows) and double-buffered-free K and V (n rows each), bf16.
  const int64_t smem = (tile.m + 2 * tile.n) * ((d + 31) / 32 * 32) * 2;
  const int64_t by_smem = backward ? 1 : kSmemPerSm / smem;
  return std::max<int64_t>(1, std::min(by_registers, by_smem));
}

double executed_pairs(const AttentionShape& s, AttentionTile t) {
  const double block = static_cast<double>(t.m) * static_cast<double>(t.n);
  double blocks = 0.0;
  for (int64_t b : blocks_per_cta(s, t.m, t.n)) blocks += static_cast<double>(b);
  return block * blocks;
}

double exp_rate(const GpuSpec& spec) {
  return static_cast<double>(spec.sm_count) * kSfuExpPerSmPerClock * spec.sm_clock_ghz * 1e9;
}

AttentionFamily resolve_attention_family(std::optional<AttentionFamily> choice,
                                         const GpuSpec& spec, bool decode) {
  if (choice) return *choice;
  return decode ? spec.default_decode_attention : spec.default_attention;
}

AttentionSideKernels attention_side_kernels(const AttentionShape& s) {
  AttentionSideKernels side;
  if (!s.backward || s.q_len <= kDecodeMaxQueryLen) return side;
  const double bytes = static_cast<double>(dtype_bytes(s.dtype));
  const double b = static_cast<double>(s.batch), h = static_cast<double>(s.heads),
               hkv = static_cast<double>(kv_heads_of(s)), q = static_cast<double>(s.q_len),
               kv = static_cast<double>(kv_len_of(s)), d = static_cast<double>(s.head_dim),
               dv = static_cast<double>(dv_of(s));
  // dO.O: reads O and dO, writes one fp32 sum a row.
  side.bytes += b * h * q * (2.0 * dv * bytes + 4.0);
  // dQ: the fp32 accumulator read, the 16-bit gradient written.
  side.bytes += b * h * q * d * (4.0 + bytes);
  side.kernels = 2;
  if (hkv < h) {
    // GQA: dK and dV come out per query head and are summed over each
    // group (read per query head, written per KV head).
    side.bytes += b * kv * (d + dv) * (h + hkv) * bytes;
    side.kernels += 2;
  }
  return side;
}

double attention_flops(const AttentionShape& s) {
  const double bh = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  const double d = static_cast<double>(s.head_dim), dv = static_cast<double>(dv_of(s));
  const double per_pair = s.backward ? 2.0 * (3.0 * d + 2.0 * dv) : 2.0 * (d + dv);
  return bh * per_pair * attention_pairs(s);
}

FusedAttentionTerms fused_attention_terms(const GpuSpec& spec, const AttentionShape& s) {
  FusedAttentionTerms t;
  const double sms = static_cast<double>(spec.sm_count);
  const double mma_rate = tensor_rate(spec, s, std::string(attention_family_name(s.family)).c_str()) / sms;
  // The SFU runs at the SM clock: at sustained clocks it slows with the tensor cores.
  const double clock = spec.at_sustained_clocks ? spec.sustained_tensor_fraction : 1.0;
  const double sfu_rate = exp_rate(spec) * clock / sms;
  const double bh = static_cast<double>(s.batch) * static_cast<double>(s.heads);
  const double d = static_cast<double>(s.head_dim), dv = static_cast<double>(dv_of(s));
  t.wide = std::clamp(dv / 64.0 - 2.0, 0.0, 2.0);
  double mma_flops = 0.0, exps = 0.0;
  // flash2's decode is its own kernel (attention_flash2_decode.h); its
  // backward at a few query rows runs the prefill tiles.
  if (s.q_len <= kDecodeMaxQueryLen && s.family != AttentionFamily::flash2) {
    t.decode = true;
    t.tiles = t.ctas = decode_tiles(spec, s);
    mma_flops = attention_flops(s);
    exps = bh * attention_pairs(s);
  } else {
    const AttentionTile tile = attention_tile(s.family, s.head_dim, s.backward);
    t.ctas = s.batch * s.heads * ceil_div(s.backward ? kv_len_of(s) : s.q_len,
                                          s.backward ? tile.n : tile.m);
    // How the CTAs share an SM: a fused family's pass says (cuDNN's forward:
    // two, a lone one latency-bound); flash2's occupancy follows from its
    // registers and shared memory, with the wave model where two share.
    const CtaSharing sharing = s.family == AttentionFamily::flash2
                                   ? CtaSharing{}
                                   : cta_sharing(fused_attention_pass(spec, s.family, s.backward));
    const int64_t hw_per_sm = attention_ctas_per_sm(s.family, tile, s.head_dim, s.backward);
    // CTAs that share an SM run as one tile of their summed work.
    const int64_t per_sm = std::max(hw_per_sm, sharing.ctas_per_sm);
    t.tiles = ceil_div(t.ctas, per_sm);
    exps = bh * executed_pairs(s, tile);
    mma_flops = exps * (s.backward ? 2.0 * (3.0 * d + 2.0 * dv) : 2.0 * (d + dv));
    // One schedule of the grid's CTAs (attention_grid_tail.h): the causal
    // tail, and for a family whose CTAs share an SM, their latency.
    t.tail = attention_grid_tail(s.family, s, tile.m, tile.n, spec.sm_count, sharing, hw_per_sm);
  }
  t.waves = ceil_div(t.tiles, spec.sm_count);
  const double tiles = static_cast<double>(t.tiles);
  // The causal grid's tail stretches every wave's tile alike, so that the
  // waves add up to the list-scheduled makespan (attention_grid_tail.h).
  t.mma_s = t.tail * mma_flops / tiles / mma_rate;
  // A spec without an SM clock (datasheet fixtures) has no SFU rate: no
  // exponential term rather than an infinite one.
  t.exp_s = sfu_rate > 0.0 ? t.tail * exps / tiles / sfu_rate : 0.0;
  return t;
}

FusedAttentionPass fused_attention_pass(const GpuSpec& spec, AttentionFamily family, bool backward) {
  if (family == AttentionFamily::flash2) {
    const GpuEfficiency& e = spec.efficiency;
    const Flash2PrefillPass& f = backward ? e.flash2_prefill.backward : e.flash2_prefill.forward;
    return FusedAttentionPass{backward ? e.attention_backward : e.attention, f.wide_head,
                              f.softmax_exposed,
                              backward ? e.attention_backward_tile_overhead : e.attention_tile_overhead};
  }
  const FusedAttentionParams& p = spec.efficiency.fused_attention(family);
  return backward ? p.backward : p.forward;
}

KernelDesc fused_attention_kernel(const GpuSpec& spec, const AttentionShape& s) {
  if (s.family == AttentionFamily::unfused) {
    throw std::invalid_argument("fused_attention_kernel: unfused is not a fused family");
  }
  if (s.family == AttentionFamily::flash2 && s.q_len <= kDecodeMaxQueryLen && !s.backward) {
    throw std::invalid_argument("fused_attention_kernel: flash2's decode is flash2_decode_kernel");
  }
  const FusedAttentionTerms t = fused_attention_terms(spec, s);
  const FusedAttentionParams& p = spec.efficiency.fused_attention(s.family);
  const FusedAttentionPass pass = fused_attention_pass(spec, s.family, s.backward);
  if (!(pass.efficiency > 0.0 && pass.efficiency <= 1.0) ||
      !(pass.wide_head > 0.0 && pass.wide_head <= 1.0) ||
      !(pass.softmax_exposed >= 0.0 && pass.softmax_exposed <= 1.0) ||
      !(pass.ctas_per_sm >= 1 && pass.ctas_per_sm <= 4) ||
      !(pass.lone_cta_fraction > 0.0 && pass.lone_cta_fraction <= 1.0) ||
      !(pass.cta_latency_blocks >= 0.0 && pass.cta_latency_blocks <= 16.0) ||
      !(pass.side_bandwidth >= 0.0 && pass.side_bandwidth <= 1.0) ||
      pass.kernel_overhead < sim::Duration::zero()) {
    throw std::invalid_argument(std::string(attention_family_name(s.family)) +
                                " attention parameters out of range on " + spec.name);
  }
  KernelDesc k;
  k.name = shape_name(s);
  k.unit = ExecUnit::tensor;
  k.dtype = s.dtype;
  k.fused_attention = !t.decode;
  k.tiles = t.tiles;
  k.flops_per_tile = attention_flops(s) / static_cast<double>(t.tiles);
  k.bytes_per_tile = io_bytes(s) / static_cast<double>(t.tiles);
  // The tile's time at the SM's tensor rate, folded into one achieved
  // fraction of peak: useful flops over (MMA time + exposed exponentials).
  const double inv_e = 1.0 / pass.efficiency +
                       t.wide * (1.0 / (pass.efficiency * pass.wide_head) - 1.0 / pass.efficiency);
  const double tile_s = t.mma_s * inv_e + pass.softmax_exposed * t.exp_s;
  const double useful_s = k.flops_per_tile /
                          (spec.tensor_peak_for(s.dtype).flops_per_s() / spec.sm_count);
  k.efficiency = std::clamp(useful_s / tile_s, 1e-6, 1.0);
  if (t.decode) {
    // decode_bandwidth is a fraction of the HBM peak; the kernel desc counts
    // against the streaming rate (peak x efficiency.hbm), which a split-KV
    // read of long contiguous rows may pass.
    k.bandwidth_efficiency = p.decode_bandwidth / spec.efficiency.hbm;
    k.extra_wave_overhead = p.decode_wave_overhead;
    // Split keys leave partial results that a second kernel combines, the
    // longer the more pieces each (sequence, KV head) was cut into.
    const int64_t pieces = t.tiles / (s.batch * kv_heads_of(s));
    const bool split = pieces > 1;
    k.setup = p.decode_kernel_overhead;
    if (split) {
      k.setup += p.decode_split_overhead +
                 p.decode_split_per_doubling.scaled(std::log2(static_cast<double>(pieces)));
    }
    // A CTA walks its key blocks one after another: with few CTAs its loads'
    // latency, not the stack's bandwidth, sets its time (a floor under the
    // KV read, in SM cycles; not arithmetic the power model counts).
    // Unsplit kernels only (attention_family.h: a split CTA's few blocks had no
    // floor to fit).
    const sim::Duration block = split ? sim::Duration::zero() : p.decode_block_latency;
    if (block > sim::Duration::zero()) {
      const int64_t blocks = ceil_div(ceil_div(kv_len_of(s), pieces), kDecodeKeyBlock);
      k.latency_floor_cycles_per_tile =
          static_cast<double>(blocks + 1) * block.seconds() * spec.sm_clock_ghz * 1e9;
    }
  } else {
    k.extra_wave_overhead = pass.wave_overhead;
    // The grid's ramp and drain, once (cuDNN's forward: fitted with its
    // lone-CTA latency on the serving grids).
    k.setup = pass.kernel_overhead;
    // The call's side kernels (the backward's dO.O, dQ conversion, GQA's
    // head reductions) run before and after the main kernel, each timed as
    // gcsim times any kernel on a stream: its launch latency, plus its
    // bytes streamed at side_bandwidth of the HBM peak. They are kernels a
    // profiler counts, so they go into the body (spread over the waves:
    // isolated_time() adds them up to exactly this), not the setup before it.
    const AttentionSideKernels side = attention_side_kernels(s);
    if (pass.side_bandwidth > 0.0 && side.bytes > 0.0 && t.waves > 0) {
      const sim::Duration side_time =
          spec.kernel_launch_latency * side.kernels +
          sim::Duration::from_seconds(side.bytes /
                                      (spec.hbm_bandwidth.bytes_per_s() * pass.side_bandwidth));
      k.extra_wave_overhead += side_time.scaled(1.0 / static_cast<double>(t.waves));
    }
  }
  return k;
}

KernelDesc unfused_attention_kernel(const GpuSpec& spec, const AttentionShape& s) {
  const double peak = tensor_rate(spec, s, "unfused");
  const int64_t bh = s.batch * s.heads, q = s.q_len, kv = kv_len_of(s), d = s.head_dim,
                dv = dv_of(s);
  const double scores = static_cast<double>(bh) * static_cast<double>(q) * static_cast<double>(kv);
  auto score_pass = [&](int inputs) {
    MemoryOpShape m;
    m.kind = MemoryOpKind::elementwise;
    m.elements = bh * q * kv;
    m.inputs = inputs;
    m.dtype = s.dtype;
    return memory_kernel(spec, m);
  };
  std::vector<KernelDesc> parts;
  if (!s.backward) {
    parts.push_back(gemm_kernel(spec, GemmShape{q, kv, d, bh, s.dtype}));  // S = Q K^T
    if (s.causal) parts.push_back(score_pass(1));                        // mask
    MemoryOpShape sm;
    sm.kind = MemoryOpKind::softmax;
    sm.rows = bh * q;
    sm.cols = kv;
    sm.dtype = s.dtype;
    parts.push_back(memory_kernel(spec, sm));                             // P = softmax(S)
    parts.push_back(gemm_kernel(spec, GemmShape{q, dv, kv, bh, s.dtype}));  // O = P V
  } else {
    parts.push_back(gemm_kernel(spec, GemmShape{q, kv, dv, bh, s.dtype}));  // dP = dO V^T
    parts.push_back(gemm_kernel(spec, GemmShape{kv, dv, q, bh, s.dtype}));  // dV = P^T dO
    parts.push_back(score_pass(2));                                       // dS = P (dP - rowsum)
    if (s.causal) parts.push_back(score_pass(1));                        // mask backward
    parts.push_back(gemm_kernel(spec, GemmShape{q, d, kv, bh, s.dtype}));   // dQ = dS K
    parts.push_back(gemm_kernel(spec, GemmShape{kv, d, q, bh, s.dtype}));   // dK = dS^T Q
  }
  double total_s = 0.0, bytes = 0.0;
  for (const KernelDesc& part : parts) {
    total_s += isolated_time(spec, part, spec.sm_count).seconds();
    bytes += part.total_bytes();
  }
  const double dd = static_cast<double>(d), ddv = static_cast<double>(dv);
  const double flops = scores * (s.backward ? 2.0 * (3.0 * dd + 2.0 * ddv) : 2.0 * (dd + ddv));
  KernelDesc k;
  k.name = shape_name(s);
  k.unit = ExecUnit::tensor;
  k.dtype = s.dtype;
  k.tiles = spec.sm_count;  // one wave on the whole GPU, as the parts ran
  k.flops_per_tile = flops / static_cast<double>(k.tiles);
  k.bytes_per_tile = bytes / static_cast<double>(k.tiles);
  // One launch and one wave overhead stand for the parts' own.
  const double body_s = std::max(total_s - spec.kernel_launch_latency.seconds() -
                                     spec.efficiency.tile_overhead.seconds(),
                                 1e-9);
  k.efficiency = std::clamp(flops / (peak * body_s), 1e-6, 1.0);
  return k;
}

}  // namespace gcsim::models::gpu
