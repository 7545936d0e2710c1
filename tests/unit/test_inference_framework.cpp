// workload.framework for serving (serving_framework.h): the launches a step
// issues under vllm and pytorch-eager, counted by hand from the layer code;
// a host that issues each kernel at a cost bounds an eager step outside a
// CUDA graph and not inside one.
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "test_inference_fixtures.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/inference/iteration_cost.h"
#include "workloads/inference/serving_framework.h"
#include "workloads/training/framework_profile.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;
using workloads::training::KernelClass;

namespace {

// serving_step_bench.py's model: Llama-2-70B's layer, 8 layers, at TP4.
IterationCostConfig bench_tp4(ServingFramework f) {
  IterationCostConfig c;
  c.model = test::llama2_70b();
  c.model.layers = 8;
  c.gpu = test::h100();
  c.parallel = {4, 1, 1};
  c.ranks = {0, 1, 2, 3};
  c.framework = f;
  c.cuda_graphs = false;
  return c;
}

// The H100 as gcsim runs it (its preset and calibration profile), its
// kernels replayed as CUDA-graph nodes.
models::gpu::GpuSpec calibrated_h100_graph() {
  auto spec = test::h100();
  auto nowhere = test::nowhere_reader();
  cli::apply_calibration_profile("h100-sxm", spec, nowhere);
  return models::gpu::graph_replay_spec(spec);
}

// A kernel's duration as a profiler records it inside a replayed graph: its
// time there less the gap before the next node (what a step's classes
// count), in us.
double graph_profiled_us(const models::gpu::GpuSpec& graph, const models::gpu::KernelDesc& k) {
  const auto gap = models::gpu::launch_gap(graph.kernel_launch_latency, graph.launch_inside());
  return (models::gpu::isolated_time(graph, k, graph.sm_count) - gap).seconds() * 1e6;
}

StepShape decode(int64_t batch, int64_t kv_len) {
  StepShape s;
  s.tokens = batch;
  s.decodes = batch;
  s.decode_kv_tokens = batch * kv_len;
  s.sampled = batch;
  return s;
}

// One prefill of 512 tokens: serving_step_bench.py's shortest TP4 prefill.
StepShape prefill_512() {
  StepShape p;
  p.tokens = 512;
  p.prefills = {{512, 512}};
  p.sampled = 1;
  return p;
}

}  // namespace

TEST_CASE("serving launches per step: vllm's fused kernels, eager PyTorch's passes",
          "[inference][framework]") {
  test::NoComm comm;
  // vllm, per layer: norm, QKV, rotary, KV write, attention, output, all-reduce,
  // norm, gate+up, SiLU-and-mul, down, all-reduce = 12; embedding + its
  // all-reduce 2; head: norm, logits GEMM, all-gather, softmax 4: 2 + 96 + 4.
  IterationCost vllm(bench_tp4(ServingFramework::vllm), comm);
  CHECK(vllm.cost(decode(8, 1024)).classes.kernels == 102);
  // pytorch-eager, per layer: RMSNorm 8, QKV 1, rotary 2 x 5, K and V copies 2,
  // attention 1, output 1, all-reduce 1, residual add 1, RMSNorm 8, gate+up 1,
  // SiLU and product 2, down 1, all-reduce 1, residual add 1 = 39; embedding:
  // 5 id-mask kernels, the gather, the row mask, the all-reduce = 8; cos/sin
  // gathers 2; head: RMSNorm 8, GEMM, all-gather, permute, fp32 cast, softmax,
  // argmax = 14: 8 + 2 + 312 + 14.
  IterationCost eager(bench_tp4(ServingFramework::pytorch_eager), comm);
  const StepCost e = eager.cost(decode(8, 1024));
  CHECK(e.classes.kernels == 336);
  // The same GEMMs and attention kernels under both.
  const StepCost v = vllm.cost(decode(8, 1024));
  CHECK(e.classes.of(KernelClass::gemm) == Approx(v.classes.of(KernelClass::gemm)));
  CHECK(e.classes.of(KernelClass::attention) == Approx(v.classes.of(KernelClass::attention)));
  // The unfused passes cost more than the fused kernels they replace.
  CHECK(e.classes.of(KernelClass::elementwise) + e.classes.of(KernelClass::norm) >
        2 * (v.classes.of(KernelClass::elementwise) + v.classes.of(KernelClass::norm)));
  // No host cost: the step is its launches back to back.
  CHECK(e.host_wait == sim::Duration::zero());
  CHECK(e.total == e.compute + e.communication);
}

TEST_CASE("an eager step outside a CUDA graph waits for its host's issue", "[inference][framework]") {
  test::NoComm comm;
  // 200 us per launch is longer than any kernel of a batch-1 decode here (the
  // largest, gate+up, reads 235 MB of weights: ~80 us), so every kernel starts
  // at its own issue: the step ends at 336 x 200 us plus the last kernel.
  IterationCostConfig c = bench_tp4(ServingFramework::pytorch_eager);
  c.host_per_kernel = sim::us(int64_t{200});
  IterationCost host_bound(c, comm);
  const StepCost s = host_bound.cost(decode(1, 512));
  const double issue_all = 336 * 200e-6;
  CHECK(s.total.seconds() > issue_all);
  CHECK(s.total.seconds() < issue_all + 200e-6);
  CHECK(s.host_wait == s.total - s.compute - s.communication);
  CHECK(s.host_wait.seconds() > issue_all - s.compute.seconds() - 1e-9);
  CHECK_FALSE(s.graph);

  // The same step replayed from a CUDA graph (padded to capture size 1):
  // no host issue, the kernels back to back, each launched as a graph node:
  // the 318 kernels (336 launches less 17 all-reduces and the logits'
  // all-gather, collectives timed by the fabric) each start the preset's
  // 2 - 0.7 = 1.3 us sooner (gpu_spec.h graph_kernel_launch_latency).
  c.cuda_graphs = true;
  IterationCost graphed(c, comm);
  const StepCost g = graphed.cost(decode(1, 512));
  CHECK(g.graph);
  CHECK(g.host_wait == sim::Duration::zero());
  CHECK(g.total == g.compute + g.communication);
  const sim::Duration saved = c.gpu.kernel_launch_latency - c.gpu.graph_launch_latency();
  CHECK(saved == sim::ns(int64_t{1300}));
  // and each of the 18 NCCL nodes costs the graph graph_collective_overhead
  // (5.2 us on an H100) beyond the collective.
  const sim::Duration node = c.gpu.graph_collective_overhead;
  CHECK(node == sim::ns(int64_t{5200}));
  CHECK(g.total == s.compute + s.communication - saved * 318 + node * 18);
  CHECK(g.classes.kernels == 336);
}

TEST_CASE("a GPU without a measured graph launch latency replays at its stream latency",
          "[inference][framework]") {
  test::NoComm comm;
  IterationCostConfig c = bench_tp4(ServingFramework::vllm);
  const StepCost stream = IterationCost(c, comm).cost(decode(8, 1024));
  c.cuda_graphs = true;
  const StepCost graph = IterationCost(c, comm).cost(decode(8, 1024));
  c.gpu.graph_kernel_launch_latency.reset();
  const StepCost unmeasured = IterationCost(c, comm).cost(decode(8, 1024));
  CHECK(graph.graph);
  // vLLM's all-reduces in its graphs are its custom all-reduce kernel; the
  // logits' all-gather is NCCL's: one node at graph_collective_overhead.
  const sim::Duration node = c.gpu.graph_collective_overhead;
  CHECK(node > sim::Duration::zero());
  CHECK(unmeasured.total == stream.total + node);
  // vLLM's 102 launches less 16 all-reduces, the embedding's all-reduce and
  // the all-gather: 84 kernels, 1.3 us sooner each.
  CHECK(stream.total - graph.total == sim::ns(int64_t{1300}) * 84 - node);
}

TEST_CASE("a prefill's attention class is its kernels' profiler durations", "[inference][framework]") {
  // cuDNN's prefill attention is fitted to torch.profiler's kernel durations
  // (start to end, calibration/measurements/h100-sxm/serving_kernels_2026-11-27);
  // its time in the step carries the GPU's launch latency besides (the
  // preset's 2 us), which the class, a profiler's table, does not count.
  // TP4 prefill of 512 tokens: 8 layers, one attention kernel each, so the
  // class is 8 kernels' time less 8 x 2 us; the step is unchanged (it still
  // waits for each launch). Classes of kernels fitted to back-to-back
  // spacing (GEMMs, elementwise passes) count their time less the gap
  // before the next kernel (the next test).
  test::NoComm comm;
  const StepShape p = prefill_512();
  IterationCostConfig c = bench_tp4(ServingFramework::pytorch_eager);
  const StepCost s = IterationCost(c, comm).cost(p);
  models::gpu::AttentionShape a;
  a.batch = 1;
  a.heads = 16;
  a.kv_heads = 2;
  a.q_len = a.kv_len = 512;
  a.head_dim = 128;
  a.causal = true;
  a.dtype = c.kv_dtype;
  a.family = models::gpu::AttentionFamily::cudnn;
  const double kernel =
      models::gpu::isolated_time(c.gpu, models::gpu::attention_kernel(c.gpu, a), c.gpu.sm_count).seconds();
  CHECK(s.classes.of(KernelClass::attention) == Approx(8 * (kernel - 2e-6)).epsilon(1e-9));
  CHECK(s.total == s.compute + s.communication);
}

TEST_CASE("an eager prefill on cuDNN clears a buffer before each attention kernel", "[inference][framework]") {
  // serving_step_bench.py's TP4 prefill of 512 tokens on 4 H100s: 344
  // kernels a step, 8 of them "Memset (Device)", one per layer's cuDNN
  // attention call (calibration/measurements/h100-x4/serving_step_2026-11-26).
  test::NoComm comm;
  const StepShape p = prefill_512();
  IterationCostConfig c = bench_tp4(ServingFramework::pytorch_eager);
  CHECK(IterationCost(c, comm).cost(p).classes.kernels == 336 + 8);
  // FlashAttention-2 (no memset) and vLLM's kernels: none.
  c.attention_kernel = models::gpu::AttentionFamily::flash2;
  CHECK(IterationCost(c, comm).cost(p).classes.kernels == 336);
  CHECK(IterationCost(bench_tp4(ServingFramework::vllm), comm).cost(p).classes.kernels == 102);
  // cuDNN issues the memset inside the attention op: a host at 200 us per
  // launch (longer than any kernel here: gate+up, 120 GFLOP, ~0.15 ms)
  // issues 336 launches, and the step ends after the last one's kernel.
  c.attention_kernel.reset();
  c.host_per_kernel = sim::us(int64_t{200});
  const StepCost h = IterationCost(c, comm).cost(p);
  CHECK(h.classes.kernels == 344);
  CHECK(h.total.seconds() > 336 * 200e-6);
  CHECK(h.total.seconds() < 337 * 200e-6);
}

TEST_CASE("eager RMSNorm in bf16: eight passes and their bytes", "[inference][framework]") {
  // fp32 cast 2+4, pow 4+4, mean 4, add eps and rsqrt 8 per row each, x *
  // rsqrt 4+4, cast back 4+2, weight * x 2+2: 36 B per element + 16 per row.
  const auto p = EagerServingPasses::rms_norm(3, 8192, 132);
  REQUIRE(p.size() == 8);
  double bytes = 0;
  int generic = 0;
  for (const auto& x : p) {
    bytes += static_cast<double>(x.elements) * x.bytes_per_element;
    generic += x.access == workloads::training::PassAccess::generic ? 1 : 0;
  }
  CHECK(bytes == Approx(3 * 8192 * 36.0 + 3 * 16.0));
  CHECK(generic == 3);  // the bf16 -> fp32 cast and the two broadcasts
  CHECK(parse_serving_framework("pytorch-eager") == ServingFramework::pytorch_eager);
  CHECK_FALSE(parse_serving_framework("megatron").has_value());
}

TEST_CASE("a kernel's class is its time less the gap before the next kernel", "[inference][framework]") {
  // gpu_spec.h: of the launch latency (fitted to back-to-back spacing), the
  // profiler's kernel duration holds 0.946 us; the gap is the rest. The
  // H100 profile (before its 2026-11-28 refit): 2.397 us on a stream, 1.106
  // in a graph, so gaps of 1.451
  // and 0.160 us (the profiler's mean gaps on the six decode steps of
  // calibration/measurements/h100-sxm/serving_kernels_2026-11-27: 1.451 and
  // 0.160 us). A preset below 0.946 us has no gap.
  const sim::Duration inside = models::gpu::kLaunchInsideKernel;
  CHECK(models::gpu::launch_gap(sim::ns(int64_t{2397}), inside) == sim::ns(int64_t{1451}));
  CHECK(models::gpu::launch_gap(sim::ns(int64_t{1106}), inside) == sim::ns(int64_t{160}));
  CHECK(models::gpu::launch_gap(sim::ns(int64_t{700}), inside) == sim::Duration::zero());
  // A profiler's duration does not depend on how the kernel was launched:
  // on the calibrated H100 every kernel class but communication is the same
  // on a stream and replayed from a graph, while the step is shorter in
  // the graph by (2.585 - 1.294) us a kernel (318 kernels: 336 launches
  // less 17 all-reduces and the all-gather; no collective here).
  test::NoComm comm;
  IterationCostConfig c = bench_tp4(ServingFramework::pytorch_eager);
  auto nowhere = test::nowhere_reader();
  cli::apply_calibration_profile("h100-sxm", c.gpu, nowhere);
  REQUIRE(c.gpu.kernel_launch_latency == sim::ns(int64_t{2585}));
  REQUIRE(c.gpu.graph_launch_latency() == sim::ns(int64_t{1294}));
  const StepCost s = IterationCost(c, comm).cost(decode(8, 2048));
  c.cuda_graphs = true;
  const StepCost g = IterationCost(c, comm).cost(decode(8, 2048));
  REQUIRE(g.graph);
  for (KernelClass k : {KernelClass::gemm, KernelClass::attention, KernelClass::elementwise, KernelClass::norm}) {
    INFO(static_cast<int>(k));
    CHECK(g.classes.of(k) == Approx(s.classes.of(k)).epsilon(1e-9));
  }
  CHECK(s.compute - g.compute == sim::ns(int64_t{2585 - 1294}) * 318);
  // The classes: every kernel's time less its gap (1.451 us on the stream).
  double classes = 0;
  for (KernelClass k : {KernelClass::gemm, KernelClass::attention, KernelClass::elementwise, KernelClass::norm}) {
    classes += s.classes.of(k);
  }
  CHECK(classes == Approx(s.compute.seconds() - 318 * 1.451e-6).epsilon(1e-9));
  // The calibrated H200 measures its own split (launch_inside_kernel 1221
  // ns: its 2564 ns stream latency less its decode steps' mean gap, 1.343 us,
  // calibration/measurements/h200-x1/calibration_set_2026-11-28): the
  // classes leave out that gap, not the H100's.
  IterationCostConfig h = bench_tp4(ServingFramework::pytorch_eager);
  h.gpu = test::calibrated_gpu_preset("h200-sxm");
  REQUIRE(h.gpu.kernel_launch_latency == sim::ns(int64_t{2564}));
  REQUIRE(h.gpu.launch_inside() == sim::ns(int64_t{1221}));
  const StepCost t = IterationCost(h, comm).cost(decode(8, 2048));
  double h_classes = 0;
  for (KernelClass k : {KernelClass::gemm, KernelClass::attention, KernelClass::elementwise, KernelClass::norm}) {
    h_classes += t.classes.of(k);
  }
  CHECK(h_classes == Approx(t.compute.seconds() - 318 * 1.343e-6).epsilon(1e-9));
}

TEST_CASE("an eager pass of a small tensor: its launch's CTAs, latency-bound", "[inference][framework]") {
  // PyTorch launches 128 threads of 4 elements a CTA. 8192 elements (one
  // decode token's hidden state through RMSNorm's fp32 cast, a generic
  // pass): 16 CTAs on 16 SMs (64 KiB tiles made it one SM), each SM with one
  // CTA's 4 warps of the 16 that hide the ALU latency: SM work 4x, 512
  // elements x 161.2 lane operations x 4 a tile. 262144 elements (32
  // tokens): 512 CTAs, 4 on each of 132 SMs, 16 warps: no stretch.
  const auto spec = test::h100();
  const workloads::training::FrameworkProfile eager(workloads::training::Framework::pytorch_eager,
                                                    eager_serving_traits());
  const auto one = EagerServingPasses::rms_norm(1, 8192, 132);
  const auto k1 = models::gpu::memory_kernel(spec, eager.shape(one[0]));
  CHECK(k1.tiles == 16);
  CHECK(k1.flops_per_tile == Approx(512 * 161.2 * 4));
  CHECK(k1.bytes_per_tile == Approx(8192 * 6.0 / 16));
  const auto k32 = models::gpu::memory_kernel(spec, eager.shape(EagerServingPasses::rms_norm(32, 8192, 132)[0]));
  CHECK(k32.tiles == 132);
  CHECK(k32.flops_per_tile == Approx(262144 * 161.2 / 132));
  // 65536 elements on 128 SMs, one CTA each: 4x again.
  const auto k8 = models::gpu::memory_kernel(spec, eager.shape(EagerServingPasses::rms_norm(8, 8192, 132)[0]));
  CHECK(k8.tiles == 128);
  CHECK(k8.flops_per_tile == Approx(512 * 161.2 * 4));
  // One row: the weight product and SwiGLU run vectorized (the weight's own
  // shape, contiguous halves); from two rows on, generic.
  CHECK(one[7].access == workloads::training::PassAccess::vectorized);
  CHECK(EagerServingPasses::rms_norm(2, 8192, 132)[7].access == workloads::training::PassAccess::generic);
  CHECK(EagerServingPasses::swiglu(1, 7168)[0].access == workloads::training::PassAccess::vectorized);
  CHECK(EagerServingPasses::swiglu(2, 7168)[1].access == workloads::training::PassAccess::generic);
  // Other frameworks' passes keep the 64 KiB tiles (torch.compile's
  // inductor kernels, Megatron's fused ones): one tile for 8192 elements.
  const workloads::training::FrameworkProfile compiled(workloads::training::Framework::torch_compile);
  CHECK(models::gpu::memory_kernel(spec, compiled.shape(one[0])).tiles == 1);
  // Bad input: a negative CTA size.
  models::gpu::MemoryOpShape bad = eager.shape(one[0]);
  bad.threads_per_cta = -1;
  CHECK_THROWS_AS(models::gpu::memory_kernel(spec, bad), std::invalid_argument);
  bad.threads_per_cta = 128;
  bad.elements_per_cta = -512;
  CHECK_THROWS_AS(models::gpu::memory_kernel(spec, bad), std::invalid_argument);
}

TEST_CASE("eager serving ops against one H100's profiler durations", "[inference][framework]") {
  // calibration/measurements/h100-sxm/serving_kernels_2026-11-27 `ops`: the
  // TP4 decode step's RMSNorm (8 kernels), q's rotary (5), residual add and
  // SiLU * up (2) at batch 1, 32 and 256, each kernel's torch.profiler
  // duration. gcsim's: the pass's time replayed in a graph less the
  // graph's gap (what the step's classes count). Held out: nothing in the
  // model was fitted to these (kWarpsToHideIssueLatency is counted, the
  // launch share kLaunchInsideKernel comes from the same run's gaps).
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) +
                   "/calibration/measurements/h100-sxm/serving_kernels_2026-11-27/serving_kernels.json");
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  const auto graph = calibrated_h100_graph();
  const workloads::training::FrameworkProfile eager(workloads::training::Framework::pytorch_eager,
                                                    eager_serving_traits());
  std::map<std::string, double> err;
  double sum_sim = 0, sum_meas = 0;
  int ops = 0;
  for (const auto& o : run["ops"]) {
    const std::string op = o["op"].get<std::string>();
    const int64_t t = o["batch"].get<int64_t>();
    EagerServingPasses::Passes ps;
    if (op == "rms_norm") ps = EagerServingPasses::rms_norm(t, 8192, 132);
    if (op == "rotary_q") {
      const auto r = EagerServingPasses::rope(t * 16 * 128, t * 2 * 128);
      ps.assign(r.begin(), r.begin() + 5);  // q's five; k's five follow
    }
    if (op == "residual_add") ps = EagerServingPasses::residual_add(t * 8192);
    if (op == "silu_mul") ps = EagerServingPasses::swiglu(t, 7168);
    if (ps.empty()) continue;  // the QKV GEMM
    const auto& ks = o["kernels"];
    REQUIRE(ks.size() == ps.size());
    double sim_us = 0, meas_us = 0;
    for (size_t i = 0; i < ps.size(); ++i) {
      const auto k = models::gpu::memory_kernel(graph, eager.shape(ps[i]));
      sim_us += graph_profiled_us(graph, k);
      meas_us += ks[i]["dur_us"].get<double>();
    }
    INFO(op << " batch " << t << ": gcsim " << sim_us << " us, measured " << meas_us);
    const double e = (sim_us - meas_us) / meas_us;
    err[op + " " + std::to_string(t)] = e;
    sum_sim += sim_us;
    sum_meas += meas_us;
    ++ops;
    // RMSNorm, rotary, SiLU: -6 .. +27% (a vectorized pass of a few KiB
    // takes 1.1 - 1.3 us against gcsim's 1.5; at batch 256 the activations,
    // read back from L2 at 5.6 - 9.5 TB/s, stream at HBM's 2.9 in gcsim).
    // The residual add alone is one such vectorized pass: +38 .. +102%.
    if (op == "residual_add") {
      CHECK(e >= 0.0);
      CHECK(e <= 1.1);
    } else {
      CHECK(std::abs(e) <= 0.30);
    }
  }
  CHECK(ops == 12);
  // Every op at batch 1 and 32 within 25% but the residual add (+38%, +53%);
  // all 48 kernels +16% (123.5 us measured): 1.5x and more before (each
  // generic pass of a decode token's hidden state put 3.6 us of SM work on
  // one SM). The RMSNorm at batch 1 is +13% since its mean's one CTA pulls
  // what its 16 warps keep in flight (2.46 us against the measured 2.72;
  // it was 1.5, which hid the other passes' +30%).
  CHECK(std::abs(err["rms_norm 1"]) <= 0.25);
  CHECK(std::abs(err["rms_norm 32"]) <= 0.25);
  CHECK(sum_sim / sum_meas > 1.0);
  CHECK(sum_sim / sum_meas < 1.25);
}

TEST_CASE("eager row reductions launch PyTorch's CTAs: the decode step's mean and argmax",
          "[inference][framework]") {
  const auto eager_row_reduce_ctas = [](int64_t rows, int64_t cols, int sms) {
    return workloads::training::eager_row_reduce_grid(rows, cols, sms).ctas;
  };
  // By hand from Reduce.cuh's setReduceConfig (512 threads, loads of 4,
  // 132 SMs x 4 CTAs of 512 threads as the split's target):
  // [32, 4096]: 32 lanes x 16 rows a CTA, 128 values a lane (< 16 x 16 and
  // < 256): the rows share CTAs, 2 of them.
  CHECK(eager_row_reduce_ctas(32, 4096, 132) == 2);
  CHECK(eager_row_reduce_ctas(256, 4096, 132) == 16);
  // [8, 4096]: 64 lanes x 8 rows, 64 values a lane (< 128): one CTA.
  CHECK(eager_row_reduce_ctas(8, 4096, 132) == 1);
  CHECK(eager_row_reduce_ctas(1, 4096, 132) == 1);
  // [32, 8192]: 256 values a lane: the CTA's 16 warps split one row, a CTA
  // a row (16 values a thread left, no CTA split).
  CHECK(eager_row_reduce_ctas(32, 8192, 132) == 32);
  // The argmax over 128256 logits: a CTA a row (251 values a thread).
  CHECK(eager_row_reduce_ctas(8, 128256, 132) == 8);
  CHECK(eager_row_reduce_ctas(1, 128256, 132) == 1);
  // One row of 262144: 512 values a thread, split over max(min(528, 32),
  // 2) = 32 CTAs.
  CHECK(eager_row_reduce_ctas(1, 262144, 132) == 32);
  // Measured (calibration/measurements/h100-x4/serving_step_l3_8b_2026-11-27,
  // rank 0's MeanOps kernel): hidden 4096 takes 9.1-9.4 us from 32 to 512
  // rows (16 rows on each of 2-32 CTAs) and 5.6 us at 8 rows (one CTA); in
  // the CUDA graph (serving_graph_parts_2026-11-27, both hosts' rank 0)
  // 8.9-9.1 and 5.4-5.5 us. Each CTA (512 threads, 16 warps) alone on its
  // SM pulls 16/64 of the profile's single-SM reach (sm_bandwidth_headroom,
  // fitted on other kernels): Little's law, its loads in flight a quarter of
  // a full SM's. Not fitted here; within 12% of both (the two runs' spread
  // is 5%; one SM's full reach gave 4.7 and 3.1 us, -48% and -43%).
  const auto graph = calibrated_h100_graph();
  const workloads::training::FrameworkProfile eager(workloads::training::Framework::pytorch_eager,
                                                    eager_serving_traits());
  const auto profiled_us = [&](const models::gpu::KernelDesc& k) { return graph_profiled_us(graph, k); };
  const auto mean32 = models::gpu::memory_kernel(graph, eager.shape(EagerServingPasses::rms_norm(32, 4096, 132)[2]));
  CHECK(mean32.tiles == 2);
  CHECK(mean32.sm_pull_fraction == Approx(0.25));
  CHECK(profiled_us(mean32) == Approx(9.1).epsilon(0.12));
  const auto mean8 = models::gpu::memory_kernel(graph, eager.shape(EagerServingPasses::rms_norm(8, 4096, 132)[2]));
  CHECK(mean8.tiles == 1);
  CHECK(profiled_us(mean8) == Approx(5.5).epsilon(0.12));
  // The CTA's threads: 512 while the row and the rows fill the block; a
  // [4, 16] tensor gets 16 lanes x 4 rows = 64.
  CHECK(workloads::training::eager_row_reduce_grid(8, 4096, 132).threads == 512);
  CHECK(workloads::training::eager_row_reduce_grid(4, 16, 132).threads == 64);
  // Training's rows (a micro-batch's tokens) fill every SM either way.
  CHECK(eager_row_reduce_ctas(8192, 4096, 132) >= 132);
}

TEST_CASE("the sampler's softmax runs a CTA a row, each pulling its warps' share of an SM's reach",
          "[inference][framework]") {
  // cunn_SoftMaxForward over a decode step's logits: a CTA a row (the grid
  // is the rows), each of SoftMax_getBlockSize's threads: one per 16-byte
  // load (4 fp32), at most 1024, a whole number of warps. Over 128256 and
  // 32000 logits: 1024 threads, 32 warps, half an SM's 64: half its reach.
  // Measured in the CUDA graph (calibration/measurements/h100-x4/
  // serving_graph_parts_2026-11-27, rank 0, batch 8): 34.2 us over 128256,
  // 10.2 us over 32000; gcsim at a full SM's reach gave 24.4 and 7.2 (-29%
  // both), now 29.7 and 8.5 (-13%, -17%): within 20%. What is left is not
  // modelled: the step's logits are L2-resident, which one CTA reads
  // 2-2.3x faster than HBM (calibration/measurements/h100-sxm/
  // row_reduce_2026-11-27: these softmaxes 33.2 / 9.9 us resident).
  const auto graph = calibrated_h100_graph();
  for (const auto& [vocab, measured_us] : {std::pair<int64_t, double>{128256, 34.2}, {32000, 10.2}}) {
    models::gpu::MemoryOpShape soft;
    soft.kind = models::gpu::MemoryOpKind::softmax;
    soft.rows = 8;
    soft.cols = vocab;
    soft.dtype = models::gpu::Dtype::fp32;
    const auto k = models::gpu::memory_kernel(graph, soft);
    INFO("vocab " << vocab);
    CHECK(k.tiles == 8);
    CHECK(k.sm_pull_fraction == Approx(0.5));
    CHECK(graph_profiled_us(graph, k) == Approx(measured_us).epsilon(0.20));
  }
  // Rows past the SMs fill them: two 1024-thread rows a SM hold all 64 warps.
  models::gpu::MemoryOpShape many;
  many.kind = models::gpu::MemoryOpKind::softmax;
  many.rows = 4096;
  many.cols = 128256;
  many.dtype = models::gpu::Dtype::fp32;
  CHECK(models::gpu::memory_kernel(graph, many).sm_pull_fraction == Approx(1.0));
}
