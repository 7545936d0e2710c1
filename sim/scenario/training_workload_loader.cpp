#include "sim/scenario/training_workload_loader.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "models/cluster/cluster_model.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "sim/report/format.h"
#include "sim/scenario/model_spec_loader.h"
#include "sim/config/unit_parse.h"
#include "sim/scenario/attention_params_loader.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/straggler_mirror.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_scale.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using namespace workloads::training;

namespace {

Schedule parse_schedule(const std::string& s) {
  if (s == "gpipe") return Schedule::gpipe;
  if (s == "interleaved") return Schedule::interleaved;
  if (s == "zb1p") return Schedule::zb1p;
  if (s == "dualpipe") return Schedule::dualpipe;
  return Schedule::one_f_one_b;
}

void read_parallelism(ConfigReader& w, TrainingConfig& c, int gpus, bool strategy_searched) {
  ConfigReader p = w.child("parallelism", "how the step is split over GPUs");
  auto& par = c.parallel;
  par.tp = static_cast<int>(p.get_int_in("tp", 1, "tensor parallel size", 1, 1 << 20));
  par.cp = static_cast<int>(p.get_int_in("cp", 1, "context parallel size (ring attention)", 1, 1 << 20));
  par.pp = static_cast<int>(p.get_int_in("pp", 1, "pipeline stages", 1, 1 << 20));
  const int64_t model_parallel = static_cast<int64_t>(par.tp) * par.cp * par.pp;
  if (!p.has("dp") && gpus % model_parallel != 0 && !strategy_searched) {
    p.fail_here("tp x cp x pp = " + std::to_string(model_parallel) +
                " does not divide the cluster's " + std::to_string(gpus) +
                " GPUs, so dp cannot be derived");
  }
  par.dp = static_cast<int>(p.get_int_in("dp", std::max<int64_t>(1, gpus / model_parallel),
                                         "data parallel size (default: GPUs / (tp x cp x pp))", 1,
                                         1 << 20));
  par.ep = static_cast<int>(
      p.get_int_in("ep", 1, "expert parallel size, carved out of dp", 1, 1 << 20));
  par.sequence_parallel = p.get_bool("sequence_parallel", false,
                                     "split norms, dropout and activations over TP (Megatron SP)");
  par.schedule = parse_schedule(p.get_choice("schedule",
                                             {"gpipe", "1f1b", "interleaved", "zb1p", "dualpipe"},
                                             std::string("1f1b"), "pipeline schedule"));
  par.virtual_stages = static_cast<int>(
      p.get_int_in("virtual_stages", par.schedule == Schedule::interleaved ? 2 : 1,
                   "model chunks per pipeline rank (interleaved; default 2 there, else 1)", 1, 1024));
  par.layer_split = p.get_choice("layer_split", {"even", "fewer_at_ends"}, std::string("even"),
                                 "layers per stage when pp does not divide them") == "even"
                        ? LayerSplit::even
                        : LayerSplit::fewer_at_ends;
  const std::string order = p.get_string(
      "order", std::string("tp-cp-ep-dp-pp"),
      "rank placement, innermost first (tp inside a node by default)");
  par.order.clear();
  std::stringstream ss(order);
  for (std::string part; std::getline(ss, part, '-');) par.order.push_back(part);
  try {
    RankGrid grid(par);
  } catch (const std::invalid_argument& e) {
    p.fail("order", e.what());
  }
  const char* bucket_doc =
      "gradient bytes per DP reduce bucket, or auto: the framework's (PyTorch DDP 25 MiB after a "
      "1 MiB first bucket; Megatron max(40M, 1M x dp) parameters, pipeline rank 0's first chunk "
      "only)";
  const YAML::Node bucket = p.raw("dp_bucket", bucket_doc);
  if (!bucket.IsDefined() || bucket.IsNull() || (bucket.IsScalar() && bucket.Scalar() == "auto")) {
    p.resolve("dp_bucket", "auto");
  } else {
    par.dp_bucket_bytes = p.get_bytes("dp_bucket", std::nullopt, bucket_doc).count();
    if (*par.dp_bucket_bytes <= 0) p.fail("dp_bucket", "must be positive (a size such as 25MiB, or auto)");
  }
  par.overlap_grad_reduce = p.get_bool(
      "overlap_grad_reduce", true,
      "reduce DP gradients bucket by bucket during the backward (DDP); false: one reduce of the "
      "whole buffer after the pipeline flush (Megatron-LM's local DDP of 2021)");
  p.finish();
}

void read_optimizer(ConfigReader& w, TrainingConfig& c) {
  ConfigReader o = w.child("optimizer", "optimizer and ZeRO sharding");
  o.get_choice("kind", {"adam", "adamw"}, std::string("adam"),
               "optimizer (mixed-precision Adam: fp32 master weights, m and v)");
  c.optimizer.zero_stage = static_cast<int>(o.get_int_in(
      "zero_stage", 0, "ZeRO stage: 0 none, 1 optimizer states, 2 + gradients, 3 + weights (FSDP)",
      0, 3));
  const std::string grad = o.get_choice("grad_dtype", {"bf16", "fp16", "fp32"}, std::string("bf16"),
                                        "gradient accumulation and reduction type");
  c.optimizer.grad_bytes = grad == "fp32" ? 4.0 : 2.0;
  const std::string state = o.get_choice("state_dtype", {"fp32", "bf16"}, std::string("fp32"),
                                         "Adam m and v (DeepSeek-V3 keeps them in bf16)");
  c.optimizer.state_bytes = 4.0 + (state == "fp32" ? 8.0 : 4.0);  // master weight + m + v
  c.optimizer.grad_clip = o.get_double("grad_clip", 1.0,
                                       "gradient global-norm clip (Megatron-LM's default 1.0; 0 = off)");
  if (c.optimizer.grad_clip < 0) o.fail("grad_clip", "must be >= 0 (0 turns clipping off)");
  c.optimizer.step = o.get_bool(
      "step", true,
      "false: no optimizer update runs (the step ends once the gradients are reduced; no optimizer "
      "states are held), as a bench that times forward + backward alone");
  if (!c.optimizer.step) {
    if (c.optimizer.zero_stage != 0) {
      o.fail("step", "false needs zero_stage: 0 (ZeRO shards the optimizer's states and update)");
    }
    c.optimizer.state_bytes = 0;  // no master weights, m or v without an optimizer
  }
  o.finish();
}

// Fails naming `key` below workload for a StrategyProblem key.
[[noreturn]] void fail_strategy(ConfigReader& w, const StrategyProblem& p) {
  const auto dot = p.key.find('.');
  if (dot == std::string::npos) w.fail(p.key, p.message);
  ConfigReader child = w.child(p.key.substr(0, dot), "");
  child.fail(p.key.substr(dot + 1), p.message);
}

// Whether the step fits in HBM, from a pipeline of at most a few micro-
// batches per stage: in-flight activations grow with the micro-batches only
// up to the schedule's depth, except GPipe's, so "does not fit" here holds
// for the full step too (memory only grows with more micro-batches).
std::string hbm_verdict(const TrainingConfig& c, const models::gpu::GpuSpec& gpu) {
  const int64_t depth = 8LL * c.parallel.pp * c.parallel.virtual_stages;
  const int probe = static_cast<int>(std::min<int64_t>(c.micro_batches(), depth));
  const PipelinePlan plan = build_pipeline(c.parallel.schedule, c.parallel.pp,
                                           c.parallel.virtual_stages, probe);
  const auto loads = expert_loads(c);
  const double max_load = *std::max_element(loads.begin(), loads.end());
  double worst = 0;
  for (int r = 0; r < c.parallel.pp; ++r) {
    worst = std::max(worst, memory_for_rank(c, plan, r, max_load).total());
  }
  const double capacity = gpu.hbm_capacity.as_double();
  if (worst <= capacity) return "";
  return " The model does not fit in HBM either: " + fmt("%.1f", worst / 1073741824.0) +
         " GiB per GPU of " + gpu.name + "'s " + fmt("%.1f", capacity / 1073741824.0) + " GiB" +
         (probe < c.micro_batches() ? " (counting " + std::to_string(probe) + " micro-batches)" : "") +
         ".";
}

// Refuses, before the step is generated, a step whose IR would not fit the
// run's limits (resource_budget.h), naming the key that makes it large: the
// micro-batches (batch.global), the layers, or simulating every rank.
void check_training_budget(ConfigReader& w, const TrainingConfig& c, bool mirrored, int gpus,
                           const models::gpu::GpuSpec& gpu, const ResourceLimits& limits) {
  const TrainingScale scale = estimate_training_scale(c, mirrored, gpus);
  const ResourceEstimate e = ResourceEstimate::from_ops(scale.program_ops, scale.executed_ops);
  if (e.within(limits)) return;
  const double mb = static_cast<double>(scale.micro_batches);
  const std::string what =
      "this training step is about " + fmt("%.3g", scale.executed_ops) + " ops to simulate (" +
      fmt("%.0f", mb) + " micro-batches [batch.global " + std::to_string(c.batch.global) +
      " / (micro " + std::to_string(c.batch.micro) + " x dp " + std::to_string(c.parallel.dp) +
      ")] x " + fmt("%.0f", scale.max_layers_per_rank) + " layers per pipeline rank [model.layers " +
      std::to_string(c.model.layers) + " / pp " + std::to_string(c.parallel.pp) + "] x ~" +
      fmt("%.0f", scale.ops_per_layer) + " ops per layer, on " +
      std::to_string(scale.simulated_ranks) + " simulated GPU" +
      (scale.simulated_ranks == 1 ? "" : "s") + ")";
  // The factor furthest above a typical step names the key: 128
  // micro-batches, 32 layers per rank, one simulated rank per program.
  const double by_batch = mb / 128.0;
  const double by_layers = scale.max_layers_per_rank / 32.0;
  const double by_ranks = static_cast<double>(scale.simulated_ranks) / scale.programs;
  std::string key = "batch.global", advice = "Lower workload.batch.global or raise workload.batch.micro.";
  if (by_layers >= by_batch && by_layers >= by_ranks) {
    key = "model.layers";
    advice = "Lower workload.model.layers, or raise workload.parallelism.pp.";
  } else if (by_ranks > by_batch && by_ranks > by_layers) {
    key = "simulate";
    advice = "Use workload.simulate: auto (one simulated rank per symmetric set).";
  }
  advice += hbm_verdict(c, gpu);
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    enforce(e, limits, w, key, what, advice);
  } else {
    enforce(e, limits, w.child(key.substr(0, dot), ""), key.substr(dot + 1), what, advice);
  }
}

}  // namespace

std::shared_ptr<TrainingRun> load_training_workload(ConfigReader& w, int gpus, int gpus_per_node,
                                                    const models::gpu::GpuSpec& gpu,
                                                    std::vector<std::string>& notes,
                                                    const ResourceLimits& limits,
                                                    const std::string& stragglers,
                                                    const std::vector<int>& slow_ranks,
                                                    bool strategy_searched, uint64_t seed,
                                                    bool balanced_routing, bool every_rank_differs) {
  auto run = std::make_shared<TrainingRun>();
  TrainingConfig& c = run->config;
  c.model = read_model(w);
  c.routing_seed = seed;
  if (balanced_routing) {
    c.model.moe.skew = 0.0;
    c.model.moe.balance = 0.0;
    // Every expert equally popular at its expected count: no draw's noise.
    c.model.moe.sample = false;
  }
  ConfigReader batch = w.child("batch", "sequences per step", true);
  c.batch.global = batch.get_int_in("global", std::nullopt, "sequences per step (global batch)", 1);
  c.batch.micro = batch.get_int_in("micro", 1, "sequences per micro-batch", 1);
  batch.finish();
  read_parallelism(w, c, gpus, strategy_searched);
  const std::string recompute = w.get_choice(
      "recompute", {"none", "selective", "full", "norms_up_proj"}, std::string("none"),
      "activation recomputation: selective (the attention core), full (every layer's forward), "
      "norms_up_proj (DeepSeek-V3: the RMSNorms' outputs and the attention's up-projections, and "
      "under fp8 the MoE SwiGLU's output from its FP8 inputs)");
  c.recompute = recompute == "full"            ? Recompute::full
                : recompute == "selective"     ? Recompute::selective
                : recompute == "norms_up_proj" ? Recompute::norms_up_proj
                                               : Recompute::none;
  read_optimizer(w, c);
  if (!c.parallel.overlap_grad_reduce && c.optimizer.zero_stage >= 2) {
    w.child("parallelism", "").fail(
        "overlap_grad_reduce", "false needs optimizer.zero_stage 0 or 1: ZeRO-2/3 reduce-scatter "
                               "each micro-batch's gradients as the backward makes them");
  }
  const std::string precision = w.get_choice("precision", {"fp16", "bf16", "fp8"},
                                             std::string("bf16"),
                                             "GEMM precision (fp8: linear layers in FP8)");
  c.precision = precision == "fp16" ? Precision::fp16
                : precision == "fp8" ? Precision::fp8
                                     : Precision::bf16;
  // unfused: Megatron 2022's GEMMs, softmax and dropout over s x s (stored).
  c.attention_family = models::gpu::resolve_attention_family(read_attention_kernel(w, gpu), gpu,
                                                             /*decode=*/false);
  run->attention_kernel = std::string(models::gpu::attention_family_name(c.attention_family));
  c.attention_impl = c.attention_family == models::gpu::AttentionFamily::unfused
                         ? AttentionImpl::unfused
                         : AttentionImpl::flash;
  const std::string framework = w.get_choice(
      "framework", {"megatron", "pytorch-eager", "torch-compile"}, std::string("megatron"),
      "software stack: megatron (TE fused kernels), pytorch-eager (every elementwise op a kernel, "
      "AMP, foreach AdamW) or torch-compile (fused elementwise chains)");
  c.framework = framework == "pytorch-eager"   ? Framework::pytorch_eager
                : framework == "torch-compile" ? Framework::torch_compile
                                               : Framework::megatron;
  // The profile's two fitted quantities, for a user who measured their own
  // stack (calibration/microbench/framework_step.py).
  FrameworkTraits traits = framework_traits(c.framework);
  const double host_us =
      w.get_duration("host_overhead", sim::us(traits.host_us_per_kernel),
                     "host time per launched kernel (default: the framework's fitted value; "
                     "megatron 0: the host never holds the GPU back)")
          .microseconds();
  if (host_us < 0) w.fail("host_overhead", "must be >= 0");
  const double bandwidth = w.get_double(
      "elementwise_bandwidth", traits.elementwise_bandwidth,
      "fraction of the achieved HBM bandwidth the framework's own elementwise kernels reach "
      "(pytorch-eager, torch-compile; default: fitted)");
  if (!(bandwidth > 0.0 && bandwidth <= 1.0)) w.fail("elementwise_bandwidth", "must be in (0, 1]");
  const double optimizer_bandwidth = w.get_double(
      "optimizer_bandwidth", traits.optimizer_bandwidth,
      "fraction of the achieved HBM bandwidth PyTorch's foreach optimizer passes reach "
      "(pytorch-eager, torch-compile; default: fitted)");
  if (!(optimizer_bandwidth > 0.0 && optimizer_bandwidth <= 1.0)) {
    w.fail("optimizer_bandwidth", "must be in (0, 1]");
  }
  const double generic_ops = w.get_double(
      "generic_ops_per_element", traits.generic_ops_per_element,
      "SM operations per element of the framework's non-vectorised elementwise kernels "
      "(broadcasts, strided views, casts to fp32, cat), at the GPU's vector rate "
      "(pytorch-eager, torch-compile; default: fitted)");
  if (!(generic_ops > 0.0 && generic_ops <= 1e4)) w.fail("generic_ops_per_element", "must be in (0, 10000]");
  const double reduction_ops = w.get_double(
      "reduction_ops_per_element", traits.reduction_ops_per_element,
      "SM operations per element of the framework's fused reductions (torch-compile's loss and "
      "norm kernels), at the GPU's vector rate (default: fitted)");
  if (!(reduction_ops > 0.0 && reduction_ops <= 1e4)) {
    w.fail("reduction_ops_per_element", "must be in (0, 10000]");
  }
  const double cycles_per_row = w.get_double(
      "reduction_cycles_per_row", traits.cycles_per_row,
      "SM cycles a fused reduction's CTA-long row costs beyond its elements (torch-compile's "
      "loss over the vocabulary; default: fitted)");
  if (!(cycles_per_row >= 0.0 && cycles_per_row <= 1e6)) {
    w.fail("reduction_cycles_per_row", "must be in [0, 1000000]");
  }
  if (host_us != traits.host_us_per_kernel || bandwidth != traits.elementwise_bandwidth ||
      optimizer_bandwidth != traits.optimizer_bandwidth ||
      generic_ops != traits.generic_ops_per_element ||
      reduction_ops != traits.reduction_ops_per_element || cycles_per_row != traits.cycles_per_row) {
    c.framework_traits = FrameworkTraits{host_us,     bandwidth,     optimizer_bandwidth,
                                         generic_ops, reduction_ops, cycles_per_row};
  }
  c.memory_reserved = w.get_bytes("memory_reserved", sim::Bytes(0),
                                  "HBM per GPU outside the model (CUDA context, NCCL, workspaces)")
                          .count();
  const std::string simulate =
      w.get_choice("simulate", {"auto", "all"}, std::string("auto"),
                   "auto: mirror symmetric ranks (one simulated per set); all: every rank");

  if (!strategy_searched) {
    if (auto problem = check_strategy(c, gpus)) fail_strategy(w, problem);
  }
  if (c.parallel.cp > 1 && c.attention_impl == AttentionImpl::unfused && !strategy_searched) {
    w.fail("attention_kernel", "context parallelism (ring attention) needs a fused attention_kernel (flash2, flash3 or cudnn)");
  }
  const auto act = c.precision == Precision::fp16 ? models::gpu::Dtype::fp16 : models::gpu::Dtype::bf16;
  for (auto d : {act, c.precision == Precision::fp8 ? models::gpu::Dtype::fp8 : act}) {
    if (!(gpu.tensor_peak_for(d).flops_per_s() > 0.0)) {
      w.fail("precision", std::string(models::gpu::dtype_name(d)) + " is not supported by the " +
                              "tensor cores of " + gpu.name);
    }
  }

  if (strategy_searched) return run;

  // The build below holds every micro-batch's passes: the limits first.
  GeneratorOptions o;
  o.mirror = simulate == "auto" && !every_rank_differs;
  run->every_rank_differs = every_rank_differs;
  o.gpus_per_node = gpus_per_node;
  const bool mirrors = o.mirror && asymmetry(c, RankGrid(c.parallel), gpus_per_node).empty();
  check_training_budget(w, c, mirrors, gpus, gpu, limits);
  if (c.micro_batches() > (1LL << 30)) {
    w.child("batch", "").fail("global", "more than 2^30 micro-batches per pipeline");
  }

  // Memory: every pipeline rank at the heaviest expert load.
  const PipelinePlan plan = build_pipeline(c.parallel.schedule, c.parallel.pp,
                                           c.parallel.virtual_stages,
                                           static_cast<int>(c.micro_batches()));
  const auto loads = expert_loads(c);
  const double max_load = *std::max_element(loads.begin(), loads.end());
  run->capacity_bytes = gpu.hbm_capacity.as_double();
  RankMemory memory = memory_per_rank(c, plan, max_load);
  const double worst = memory.fullest_bytes();
  run->worst_pipeline_rank = memory.fullest;
  run->memory = std::move(memory.per_rank);
  run->fits = worst <= run->capacity_bytes;
  if (!run->fits) {
    char need[96];
    std::snprintf(need, sizeof need, "%.1f GiB per GPU on pipeline rank %d, more than the %.1f GiB",
                  worst / 1073741824.0, run->worst_pipeline_rank, run->capacity_bytes / 1073741824.0);
    notes.push_back(std::string("the step needs ") + need +
                    " of HBM: it is simulated as if it fit, without HBM accounting");
  }

  o.memory_ops = run->fits;
  run->workload = generate_training(c, o);
  bool straggler_off = false;
  if (run->workload.mirrored && !slow_ranks.empty()) {
    // A straggler keeps the mirrored run when its stage's simulated rank
    // can stand in for it (straggler_mirror.h); otherwise every rank runs.
    std::string why;
    run->straggler_stand_in = straggler_stand_ins(c, run->workload, slow_ranks, &why);
    if (run->straggler_stand_in.empty()) {
      check_training_budget(w, c, false, gpus, gpu, limits);
      o.mirror = false;
      run->workload = generate_training(c, o);
      run->workload.mirror_note = "mirroring off: straggler on " + stragglers + " (" + why +
                                  "); every rank is simulated";
      straggler_off = true;
    } else {
      std::string stand_ins;
      for (const auto& [slow, stand_in] : run->straggler_stand_in) {
        stand_ins += (stand_ins.empty() ? "" : ", ") + std::to_string(slow) + " -> " +
                     std::to_string(stand_in);
      }
      notes.push_back("straggler on " + stragglers + ": mirrored ranks kept, its stage's simulated "
                      "rank runs at its speed (" + stand_ins + "); the slow data-parallel replica "
                      "paces every replica at the gradient collectives");
    }
  }
  if (every_rank_differs && simulate == "auto") {
    notes.push_back("mirroring off: cluster.power_spread gives every GPU its own clock under the "
                    "power cap; every rank is simulated");
  }
  if (run->workload.mirrored) {
    notes.push_back("mirrored ranks: " + std::to_string(run->workload.simulated.size()) + " of " +
                    std::to_string(gpus) + " GPUs simulated (" + run->workload.mirrored_axes +
                    " are symmetric); their collectives are timed over the whole groups");
  }
  if (!run->workload.mirror_note.empty() && (o.mirror || straggler_off)) {
    notes.push_back(run->workload.mirror_note);
  }

  const double tokens = static_cast<double>(c.tokens_per_step());
  const auto per_token = workloads::models::forward_flops_per_token(c.model);
  run->model_flops = workloads::models::model_flops(c.model, tokens);
  double recompute_flops = 0;
  if (c.recompute == Recompute::full) recompute_flops = (per_token.layers + per_token.attention) * tokens;
  if (c.recompute == Recompute::selective && c.attention_impl == AttentionImpl::unfused) {
    recompute_flops = per_token.attention * tokens;
  }
  if (c.recompute == Recompute::norms_up_proj) {
    // The up-projections again (2 FLOPs a multiply-add).
    recompute_flops = 2.0 * workloads::models::up_projection_params(c.model) *
                      static_cast<double>(c.model.layers) * tokens;
  }
  run->hardware_flops = run->model_flops + recompute_flops;
  run->peak_flops_per_gpu = gpu.tensor_peak_for(act).flops_per_s();
  return run;
}

std::unique_ptr<sim::OpExecutor> make_training_executor(const TrainingRun& run,
                                                        sim::OpExecutor& cluster,
                                                        const workloads::WorkloadGraph& graph,
                                                        sim::Simulator& simulator) {
  return std::make_unique<SymmetricExecutor>(cluster, run.workload, &graph, &simulator);
}

}  // namespace gcsim::cli
