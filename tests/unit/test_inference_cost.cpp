// One serving step's cost on the GPU model: a decode step is bound by HBM
// (every weight and the batch's KV read once), a long prefill by the tensor
// cores; CUDA-graph padding follows vLLM's capture sizes; step collectives
// are timed by running them through the executor, once per distinct size.
#include "catch.h"
#include "models/cluster/cluster_model.h"
#include "test_inference_fixtures.h"
#include "workloads/inference/comm_timer.h"
#include "workloads/inference/iteration_cost.h"
#include "workloads/models/model_formulas.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;

namespace {

using test::h100;
using test::decode_batch;
using test::llama8b_on_h100;
using test::NoComm;

}  // namespace

TEST_CASE("a decode step is near the HBM bound: weights + KV over bandwidth",
          "[inference][cost]") {
  NoComm comm;
  IterationCost cost(llama8b_on_h100(), comm);
  const auto& m = cost.config().model;
  // Llama 3 8B: 8,030,261,248 parameters x 2 B = 16.06 GB of weights read
  // per step; each token's KV is 131,072 B. H100 SXM: 3,350 GB/s.
  const double weights = workloads::models::count_params(m).total * 2.0;
  const double bw = 3350e9;
  for (int64_t batch : {1, 16, 64}) {
    const int64_t context = 512;
    const double kv = static_cast<double>(batch * (context + 1)) * 131072.0;
    const double bound = (weights + kv) / bw;
    const double t = cost.cost(decode_batch(batch, context)).total.seconds();
    INFO("batch " << batch << ": step " << t * 1e3 << " ms, HBM bound " << bound * 1e3 << " ms");
    // Above the bound (the preset reaches 90% of the datasheet bandwidth,
    // and ~400 kernels pay launch and wave overheads), but within 40% of it.
    CHECK(t > bound);
    CHECK(t < 1.4 * bound);
  }
  // Batching is nearly free while memory-bound: 64 decodes cost far less
  // than 64 single ones.
  const double one = cost.cost(decode_batch(1, 512)).total.seconds();
  const double many = cost.cost(decode_batch(64, 512)).total.seconds();
  CHECK(many < 1.5 * one);
}

TEST_CASE("a long prefill is bound by the tensor cores", "[inference][cost]") {
  NoComm comm;
  IterationCost cost(llama8b_on_h100(), comm);
  const auto& m = cost.config().model;
  // 2,048 prompt tokens: 2 x 6.98e9 matrix weights (without the embedding
  // table, a lookup) x 2,048 = 2.86e13 FLOPs in the layers, plus causal
  // attention 2 x 2 x 32 layers x 4,096 x 2,048^2 / 2 = 1.1e12 and one row
  // of logits. At 989 TF/s x 0.81 (the preset's GEMM efficiency): ~37 ms.
  StepShape s;
  s.tokens = 2048;
  s.prefills = {{2048, 2048}};
  s.sampled = 1;
  const auto p = workloads::models::count_params(m);
  const double linear = 2.0 * (p.total - p.embedding - p.output_head) * 2048;
  const double attention = 2.0 * 2.0 * m.layers * 4096.0 * 2048.0 * 2048.0 / 2.0;
  const double bound = (linear + attention) / (989.4e12 * 0.81);
  const double t = cost.cost(s).total.seconds();
  INFO("prefill " << t * 1e3 << " ms, tensor bound " << bound * 1e3 << " ms");
  CHECK(t > bound);
  CHECK(t < 1.35 * bound);
}

TEST_CASE("CUDA-graph padding follows vLLM's capture sizes", "[inference][cost]") {
  NoComm comm;
  IterationCostConfig c = llama8b_on_h100();
  IterationCost v1(c, comm);
  StepShape s = decode_batch(5, 100);
  CHECK(v1.padded_tokens(s) == 8);  // sizes 1, 2, 4, 8, 16, ...
  s = decode_batch(3, 100);
  CHECK(v1.padded_tokens(s) == 4);
  s = decode_batch(1, 100);
  CHECK(v1.padded_tokens(s) == 1);
  s = decode_batch(17, 100);
  CHECK(v1.padded_tokens(s) == 24);
  s = decode_batch(513, 100);
  CHECK(v1.padded_tokens(s) == 513);  // beyond max_capture_size 512: eager
  StepShape mixed = decode_batch(3, 100);
  mixed.tokens += 2;
  mixed.prefills = {{2, 2}};
  CHECK(v1.padded_tokens(mixed) == 8);  // V1 pads mixed steps (piecewise graphs)
  c.pad_mixed_steps = false;            // V0: only pure decode steps
  IterationCost v0(c, comm);
  CHECK(v0.padded_tokens(mixed) == 5);
  CHECK(v0.padded_tokens(decode_batch(5, 100)) == 8);
  c.cuda_graphs = false;
  IterationCost eager(c, comm);
  CHECK(eager.padded_tokens(decode_batch(5, 100)) == 5);
}

TEST_CASE("step collectives are timed by the executor, once per distinct size",
          "[inference][cost]") {
  // A ClusterModel with no network attached runs collectives in the closed
  // alpha-beta form (collective_sms 0: no SM holds), so the timer must
  // return exactly that closed form.
  sim::Simulator scratch(1);
  models::cluster::ClusterModelConfig cc;
  cc.gpu = h100();
  cc.num_ranks = 8;
  cc.fabric.gpus_per_node = 8;
  cc.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  cc.fabric.scale_up_latency = sim::us(int64_t{1});
  cc.collective_sms = 0;
  models::cluster::ClusterModel cluster(scratch, cc);
  ExecutorCommTimer timer(scratch, cluster, 8);
  const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
  workloads::Op op;
  op.kind = workloads::OpKind::collective;
  workloads::CollectiveOp c;
  c.kind = workloads::CollectiveKind::all_reduce;
  c.bytes = sim::MiB(1);
  op.payload = c;
  const sim::Duration expected = cluster.communication_time(op, group);
  CHECK(expected > sim::Duration::zero());
  CHECK(timer.collective(workloads::CollectiveKind::all_reduce, sim::MiB(1), group) == expected);
  CHECK(timer.runs() == 1);
  CHECK(timer.collective(workloads::CollectiveKind::all_reduce, sim::MiB(1), group) == expected);
  CHECK(timer.runs() == 1);  // cached
  CHECK(timer.collective(workloads::CollectiveKind::all_reduce, sim::MiB(2), group) > expected);
  CHECK(timer.runs() == 2);
  // A single rank or no bytes: nothing to do.
  CHECK(timer.collective(workloads::CollectiveKind::all_reduce, sim::MiB(1), {3}) ==
        sim::Duration::zero());
}

TEST_CASE("TP8 decode: two all-reduces per layer over the fabric, a graph node's cost each", "[inference][cost]") {
  // Llama-2-70B at TP8, batch 1: each layer's two all-reduces of 1 token x
  // 8,192 x 2 B = 16 KiB, plus the vocabulary-parallel embedding's: 161;
  // and the logits' all-gather.
  sim::Simulator scratch(1);
  models::cluster::ClusterModelConfig cc;
  cc.gpu = h100();
  cc.num_ranks = 8;
  cc.fabric.gpus_per_node = 8;
  cc.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  cc.fabric.scale_up_latency = sim::us(int64_t{1});
  models::cluster::ClusterModel cluster(scratch, cc);
  ExecutorCommTimer timer(scratch, cluster, 8);
  IterationCostConfig c;
  c.model = test::llama2_70b();
  c.gpu = cc.gpu;
  c.parallel = {8, 1, 1};
  c.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  IterationCost cost(c, timer);
  const StepCost sc = cost.cost(decode_batch(1, 1024));
  const sim::Duration one =
      timer.collective(workloads::CollectiveKind::all_reduce, sim::KiB(16), c.ranks);
  // and the head's all-gather of the sampled row's logits: 32,000 x 2 B.
  const sim::Duration gather =
      timer.collective(workloads::CollectiveKind::all_gather, sim::Bytes(64'000), c.ranks);
  // The step is replayed from a CUDA graph (batch 1 <= max_capture_size).
  // vLLM (the default framework) runs its all-reduces there as its custom
  // all-reduce kernel; the logits' all-gather is NCCL's, and its node costs
  // the preset's graph_collective_overhead (5.2 us on an H100, configs/
  // hardware/h100-sxm.yaml) beyond the collective, in the step and not in
  // the class (the kernels' durations).
  REQUIRE(sc.graph);
  const sim::Duration node = c.gpu.graph_collective_overhead;
  CHECK(node == sim::ns(int64_t{5200}));
  CHECK(sc.communication == one * 161 + gather + node);
  CHECK(sc.classes.of(workloads::training::KernelClass::communication) ==
        Approx((one * 161 + gather).seconds()));
  CHECK(sc.total > sc.compute);
  // Eager PyTorch's are all NCCL's: 162 nodes; without the node cost the
  // step is exactly that much shorter, and on a stream it pays none.
  IterationCostConfig eager = c;
  eager.framework = ServingFramework::pytorch_eager;
  const StepCost e = IterationCost(eager, timer).cost(decode_batch(1, 1024));
  CHECK(e.communication == one * 161 + gather + node * 162);
  IterationCostConfig no_node = eager;
  no_node.gpu.graph_collective_overhead = sim::Duration::zero();
  const StepCost w = IterationCost(no_node, timer).cost(decode_batch(1, 1024));
  CHECK(e.total - w.total == node * 162);
  CHECK(w.compute == e.compute);
  IterationCostConfig stream = eager;
  stream.cuda_graphs = false;
  const StepCost st = IterationCost(stream, timer).cost(decode_batch(1, 1024));
  REQUIRE_FALSE(st.graph);
  CHECK(st.communication == one * 161 + gather);
  // Weights per GPU (17.25 GB) over 3,350 GB/s is the floor of the compute.
  CHECK(sc.compute.seconds() > 17.246e9 / 3350e9);
}

TEST_CASE("MoE decode reads only the experts its tokens are routed to", "[inference][cost]") {
  // DeepSeek-V3 in fp8 at TP8 / EP8: 32 of the 256 routed experts per GPU
  // per layer. One token goes to 8 experts: on average 32 x (1 - (255/256)^8)
  // = 0.98 of this GPU's, so a batch-1 step reads a small part of the 84 GB
  // of weights per GPU; a batch of 256 (2,048 routed copies) touches nearly
  // all 32 and costs much more.
  NoComm comm;
  IterationCostConfig c;
  c.model = test::model_preset("deepseek-v3");
  c.gpu = h100();
  c.parallel = {8, 1, 8};
  c.dtype = models::gpu::Dtype::fp8;
  c.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  IterationCost cost(c, comm);
  const double weights = weight_bytes_per_gpu(c.model, c.dtype, c.parallel).as_double();
  CHECK(weights == Approx(84e9).epsilon(0.02));
  const double one = cost.cost(decode_batch(1, 1024)).total.seconds();
  const double many = cost.cost(decode_batch(256, 1024)).total.seconds();
  INFO("batch 1 " << one * 1e3 << " ms, batch 256 " << many * 1e3 << " ms, all weights "
                  << weights / 3350e9 * 1e3 << " ms");
  CHECK(one < 0.5 * weights / 3350e9);
  CHECK(many > 2 * one);
}
