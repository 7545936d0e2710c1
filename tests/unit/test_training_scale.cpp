// The training step's size counted from the config (training_scale.h)
// against the step the generator then builds: stored ops (every distinct
// program) and executed ops (over the simulated ranks). The estimate
// decides whether a run is refused before generation, so it must be close;
// the tolerance below is what the budget's messages promise ("about").
#include <string>

#include "catch.h"
#include "training_replay.h"
#include "workloads/training/training_generator.h"
#include "workloads/training/training_scale.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

struct Counted {
  double stored = 0, executed = 0;
};

Counted generated(const TrainingConfig& c, bool mirror) {
  GeneratorOptions o;
  o.mirror = mirror;
  const TrainingWorkload w = generate_training(c, o);
  Counted n;
  n.executed = static_cast<double>(w.graph->total_ops());
  for (size_t p = 0; p < w.graph->program_count(); ++p) {
    n.stored += static_cast<double>(w.graph->program_by_id(static_cast<uint32_t>(p)).ops.size());
  }
  return n;
}

// Within 10% of the generated counts (1.4-7% on these): the messages say "about".
void expect_close(const TrainingConfig& c, bool mirror) {
  REQUIRE(!check_strategy(c, c.gpus()));
  const TrainingScale s = estimate_training_scale(c, mirror, c.gpus());
  const Counted n = generated(c, mirror);
  INFO("estimated stored " << s.program_ops << " executed " << s.executed_ops
                           << "; generated stored " << n.stored << " executed " << n.executed);
  CHECK(s.program_ops == Approx(n.stored).epsilon(0.1));
  CHECK(s.executed_ops == Approx(n.executed).epsilon(0.1));
}

}  // namespace

TEST_CASE("training scale: op counts before generation match the generated step", "[training]") {
  TrainingConfig c;
  c.model = test::small_llama(8);
  c.batch = {16, 1};
  SECTION("one GPU, 16 micro-batches") { expect_close(c, true); }
  SECTION("TP 2 x PP 2 x DP 2, SP, 1F1B, mirrored and not") {
    c.parallel.tp = 2;
    c.parallel.pp = 2;
    c.parallel.dp = 2;
    c.parallel.sequence_parallel = true;
    expect_close(c, true);
    expect_close(c, false);
  }
  SECTION("interleaved, full recompute, ZeRO-3") {
    c.parallel.pp = 2;
    c.parallel.dp = 2;
    c.parallel.schedule = Schedule::interleaved;
    c.parallel.virtual_stages = 2;
    c.recompute = Recompute::full;
    c.optimizer.zero_stage = 3;
    expect_close(c, true);
  }
  SECTION("zero-bubble and DualPipe") {
    c.parallel.pp = 4;
    c.parallel.schedule = Schedule::zb1p;
    expect_close(c, true);
    c.parallel.schedule = Schedule::dualpipe;
    expect_close(c, true);
  }
  SECTION("plain PyTorch's DDP: a bucket and a copy per weight, one micro-batch") {
    // DP 4, eager: per layer its buckets and six copies into them, once
    // per step, which the one micro-batch makes a tenth of the step's ops
    // (estimated 896.5, generated 836).
    c.framework = Framework::pytorch_eager;
    c.optimizer.grad_bytes = 4.0;
    c.parallel.dp = 4;
    c.batch = {4, 1};
    expect_close(c, true);
  }
  SECTION("GPipe with CP 2") {
    c.parallel.pp = 2;
    c.parallel.cp = 2;
    c.parallel.schedule = Schedule::gpipe;
    expect_close(c, true);
  }
}
