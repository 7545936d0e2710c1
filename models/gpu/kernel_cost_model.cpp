#include "models/gpu/kernel_cost_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>

#include "models/gpu/attention_flash2_decode.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/hbm.h"
#include "models/gpu/l2_cache.h"
#include "models/gpu/memory_spread.h"
#include "sim/config/units.h"

namespace gcsim::models::gpu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The warps one SM holds at once while `ctas` CTAs of `threads` threads
// share `sms` SMs: its share of the CTAs, at most the SM's resident limit.
int64_t warps_per_sm(int64_t ctas, int64_t sms, int64_t threads) {
  return std::min<int64_t>(kMaxWarpsPerSm, ceil_div(ctas, sms) * ceil_div(threads, int64_t{32}));
}

// The share of one SM's HBM reach those warps pull: their loads in flight
// against a full SM's kMaxWarpsPerSm (Little's law).
double warp_share(int64_t warps) { return static_cast<double>(warps) / kMaxWarpsPerSm; }

void require_positive(int64_t v, const char* op, const char* field) {
  if (v <= 0) {
    throw std::invalid_argument(std::string(op) + ": " + field + " must be > 0, got " +
                                std::to_string(v));
  }
}

// fp32 runs on the CUDA cores (no tensor-core fp32 path on NVIDIA GPUs; tf32
// is its own dtype). Every other dtype needs a tensor-core peak on this GPU.
ExecUnit matmul_unit(const GpuSpec& spec, Dtype dtype, const char* op) {
  if (dtype == Dtype::fp32) return ExecUnit::vector;
  if (!(spec.tensor_peak_for(dtype).flops_per_s() > 0.0)) {
    throw std::invalid_argument(std::string(op) + ": " + std::string(dtype_name(dtype)) +
                                " is not supported by the tensor cores of " +
                                (spec.name.empty() ? std::string("this GPU") : spec.name) +
                                " (its " + std::string(dtype_name(dtype)) + " peak is 0)");
  }
  return ExecUnit::tensor;
}

sim::FlopRate unit_peak(const GpuSpec& spec, const KernelDesc& k) {
  return k.unit == ExecUnit::tensor ? spec.tensor_peak_for(k.dtype) : spec.vector_fp32_peak;
}

// fp8/int8 GEMMs write their output in bf16 (the usual scaled-matmul epilogue).
double output_bytes(Dtype d) { return dtype_bytes(d) < 2.0 ? 2.0 : dtype_bytes(d); }

// The fitted multiplier of one tile candidate (1 for a shape not in the list).
double tile_efficiency(const GpuSpec& spec, GemmTile tile) {
  for (size_t i = 0; i < std::size(kGemmTileCandidates); ++i) {
    if (kGemmTileCandidates[i].m == tile.m && kGemmTileCandidates[i].n == tile.n) {
      return spec.efficiency.gemm_tile[i];
    }
  }
  return 1.0;
}

}  // namespace

KernelDesc gemm_kernel_with_tile(const GpuSpec& spec, const GemmShape& s, GemmTile tile,
                                 int64_t split_k) {
  require_positive(s.m, "gemm", "m");
  require_positive(s.n, "gemm", "n");
  require_positive(s.k, "gemm", "k");
  require_positive(s.batch, "gemm", "batch");
  require_positive(split_k, "gemm", "split_k");
  KernelDesc k;
  k.unit = matmul_unit(spec, s.dtype, "gemm");
  k.dtype = s.dtype;
  k.efficiency = spec.efficiency.tensor_for(s.dtype) * tile_efficiency(spec, tile);
  k.persistent = spec.persistent_gemm;
  k.split_k = split_k;
  // Partial edge tiles cost a full tile: the CTA runs its whole mainloop.
  k.tiles = s.batch * ceil_div(s.m, tile.m) * ceil_div(s.n, tile.n) * split_k;
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               kk = static_cast<double>(s.k), batch = static_cast<double>(s.batch),
               slices = static_cast<double>(split_k);
  // A GEMM narrower than the tile (decode: M = batch 1-256) runs the MMAs
  // of its own rows rounded up to 8, not the tile's: Hopper's wgmma takes
  // N = 8..256 in steps of 8 on the operand cuBLAS puts the batch on, and
  // cuBLAS picks such tiles (nvjet_sm90_tst_64x8, 128x8, 64x32, 128x32 in
  // calibration/measurements/h100-sxm/serving_kernels_2026-11-27 at batch 1
  // and 32). The HBM bytes below are the true ones either way.
  const int64_t mma_rows = std::min<int64_t>(tile.m, ceil_div(s.m, 8) * 8);
  k.flops_per_tile =
      2.0 * static_cast<double>(mma_rows) * static_cast<double>(tile.n) * kk / slices;
  k.overlap_knee = kGemmOverlapKnee;
  // Ideal traffic: A and B read once, C written once (L2 catches the reuse);
  // split, C is s fp32 partials instead.
  const double c_bytes = split_k > 1 ? slices * m * n * 4.0 : m * n * output_bytes(s.dtype);
  const double bytes = batch * ((m * kk + kk * n) * dtype_bytes(s.dtype) + c_bytes);
  k.bytes_per_tile = bytes / static_cast<double>(k.tiles);
  const int64_t first_wave = std::min<int64_t>(k.tiles, spec.sm_count);
  k.setup = spec.efficiency.gemm_setup + spec.efficiency.gemm_setup_per_cta * first_wave;
  if (split_k > 1) {
    // The reduction kernel: reads the partials, writes C (cublasLt's
    // splitKreduce_kernel, 1.7-2.4 us on an H100 at these sizes).
    k.setup += spec.kernel_launch_latency +
               sim::transfer_time(gemm_split_k_reduce_bytes(s, split_k), achieved_hbm_bandwidth(spec));
  }
  k.name = "gemm " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
           (s.batch > 1 ? " batch " + std::to_string(s.batch) : std::string()) + " " +
           std::string(dtype_name(s.dtype)) +
           (split_k > 1 ? " split-K " + std::to_string(split_k) : std::string()) + " tile " +
           std::to_string(tile.m) + "x" + std::to_string(tile.n);
  return k;
}

int64_t gemm_split_k_slices(const GpuSpec& spec, const GemmShape& s, GemmTile tile) {
  const int64_t min_slice = spec.efficiency.gemm_split_k_min_slice;
  if (min_slice <= 0 || s.m <= 0 || s.n <= 0 || s.batch <= 0) return 1;
  const int64_t tiles = s.batch * ceil_div(s.m, tile.m) * ceil_div(s.n, tile.n);
  const int64_t slices = std::min<int64_t>(spec.sm_count / tiles, s.k / min_slice);
  return slices >= 2 ? slices : 1;
}

double gemm_split_k_reduce_bytes(const GemmShape& s, int64_t split_k) {
  return static_cast<double>(s.batch) * static_cast<double>(s.m) * static_cast<double>(s.n) *
         (static_cast<double>(split_k) * 4.0 + output_bytes(s.dtype));
}

std::vector<KernelDesc> gemm_candidates(const GpuSpec& spec, const GemmShape& shape) {
  std::vector<KernelDesc> out;
  for (GemmTile tile : kGemmTileCandidates) {
    out.push_back(gemm_kernel_with_tile(spec, shape, tile));
    const int64_t slices = gemm_split_k_slices(spec, shape, tile);
    if (slices > 1) out.push_back(gemm_kernel_with_tile(spec, shape, tile, slices));
  }
  return out;
}

KernelDesc gemm_kernel(const GpuSpec& spec, const GemmShape& shape) {
  KernelDesc best;
  sim::Duration best_time = sim::Duration::max();
  for (KernelDesc& k : gemm_candidates(spec, shape)) {
    const sim::Duration t = isolated_time(spec, k, spec.sm_count);
    if (t < best_time || (t == best_time && k.total_flops() < best.total_flops())) {
      best = std::move(k);
      best_time = t;
    }
  }
  return best;
}

double attention_pairs(const AttentionShape& s) {
  const int64_t kv_len = s.kv_len > 0 ? s.kv_len : s.q_len;
  const double q = static_cast<double>(s.q_len), kv = static_cast<double>(kv_len);
  if (!s.causal) return q * kv;
  // Row i sees kv - q + i + 1 keys, clipped to [0, kv].
  if (s.q_len <= kv_len) return q * (kv - q) + q * (q + 1.0) / 2.0;
  return kv * (kv + 1.0) / 2.0;  // the first q - kv rows see no key
}

double attention_kv_width(const AttentionShape& s) {
  const int64_t dv = s.head_dim_v > 0 ? s.head_dim_v : s.head_dim;
  return static_cast<double>(s.kv_shared ? std::max(s.head_dim, dv) : s.head_dim + dv);
}

KernelDesc attention_kernel(const GpuSpec& spec, const AttentionShape& s) {
  require_positive(s.batch, "attention", "batch");
  require_positive(s.heads, "attention", "heads");
  require_positive(s.q_len, "attention", "q_len");
  require_positive(s.head_dim, "attention", "head_dim");
  const int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
  if (s.heads % kv_heads != 0) {
    throw std::invalid_argument("attention: heads (" + std::to_string(s.heads) +
                                ") must be a multiple of kv_heads (" + std::to_string(kv_heads) +
                                ")");
  }
  if (s.head_dim_v < 0) {
    throw std::invalid_argument("attention: head_dim_v must be >= 0, got " +
                                std::to_string(s.head_dim_v));
  }
  if (s.family == AttentionFamily::unfused) return unfused_attention_kernel(spec, s);
  if (s.family == AttentionFamily::flash2 && s.q_len <= kDecodeMaxQueryLen && !s.backward) {
    return flash2_decode_kernel(spec, s, spec.efficiency.flash2_decode);
  }
  return fused_attention_kernel(spec, s);
}

int64_t decode_kv_splits(const GpuSpec& spec, int64_t heads_total, int64_t kv_len) {
  const int64_t sms = spec.sm_count;
  if (heads_total < 1 || sms < 1 || 5 * heads_total >= 4 * sms) return 1;
  const int64_t most = std::max<int64_t>(1, std::min(sms, ceil_div(kv_len, kDecodeMinKeysPerSplit)));
  auto efficiency = [&](int64_t splits) {
    const double waves = static_cast<double>(heads_total * splits) / static_cast<double>(sms);
    return waves / std::ceil(waves);
  };
  double best = 0.0;
  for (int64_t n = 1; n <= most; ++n) best = std::max(best, efficiency(n));
  for (int64_t n = 1; n <= most; ++n) {
    if (efficiency(n) >= 0.85 * best) return n;
  }
  return most;
}

namespace {

// SM cycles per element an eager log_softmax forward saves on softmax's
// kernel (MemoryOpShape::log_softmax). Its last pass writes x - max -
// log(sum), two adds, where softmax divides by the sum (IEEE fp32 division:
// MUFU.RCP, Newton steps and the FCHK guard, about 8 issue slots) and, in the
// CTA-per-row kernels, first recomputes exp(x - max) (an add and CUDA's
// accurate expf: range reduction, MUFU.EX2 and scaling, about 8 slots); the
// warp kernel keeps the exponentials of its sum pass. An SM issues 4 warp
// instructions, 128 lanes, per cycle. Counted, not fitted (each count
// 6-12 slots: a bound of about +-50% on these savings); on the H100's grid
// (kernel_grid, 2026-11-26) the measured differences are 0.04-0.07 (warp)
// and 0.10-0.15 (CTA per row, bf16) cycles per element.
constexpr double kLaneSlotsPerCycle = 128.0;
constexpr double kLogSoftmaxSavedWarp = (8.0 - 2.0) / kLaneSlotsPerCycle;
constexpr double kLogSoftmaxSavedBlock = (1.0 + 8.0 + 8.0 - 2.0) / kLaneSlotsPerCycle;

}  // namespace

EagerSoftmaxKernel eager_softmax_kernel(int64_t cols, Dtype dtype) {
  const double row_bytes = static_cast<double>(cols) * dtype_bytes(dtype);
  if (cols <= 2048 && row_bytes <= 8192.0) return EagerSoftmaxKernel::warp_per_row;
  if (row_bytes <= 16384.0) return EagerSoftmaxKernel::block_per_row;
  // Less a few hundred bytes of the block reductions' scratch.
  if (row_bytes <= 48.0 * 1024 - 512) return EagerSoftmaxKernel::smem_per_row;
  return EagerSoftmaxKernel::multipass;
}

KernelDesc memory_kernel(const GpuSpec& spec, const MemoryOpShape& s) {
  if (s.elements < 0 || s.rows < 0 || s.cols < 0 || s.inputs < 0 || s.flops_per_element < 0 ||
      s.bytes_per_element < 0 || s.transcendentals_per_element < 0 || s.reduction_rows < 0 ||
      s.cycles_per_row < 0 || s.elements_per_cta < 0 || s.threads_per_cta < 0 || s.max_ctas < 0) {
    throw std::invalid_argument("memory op: sizes must be >= 0");
  }
  KernelDesc k;
  k.unit = ExecUnit::memory;
  k.dtype = s.dtype;
  k.efficiency = spec.efficiency.vector;  // for its arithmetic; HBM uses efficiency.hbm
  double elements = 0, bytes = 0, flops = 0, sfu = 0, latency_cycles = 0;
  std::string what;
  switch (s.kind) {
    case MemoryOpKind::elementwise:
      elements = static_cast<double>(s.elements);
      bytes = s.bytes_per_element > 0.0 ? s.bytes_per_element * elements
                                        : (s.inputs + 1.0) * elements * dtype_bytes(s.dtype);
      flops = s.flops_per_element * elements;
      sfu = s.transcendentals_per_element * elements;
      latency_cycles = static_cast<double>(s.reduction_rows) * s.cycles_per_row;
      if (s.multipass_row_loads) {
        bytes += (spec.efficiency.softmax.multipass_reads - 1.0) * elements * dtype_bytes(s.dtype);
      }
      if (!(s.bandwidth_efficiency > 0.0 && s.bandwidth_efficiency <= 1.0)) {
        throw std::invalid_argument("memory op: bandwidth efficiency outside (0, 1]");
      }
      k.bandwidth_efficiency = s.bandwidth_efficiency;
      what = "elementwise";
      break;
    case MemoryOpKind::layer_norm:
    case MemoryOpKind::rms_norm:
    case MemoryOpKind::softmax:
      elements = static_cast<double>(s.rows) * static_cast<double>(s.cols);
      bytes = 2.0 * elements * dtype_bytes(s.dtype);
      flops = s.flops_per_element * elements;
      k.bandwidth_efficiency = spec.efficiency.row_reduction;
      if (s.kind == MemoryOpKind::softmax) {
        // PyTorch's eager kernel for this row length: its SM cycles, spread
        // over the grid's SMs, and its extra loads of long rows.
        // log_softmax: the same kernels, less the epilogue's division (and
        // recomputed exponential) per element; none below zero (a profile
        // with no softmax cycles charges both their bytes alone). The
        // three-pass kernel is charged its bytes, which the op leaves alike.
        const EagerSoftmaxParams& p = spec.efficiency.softmax;
        auto cycles = [&](double per_element, double saved) {
          return std::max(0.0, per_element - (s.log_softmax ? saved : 0.0)) * elements;
        };
        switch (eager_softmax_kernel(s.cols, s.dtype)) {
          case EagerSoftmaxKernel::warp_per_row:
            latency_cycles = cycles(p.warp_cycles_per_element, kLogSoftmaxSavedWarp);
            break;
          case EagerSoftmaxKernel::block_per_row:
            latency_cycles = cycles(p.block_cycles_per_element, kLogSoftmaxSavedBlock);
            break;
          case EagerSoftmaxKernel::smem_per_row:
            // The row read once into shared memory and written once: its
            // bytes (no profile measured its SM cycles; on an H100, 0.5 per
            // element against the bytes' 0.4).
            break;
          case EagerSoftmaxKernel::multipass:
            bytes = (p.multipass_reads + 1.0) * elements * dtype_bytes(s.dtype);
            break;
        }
      }
      what = s.kind == MemoryOpKind::softmax    ? (s.log_softmax ? "log_softmax" : "softmax")
             : s.kind == MemoryOpKind::rms_norm ? "rms_norm"
                                                : "layer_norm";
      break;
    case MemoryOpKind::memcpy:
      // `elements` counts bytes; a copy reads and writes each once, no math.
      bytes = 2.0 * static_cast<double>(s.elements);
      what = "memcpy";
      break;
  }
  // Tiles: the SMs the grid covers, each a tile of the bytes and work. A
  // launch whose CTAs are smaller than 64 KiB of bytes (elements_per_cta)
  // spreads a small tensor over one SM per CTA, up to every SM.
  int64_t grid = static_cast<int64_t>(std::ceil(bytes / kMemoryBytesPerTile));
  if (s.kind == MemoryOpKind::elementwise && s.elements_per_cta > 0) {
    grid = std::max(grid, ceil_div(std::max<int64_t>(1, s.elements), s.elements_per_cta));
  }
  k.tiles = std::max<int64_t>(1, std::min<int64_t>(grid, spec.sm_count));
  if (s.kind == MemoryOpKind::softmax && s.rows > 0 &&
      eager_softmax_kernel(s.cols, s.dtype) != EagerSoftmaxKernel::warp_per_row) {
    // PyTorch's softmax for rows past a warp's launches one CTA per row
    // (cunn_SoftMaxForward's grid is the rows), so a few long rows (a
    // decode step's sampler: 1-64 rows of 128256 logits) run on as many SMs,
    // each at what one SM pulls (hbm.h's single-SM cap): 8 x 128256 fp32
    // took 34 us on an H100 where all SMs would take 5 (calibration/
    // measurements/h100-x4/serving_step_l3_8b_2026-11-27).
    k.tiles = std::min<int64_t>(k.tiles, s.rows);
    // Its block (SoftMax_getBlockSize): a thread per 16-byte load of the row,
    // at most 1024, a whole number of warps; the rows each SM holds, their
    // warps against the SM's 64, set the share of its HBM reach they pull
    // (KernelDesc::sm_pull_fraction): 1024 threads over 128256 logits, half.
    const int64_t per_load = std::max<int64_t>(1, static_cast<int64_t>(16.0 / dtype_bytes(s.dtype)));
    const int64_t threads = std::clamp<int64_t>(ceil_div(std::max<int64_t>(1, s.cols / per_load), 32) * 32, 32, 1024);
    k.sm_pull_fraction = warp_share(warps_per_sm(s.rows, k.tiles, threads));
  }
  if (s.kind == MemoryOpKind::elementwise && s.max_ctas > 0) {
    k.tiles = std::min<int64_t>(k.tiles, s.max_ctas);
    if (s.threads_per_cta > 0) {
      // Each SM holds its share of the CTAs; their warps, not the SM's 64,
      // keep loads in flight: PyTorch's reduce_kernel CTA (512 threads, 16
      // warps) alone on an SM pulls a quarter of a full SM's reach. The mean
      // of the eager RMSNorm over hidden 4096 (16 rows, 256 KiB a CTA) took
      // 10.1 us on an H100 (calibration/measurements/h100-x4/
      // serving_graph_parts_2026-11-27), where a full SM's reach gives 4.7.
      k.sm_pull_fraction = warp_share(warps_per_sm(s.max_ctas, k.tiles, s.threads_per_cta));
    }
  }
  if (s.kind == MemoryOpKind::elementwise && s.elements_per_cta > 0 && s.threads_per_cta > 0) {
    // Below kWarpsToHideIssueLatency warps on each SM the SM work is
    // latency-bound, stretched by the missing warps.
    const int64_t ctas = ceil_div(std::max<int64_t>(1, s.elements), s.elements_per_cta);
    const int64_t warps = warps_per_sm(ctas, k.tiles, s.threads_per_cta);
    flops *= std::max(1.0, static_cast<double>(kWarpsToHideIssueLatency) / static_cast<double>(warps));
  }
  k.flops_per_tile = flops / static_cast<double>(k.tiles);
  k.bytes_per_tile = bytes / static_cast<double>(k.tiles);
  k.l2_resident = s.inputs_in_l2 && l2_holds(spec, bytes);
  // Grid-stride: each tile takes an even share of the rows.
  k.sfu_ops_per_tile = sfu / static_cast<double>(k.tiles);
  k.latency_cycles_per_tile = latency_cycles / static_cast<double>(k.tiles);
  k.name = what + " " + std::to_string(static_cast<int64_t>(bytes)) + " B";
  return k;
}

sim::Duration overlapped_time(sim::Duration compute, sim::Duration memory, double knee) {
  if (!(knee > 0.0)) return sim::max(compute, memory);
  if (!(knee >= 1.0)) throw std::invalid_argument("a tile's overlap knee must be >= 1 (or 0: max)");
  const double c = compute.seconds(), m = memory.seconds();
  const double longer = std::max(c, m);
  if (!(longer > 0.0)) return sim::max(compute, memory);
  // Scaled by the longer bound so that the powers stay in range.
  const double r = std::min(c, m) / longer;
  return sim::Duration::from_seconds(longer * std::pow(1.0 + std::pow(r, knee), 1.0 / knee));
}

TileCost tile_cost(const GpuSpec& spec, const KernelDesc& k, int active_sms) {
  return tile_cost(spec, k, active_sms, 1.0);
}

TileCost tile_cost(const GpuSpec& spec, const KernelDesc& k, int active_sms, double hbm_fraction) {
  TileCost c;
  c.overlap_knee = k.overlap_knee;
  if (k.flops_per_tile > 0.0) {
    const sim::FlopRate peak = unit_peak(spec, k);
    if (!(peak.flops_per_s() > 0.0) || !(k.efficiency > 0.0)) {
      throw std::invalid_argument("kernel '" + k.name + "' has no arithmetic rate on " + spec.name +
                                  " (peak or efficiency is 0)");
    }
    c.compute = sim::compute_time(k.flops_per_tile, peak.scaled(k.efficiency / spec.sm_count));
  }
  if (k.sfu_ops_per_tile > 0.0 || k.latency_cycles_per_tile > 0.0) {
    const double hz = spec.sm_clock_ghz * 1e9;
    if (!(hz > 0.0) || !(spec.sfu_per_clock_per_sm > 0.0)) {
      throw std::invalid_argument("kernel '" + k.name + "' needs " + spec.name +
                                  "'s SM clock and special-function rate (0)");
    }
    // The SFUs issue beside the fp32 lanes: the longer of the two, then the
    // rows' unhidden cycles on top.
    const sim::Duration sfu = sim::compute_time(
        k.sfu_ops_per_tile, sim::FlopRate::flops_per_s(spec.sfu_per_clock_per_sm * hz));
    c.compute = sim::max(c.compute, sfu) +
                sim::Duration::from_seconds(k.latency_cycles_per_tile / hz);
  }
  if (k.latency_floor_cycles_per_tile > 0.0) {
    if (!(spec.sm_clock_ghz > 0.0)) {
      throw std::invalid_argument("kernel '" + k.name + "' needs " + spec.name + "'s SM clock (0)");
    }
    c.floor = sim::Duration::from_seconds(k.latency_floor_cycles_per_tile / (spec.sm_clock_ghz * 1e9));
  }
  if (k.bytes_per_tile > 0.0) {
    // At most the HBM peak: a kernel may pass the streaming rate
    // (efficiency.hbm) but not the pins' rate.
    if (!(k.bandwidth_efficiency > 0.0 &&
          k.bandwidth_efficiency * spec.efficiency.hbm <= 1.0 + 1e-9)) {
      throw std::invalid_argument("kernel '" + k.name +
                                  "' has a bandwidth efficiency outside (0, HBM peak]");
    }
    if (!(k.sm_pull_fraction > 0.0 && k.sm_pull_fraction <= 1.0)) {
      throw std::invalid_argument("kernel '" + k.name + "' has an SM pull fraction outside (0, 1]");
    }
    sim::Bandwidth per_sm;
    if (k.l2_resident) {
      // From L2 (l2_cache.h): no HBM stack to share with a collective.
      per_sm = l2_bandwidth_per_sm(spec, active_sms, k.sm_pull_fraction);
    } else {
      // A memory kernel filling its SMs draws the stack along the measured
      // saturation curve (memory_spread.h); small grids and tiles of one CTA
      // per SM, the plain share (hbm.h).
      per_sm = fills_its_sms(k) ? spread_bandwidth_per_sm(spec, active_sms, hbm_fraction)
                                : hbm_bandwidth_per_sm(spec, active_sms, hbm_fraction);
      if (k.sm_pull_fraction < 1.0) {
        const sim::Bandwidth reach = single_sm_hbm_reach(spec).scaled(k.sm_pull_fraction);
        if (reach.bytes_per_s() < per_sm.bytes_per_s()) per_sm = reach;
      }
    }
    c.memory = sim::transfer_time(k.bytes_per_tile, per_sm.scaled(k.bandwidth_efficiency));
  }
  return c;
}

sim::Duration wave_time(const GpuSpec& spec, const KernelDesc& k, int active_sms) {
  return tile_cost(spec, k, active_sms).time() + spec.efficiency.tile_overhead +
         k.extra_wave_overhead;
}

sim::Duration wave_time(const GpuSpec& spec, const KernelDesc& k, int active_sms,
                        double compute_stretch) {
  return wave_time(spec, k, active_sms, compute_stretch, 1.0);
}

sim::Duration wave_time(const GpuSpec& spec, const KernelDesc& k, int active_sms,
                        double compute_stretch, double hbm_fraction) {
  if (compute_stretch == 1.0 && hbm_fraction == 1.0) return wave_time(spec, k, active_sms);
  return tile_cost(spec, k, active_sms, hbm_fraction).time_at(compute_stretch) +
         spec.efficiency.tile_overhead +
         k.extra_wave_overhead;
}

int wave_width(const GpuSpec& spec, const KernelDesc& k, int sms_available) {
  if (sms_available < 1) throw std::invalid_argument("a kernel needs at least one SM");
  int width = std::min(sms_available, spec.sm_count);
  if (k.max_sms > 0) width = std::min(width, k.max_sms);
  return width;
}

int64_t wave_count(const GpuSpec& spec, const KernelDesc& k, int sms_available) {
  return ceil_div(k.tiles, wave_width(spec, k, sms_available));
}

sim::Duration isolated_time(const GpuSpec& spec, const KernelDesc& k, int sms_available) {
  if (k.tiles < 0) throw std::invalid_argument("kernel '" + k.name + "' has a negative grid");
  const int width = wave_width(spec, k, sms_available);
  const int64_t full_waves = k.tiles / width;
  const int last = static_cast<int>(k.tiles % width);
  sim::Duration t = spec.kernel_launch_latency + k.setup;
  if (full_waves > 0) t += wave_time(spec, k, width) * full_waves;
  // The last partial wave costs a full tile; fewer SMs share HBM in it.
  if (last > 0) t += wave_time(spec, k, last);
  return t;
}

}  // namespace gcsim::models::gpu
