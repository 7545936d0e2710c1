// workload.framework for serving (serving_framework.h): the launches a step
// issues under vllm and pytorch-eager, counted by hand from the layer code;
// a host that issues each kernel at a cost bounds an eager step outside a
// CUDA graph and not inside one.
#include "catch.h"
#include "test_inference_fixtures.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/inference/iteration_cost.h"
#include "workloads/inference/serving_framework.h"

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
  CHECK(g.total == s.compute + s.communication - saved * 318);
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
  CHECK(unmeasured.total == stream.total);
  // vLLM's 102 launches less 16 all-reduces, the embedding's all-reduce and
  // the all-gather: 84 kernels, 1.3 us sooner each.
  CHECK(stream.total - graph.total == sim::ns(int64_t{1300}) * 84);
}

TEST_CASE("a prefill's attention class is its kernels' profiler durations", "[inference][framework]") {
  // cuDNN's prefill attention is fitted to torch.profiler's kernel durations
  // (start to end, calibration/measurements/h100-sxm/serving_kernels_2026-11-27);
  // its time in the step carries the GPU's launch latency besides (the
  // preset's 2 us), which the class, a profiler's table, does not count.
  // TP4 prefill of 512 tokens: 8 layers, one attention kernel each, so the
  // class is 8 kernels' time less 8 x 2 us; the step is unchanged (it still
  // waits for each launch). Classes of kernels fitted to back-to-back
  // spacing (GEMMs, elementwise passes) keep their time.
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
  const auto p = EagerServingPasses::rms_norm(3, 8192);
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
