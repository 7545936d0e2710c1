// summary.json bytes_sent_per_gpu: the wire bytes one GPU sends per step,
// per dimension, counted from the generated step
// (workloads/training/step_traffic.h), against hand counts.
#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_summary;

TEST_CASE("training traffic per GPU: pipeline sends, TP all-reduces, tied embedding", "[scenario][training]") {
  // TP 2 x PP 4, interleaved with v = 2 (8 chunks of one layer), 8
  // micro-batches of b s h = 1024 x 1024 bf16 = 2 MiB, vocabulary 32000.
  const auto s = run_summary(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: training
  model: {layers: 8, hidden: 1024, heads: 16, vocab: 32000, seq_len: 1024}
  batch: {global: 8, micro: 1}
  parallelism: {tp: 2, pp: 4, dp: 1, schedule: interleaved, virtual_stages: 2}
)");
  const auto& t = s["bytes_sent_per_gpu"];
  const double act = 1024.0 * 1024 * 2;
  // Each micro-batch crosses the p v - 1 = 7 chunk boundaries forward and
  // backward: 2 x 7 sends shared by 4 GPUs, x 8 micro-batches x 2 MiB.
  CHECK(t["pp"].get<double>() == 2.0 * 7 / 4 * 8 * act);
  // Megatron's TP: 4 all-reduces of b s h per layer (2 forward, 2
  // backward), each 2 (t-1)/t = 1 x S on the wire, 2 layers per GPU, 8
  // micro-batches; the vocabulary-parallel embedding and loss add a few
  // percent on the first and last chunks.
  const double layers = 4.0 * 1.0 * act * 2 * 8;
  CHECK(t["tp"].get<double>() >= layers);
  CHECK(t["tp"].get<double>() < 1.07 * layers);
  // The tied embedding's gradient all-reduce (V h / t x 2 B = 32.77 MB,
  // 2 (n-1)/n = 1 on 2 ranks) on the 2 of the 4 observed ranks that hold
  // the first and the last chunk: 16.384 MB per GPU on average.
  CHECK(t["embedding"].get<double>() == 32000.0 * 1024 / 2 * 2 * 2 / 4);
  CHECK(t["dp"].get<double>() == 0.0);
}
