#include "sim/scenario/inference_workload_loader.h"

#include <cmath>

#include "sim/report/format.h"
#include "sim/scenario/model_spec_loader.h"
#include "sim/scenario/attention_params_loader.h"
#include "sim/config/input_file.h"
#include "sim/config/unit_parse.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/framework_profile.h"

namespace gcsim::cli {

using sim::config::ConfigError;
using sim::config::ConfigReader;
namespace inf = workloads::inference;
using models::gpu::Dtype;
using workloads::models::ModelSpec;

namespace {

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

Dtype read_dtype(ConfigReader& r, const std::string& key, const std::string& fallback,
                 const char* doc) {
  const std::string s =
      r.get_choice(key, {"bf16", "fp16", "fp8"}, fallback, doc);
  return *models::gpu::parse_dtype(s);
}

// A length: a number (fixed) or {kind, ...}.
inf::LengthDist read_length(ConfigReader& r, const std::string& key, int64_t fallback,
                            const char* doc, bool& uses_trace) {
  inf::LengthDist d;
  YAML::Node n = r.raw(key, doc);
  if (!n.IsDefined() || n.IsNull() || n.IsScalar()) {
    if (n.IsDefined() && n.IsScalar() && n.Scalar() == "trace") {
      r.get_string(key, std::nullopt, doc);
      d.kind = inf::LengthKind::trace;
      uses_trace = true;
      return d;
    }
    d.kind = inf::LengthKind::fixed;
    d.value = r.get_int_in(key, fallback, doc, 1, 100'000'000);
    return d;
  }
  ConfigReader c = r.child(key, doc);
  const std::string kind =
      c.get_choice("kind", {"fixed", "uniform", "normal", "zipf", "trace"}, std::nullopt,
                   "distribution: fixed | uniform | normal | zipf | trace");
  if (kind == "fixed") {
    d.kind = inf::LengthKind::fixed;
    d.value = c.get_int_in("value", std::nullopt, "tokens", 1, 100'000'000);
  } else if (kind == "trace") {
    d.kind = inf::LengthKind::trace;
    uses_trace = true;
  } else {
    d.min = c.get_int_in("min", 1, "smallest value (tokens)", 1, 100'000'000);
    d.max = c.get_int_in("max", std::nullopt, "largest value (tokens)", 1, 100'000'000);
    if (d.max < d.min) c.fail("max", "must be at least min (" + std::to_string(d.min) + ")");
    if (kind == "uniform") {
      d.kind = inf::LengthKind::uniform;
    } else if (kind == "normal") {
      d.kind = inf::LengthKind::normal;
      d.mean = c.get_double("mean", std::nullopt, "mean (tokens)");
      d.stddev = c.get_double("stddev", std::nullopt, "standard deviation (tokens)");
      if (d.stddev < 0) c.fail("stddev", "must not be negative");
    } else {
      d.kind = inf::LengthKind::zipf;
      d.zipf_s = c.get_double("s", 1.1, "Zipf exponent: P(k) ~ 1/(k - min + 1)^s");
      if (!(d.zipf_s > 0)) c.fail("s", "must be positive");
      if (d.max - d.min > 10'000'000) c.fail("max", "a Zipf range wider than 10M values");
    }
  }
  c.finish();
  return d;
}

// Streamed line by line (sim/config/input_file.h: at most kMaxDataBytes),
// so that a large trace is never held as text beside its rows.
// A trace may not hold more requests than the memory limit serves
// (resource_budget.h); it stops being read at the first one over.
std::vector<inf::TraceRow> read_trace_file(ConfigReader& req, const std::string& path,
                                           const ResourceLimits& limits) {
  sim::config::InputLines lines(path, sim::config::kMaxDataBytes, "serving trace");
  if (!lines.ok()) req.fail("trace", "'" + path + "': " + lines.error());
  const bool jsonl = path.size() >= 6 && (path.substr(path.size() - 6) == ".jsonl" ||
                                          path.substr(path.size() - 5) == ".json");
  const double max_rows = (limits.max_memory_bytes - kBaseBytes) / kBytesPerRequest;
  try {
    inf::TraceParser parser(jsonl);
    while (auto line = lines.next()) {
      parser.add_line(*line, lines.line_number());
      if (static_cast<double>(parser.rows()) > max_rows) {
        req.fail("trace", "'" + path + "' holds more than " + fmt("%.0f", max_rows) +
                              " requests by line " + std::to_string(lines.line_number()) +
                              ", more than " + limits.memory_text() + " serves at ~" +
                              fmt("%.0f", kBytesPerRequest) + " B per request; use part of the "
                              "trace (requests.count takes its first rows)");
      }
    }
    if (!lines.ok()) throw ConfigError(path, 0, req.path() + ".trace", lines.error());
    return parser.finish();
  } catch (const inf::TraceError& e) {
    throw ConfigError(path, e.line, req.path() + ".trace", e.message);
  }
}

inf::RequestsConfig read_requests(ConfigReader& w, inf::RateSearch& search, std::string& trace_path,
                                  const ResourceLimits& limits) {
  ConfigReader r = w.child("requests", "the load: how many requests, when, how long", true);
  inf::RequestsConfig c;
  bool uses_trace = false;

  ConfigReader a = r.child("arrival", "arrival process");
  const std::string kind = a.get_choice("kind", {"poisson", "gamma", "burst", "trace"},
                                        std::string("poisson"),
                                        "poisson (rate) | gamma (rate, cv) | burst (all at t = 0) "
                                        "| trace (times from requests.trace)");
  c.arrival = kind == "poisson" ? inf::ArrivalKind::poisson
              : kind == "gamma" ? inf::ArrivalKind::gamma
              : kind == "burst" ? inf::ArrivalKind::burst
                                : inf::ArrivalKind::trace;
  if (c.arrival == inf::ArrivalKind::poisson || c.arrival == inf::ArrivalKind::gamma) {
    const char* doc = "requests per second, or `search` for the highest rate meeting the SLOs";
    YAML::Node rate = a.raw("rate", doc);
    if (rate.IsDefined() && rate.IsScalar() && rate.Scalar() == "search") {
      a.get_string("rate", std::nullopt, doc);
      search.enabled = true;
      c.rate = 1.0;
    } else {
      c.rate = a.get_double("rate", std::nullopt, doc);
      if (!(c.rate > 0)) a.fail("rate", "must be positive, got " + std::to_string(c.rate));
    }
    if (c.arrival == inf::ArrivalKind::gamma) {
      c.cv = a.get_double("cv", 1.0, "coefficient of variation of inter-arrival times (1 = Poisson)");
      if (!(c.cv > 0)) a.fail("cv", "must be positive");
    }
  }
  if (c.arrival == inf::ArrivalKind::trace) uses_trace = true;
  a.finish();

  c.prompt = read_length(r, "prompt_len", 512, "prompt tokens: a number or {kind: ...}", uses_trace);
  c.output = read_length(r, "output_len", 128, "output tokens: a number or {kind: ...}", uses_trace);

  ConfigReader p = r.child("prefix", "shared prompt prefixes (system prompts, few-shot examples)");
  c.prefix_groups = p.get_int_in("groups", 0, "distinct shared prefixes (0: none)", 0, 1'000'000'000);
  c.prefix_len = p.get_int_in("len", 0, "tokens of each shared prefix", 0, 100'000'000);
  if (c.prefix_groups > 0 && c.prefix_len == 0) p.fail("len", "must be positive when groups > 0");
  p.finish();

  trace_path = r.get_path("trace", std::string(),
                          "request trace (relative to this config): CSV (arrival_s, "
                          "prompt_tokens, output_tokens[, prefix_id]) or JSONL with those keys");
  if (!trace_path.empty()) {
    c.trace = read_trace_file(r, trace_path, limits);
  } else if (uses_trace) {
    r.fail("trace", "arrival or lengths come from a trace: set requests.trace to its file");
  }
  const auto rows = static_cast<int64_t>(c.trace.size());
  c.count = r.get_int_in("count", rows > 0 ? rows : 100, "requests to send", 1, 100'000'000);
  if (uses_trace && c.count > rows) {
    r.fail("count", "the trace has only " + std::to_string(rows) + " requests, count is " +
                        std::to_string(c.count));
  }
  ResourceEstimate e;
  e.memory_bytes = kBaseBytes + static_cast<double>(c.count) * kBytesPerRequest;
  e.events = static_cast<double>(c.count) * kEventsPerRequest;
  enforce(e, limits, r, "count", fmt("%.0f requests", static_cast<double>(c.count)),
          "Serve fewer requests (a few thousand give stable percentiles)");

  ConfigReader s = r.child("search", "rate search (requests.arrival.rate: search)");
  search.target = s.get_double("target", 0.9, "SLO attainment the rate must keep");
  if (!(search.target > 0 && search.target <= 1)) s.fail("target", "must lie in (0, 1]");
  search.low = s.get_double("low", 0.0, "lowest rate to try (requests/s; 0: start from 1)");
  search.high = s.get_double("high", 0.0, "a rate known to be too high (0: found by doubling)");
  search.iterations = static_cast<int>(s.get_int_in("iterations", 8, "bisection steps", 1, 40));
  if (search.low < 0) s.fail("low", "must not be negative");
  if (search.high < 0 || (search.high > 0 && search.high <= search.low)) {
    s.fail("high", "must be above low");
  }
  s.finish();
  r.finish();
  return c;
}

void check_parallel(ConfigReader& sv, const ModelSpec& m, const inf::ParallelShape& p,
                    const std::string& tp_key) {
  if (m.heads % p.tp != 0) {
    sv.fail(tp_key, "the model's " + std::to_string(m.heads) +
                        " attention heads must divide evenly over tp = " + std::to_string(p.tp));
  }
  if (m.attention != workloads::models::AttentionKind::mla) {
    const bool ok = m.kv_heads >= p.tp ? m.kv_heads % p.tp == 0 : p.tp % m.kv_heads == 0;
    if (!ok) {
      sv.fail(tp_key, "the model's " + std::to_string(m.kv_heads) +
                          " KV heads must divide tp = " + std::to_string(p.tp) +
                          " or be divided by it (vLLM replicates KV heads)");
    }
  }
  if (p.pp > m.layers) sv.fail("pp", "more pipeline stages than the model's layers");
}

// workload.framework and the host's issue cost (serving_framework.h).
void read_framework(ConfigReader& w, inf::ServingConfig& c) {
  const std::string name = w.get_choice(
      "framework", {"vllm", "pytorch-eager"}, std::string("vllm"),
      "software stack: vllm (fused kernels, CUDA-graph decode) or pytorch-eager (every "
      "elementwise op a kernel, each kernel issued by the host)");
  c.framework = *inf::parse_serving_framework(name);
  if (c.framework == inf::ServingFramework::pytorch_eager) {
    if (c.model.attention == workloads::models::AttentionKind::mla) {
      w.fail("framework", "pytorch-eager serving models dense GQA / MHA layers; this model uses MLA");
    }
    if (c.model.is_moe()) {
      w.fail("framework", "pytorch-eager serving models dense layers; this model has experts");
    }
  }
  const bool eager = c.framework == inf::ServingFramework::pytorch_eager;
  workloads::training::FrameworkTraits& t = c.eager_traits;
  t = inf::eager_serving_traits();
  const sim::Duration host = w.get_duration(
      "host_overhead", sim::us(eager ? t.host_us_per_kernel : 0.0),
      "host time per launched kernel of a step that does not replay a CUDA graph (default: "
      "pytorch-eager's fitted value; vllm 0: the host never holds the GPU back)");
  if (host < sim::Duration::zero()) w.fail("host_overhead", "must be >= 0");
  c.host_per_kernel = host;
  if (!eager) return;
  t.elementwise_bandwidth = w.get_double(
      "elementwise_bandwidth", t.elementwise_bandwidth,
      "pytorch-eager: fraction of the achieved HBM bandwidth its vectorized elementwise passes "
      "reach (default: fitted)");
  if (!(t.elementwise_bandwidth > 0.0 && t.elementwise_bandwidth <= 1.0)) {
    w.fail("elementwise_bandwidth", "must be in (0, 1]");
  }
  t.generic_ops_per_element = w.get_double(
      "generic_ops_per_element", t.generic_ops_per_element,
      "pytorch-eager: SM operations per element of its non-vectorised elementwise passes "
      "(broadcasts, strided views, casts to fp32, cat), at the GPU's vector rate (default: the "
      "training eager profile's fitted value)");
  if (!(t.generic_ops_per_element > 0.0 && t.generic_ops_per_element <= 1e4)) {
    w.fail("generic_ops_per_element", "must be in (0, 10000]");
  }
}

}  // namespace

std::shared_ptr<InferenceSetup> load_inference_workload(ConfigReader& w, const ClusterConfig& cluster,
                                                        std::vector<std::string>& notes,
                                                        const ResourceLimits& limits) {
  auto setup = std::make_shared<InferenceSetup>();
  inf::ServingConfig& c = setup->serving;
  c.model = read_model(w);
  const ModelSpec& m = c.model;
  // Before the `serving` child: a child's resolved section lives inside its
  // parent's, which a later key of the parent may move.
  read_framework(w, c);
  c.attention_kernel = read_attention_kernel(w, cluster.gpu);

  ConfigReader sv = w.child("serving", "the deployment: replicas, parallelism, vLLM engine");
  c.parallel.tp = static_cast<int>(sv.get_int_in("tp", 1, "tensor-parallel GPUs per replica", 1, 1024));
  c.parallel.pp = static_cast<int>(sv.get_int_in("pp", 1, "pipeline stages per replica", 1, 1024));
  c.parallel.ep = static_cast<int>(sv.get_int_in(
      "ep", 1, "expert-parallel ranks within each stage's TP group (MoE models)", 1, 1024));
  if (c.parallel.tp % c.parallel.ep != 0) sv.fail("ep", "must divide tp");
  if (m.is_moe() && m.moe.experts % c.parallel.ep != 0) {
    sv.fail("ep", "must divide the model's " + std::to_string(m.moe.experts) + " experts");
  }
  if (!m.is_moe() && c.parallel.ep > 1) sv.fail("ep", "the model has no experts");
  check_parallel(sv, m, c.parallel, "tp");
  c.replicas = static_cast<int>(sv.get_int_in("replicas", 1, "replicas (without disaggregation)", 1, 1'000'000));
  c.dtype = read_dtype(sv, "dtype", "bf16", "weights and activations: bf16 | fp16 | fp8 (weights)");
  {
    const std::string kv = sv.get_choice("kv_cache_dtype", {"auto", "bf16", "fp16", "fp8"},
                                         std::string("auto"), "KV cache: auto (= dtype) | fp8");
    c.kv_dtype = kv == "auto" ? (c.dtype == Dtype::fp8 ? Dtype::bf16 : c.dtype)
                              : *models::gpu::parse_dtype(kv);
  }
  for (Dtype d : {c.dtype, c.kv_dtype}) {
    if (cluster.gpu.tensor_peak_for(d).flops_per_s() <= 0) {
      sv.fail(d == c.dtype ? "dtype" : "kv_cache_dtype",
              std::string(models::gpu::dtype_name(d)) + " is not supported by " + cluster.gpu.name);
    }
  }
  c.non_torch_memory = sv.get_bytes(
      "non_torch_memory", sim::GiB(1),
      "memory outside PyTorch's allocator per GPU (NCCL and custom all-reduce buffers, CUDA "
      "graphs, cuBLAS workspace); vLLM logs report 0.2-2 GiB");
  c.swap_space = sv.get_bytes("swap_space", sim::GiB(4), "CPU swap space per GPU (V0 swap preemption)");
  c.cuda_graphs = sv.get_bool("cuda_graphs", c.framework == inf::ServingFramework::vllm,
                               "CUDA graphs: small steps replay graphs padded to capture sizes "
                               "(default: true for vllm, false for pytorch-eager)");
  c.step_overhead = sv.get_duration("step_overhead", sim::Duration::zero(),
                                    "host time per engine step the GPUs wait for");
  const std::string router = sv.get_choice(
      "router", {"round_robin", "least_outstanding", "prefix_affinity"}, std::string("round_robin"),
      "how requests are spread over replicas");
  c.router = router == "round_robin"         ? inf::RouterKind::round_robin
             : router == "least_outstanding" ? inf::RouterKind::least_outstanding
                                             : inf::RouterKind::prefix_affinity;

  // --- scheduler ---
  ConfigReader sc = sv.child("scheduler", "the vLLM engine's scheduler");
  const std::string mode = sc.get_choice("mode", {"vllm-v1", "vllm-v0"}, std::string("vllm-v1"),
                                         "vllm-v1 (chunked prefill, one token budget) | vllm-v0 "
                                         "(prefill-only or decode-only steps)");
  inf::SchedulerConfig& s = c.scheduler;
  s.mode = mode == "vllm-v1" ? inf::SchedulerMode::v1 : inf::SchedulerMode::v0;
  const bool v1 = s.mode == inf::SchedulerMode::v1;
  s.block_size = sc.get_int("block_size", 16, "tokens per KV-cache block");
  if (!power_of_two(s.block_size) || s.block_size > 1024) {
    sc.fail("block_size", "must be a power of two in [1, 1024], got " + std::to_string(s.block_size));
  }
  c.gpu_memory_utilization =
      sc.get_double("gpu_memory_utilization", 0.9, "fraction of HBM the engine may use");
  if (!(c.gpu_memory_utilization > 0 && c.gpu_memory_utilization <= 1)) {
    sc.fail("gpu_memory_utilization", "must lie in (0, 1]");
  }
  s.max_model_len = sc.get_int_in("max_model_len", m.seq_len,
                                  "longest request (prompt + output tokens; default the model's "
                                  "context)", 2, 100'000'000);
  s.enable_chunked_prefill = sc.get_bool("enable_chunked_prefill", v1,
                                         "split long prompts over steps (V1 default on, V0 off)");
  if (!v1 && s.enable_chunked_prefill) {
    sc.fail("enable_chunked_prefill", "vllm-v0's chunked prefill is not modelled; use vllm-v1");
  }
  // vLLM's defaults: V1 8192 tokens on GPUs of 70 GiB or more (the API
  // server's), 2048 below; V0 without chunking max(max_model_len, 2048).
  const bool big_gpu = cluster.gpu.hbm_capacity >= sim::GiB(70);
  const int64_t default_budget =
      v1 ? (big_gpu ? 8192 : 2048) : std::max<int64_t>(s.max_model_len, 2048);
  s.max_num_batched_tokens = sc.get_int_in("max_num_batched_tokens", default_budget,
                                           "token budget of one step", 1, 100'000'000);
  s.max_num_seqs = sc.get_int_in("max_num_seqs", 256, "requests running at once at most", 1, 1'000'000);
  if (!s.enable_chunked_prefill && s.max_num_batched_tokens < s.max_model_len) {
    sc.fail("max_num_batched_tokens",
            std::to_string(s.max_num_batched_tokens) + " is below max_model_len (" +
                std::to_string(s.max_model_len) +
                "): without chunked prefill a prompt must fit in one step (vLLM refuses this)");
  }
  if (s.max_num_batched_tokens < s.max_num_seqs) {
    sc.fail("max_num_batched_tokens", "must be at least max_num_seqs (" +
                                          std::to_string(s.max_num_seqs) + "), as vLLM requires");
  }
  s.enable_prefix_caching = sc.get_bool("enable_prefix_caching", v1,
                                        "reuse KV blocks of identical prefixes (V1 default on)");
  const std::string pre = sc.get_choice("preemption", {"recompute", "swap"}, std::string("recompute"),
                                        "recompute (free, redo later) | swap (to CPU, V0 only)");
  s.preemption = pre == "swap" ? inf::PreemptionMode::swap : inf::PreemptionMode::recompute;
  if (v1 && s.preemption == inf::PreemptionMode::swap) {
    sc.fail("preemption", "vllm-v1 preempts by recompute only");
  }
  s.watermark = sc.get_double("watermark", 0.01, "V0: fraction of blocks admission keeps free");
  if (!(s.watermark >= 0 && s.watermark < 1)) sc.fail("watermark", "must lie in [0, 1)");
  s.long_prefill_token_threshold = sc.get_int_in(
      "long_prefill_token_threshold", 0, "V1: most tokens one request gets per step (0: no cap)", 0);
  c.max_capture_size = sc.get_int_in("max_capture_size", v1 ? 512 : 256,
                                     "largest CUDA-graph batch (tokens)", 1, 100'000);
  sc.finish();

  // --- disaggregation ---
  if (sv.has("disaggregation")) {
    ConfigReader d = sv.child("disaggregation", "separate prefill and decode pools");
    auto& dg = c.disaggregation;
    dg.enabled = true;
    dg.prefill_replicas = static_cast<int>(d.get_int_in("prefill_replicas", 1, "prefill replicas", 1, 1'000'000));
    dg.decode_replicas = static_cast<int>(d.get_int_in("decode_replicas", 1, "decode replicas (tp, ep from serving)", 1, 1'000'000));
    dg.prefill_tp = static_cast<int>(d.get_int_in("prefill_tp", c.parallel.tp, "TP of a prefill replica", 1, 1024));
    dg.layerwise = d.get_bool("layerwise", false, "send each layer's KV as soon as it is computed");
    dg.layers_per_transfer = static_cast<int>(d.get_int_in(
        "layers_per_transfer", 1, "layerwise: layers grouped into one transfer", 1, 100'000));
    if (!v1) d.fail_here("disaggregation needs scheduler.mode vllm-v1 (as vLLM's KV connectors)");
    if (c.parallel.pp != 1) d.fail_here("disaggregation with pp > 1 is not modelled");
    inf::ParallelShape pp{dg.prefill_tp, 1, 1};
    check_parallel(d, m, pp, "prefill_tp");
    const int a = dg.prefill_tp, b = c.parallel.tp;
    if (a % b != 0 && b % a != 0) d.fail("prefill_tp", "must divide or be a multiple of serving.tp");
    // The resolved config carries the default replicas: 1, so only another
    // number is a request that disaggregation leaves unmet.
    if (c.replicas != 1) {
      notes.push_back("serving.replicas: " + std::to_string(c.replicas) +
                      " is ignored with disaggregation (prefill_replicas and decode_replicas set "
                      "the count)");
    }
    d.finish();
  }

  // --- speculative decoding ---
  if (sv.has("speculative")) {
    ConfigReader sp = sv.child("speculative", "speculative decoding");
    auto& spec = c.speculative;
    const std::string method = sp.get_choice("method", {"draft_model", "mtp", "ngram"}, std::nullopt,
                                             "draft_model (a small model) | mtp (one extra layer, "
                                             "DeepSeek) | ngram (prompt lookup, no GPU cost)");
    spec.method = method == "draft_model" ? inf::SpecMethod::draft_model
                  : method == "mtp"       ? inf::SpecMethod::mtp
                                          : inf::SpecMethod::ngram;
    spec.num_tokens = sp.get_int_in("num_tokens", 3, "draft tokens per step", 1, 64);
    spec.acceptance_rate = sp.get_double("acceptance_rate", 0.7,
                                         "probability each draft token is accepted (until one is not)");
    if (!(spec.acceptance_rate >= 0 && spec.acceptance_rate <= 1)) {
      sp.fail("acceptance_rate", "must lie in [0, 1]");
    }
    if (spec.method == inf::SpecMethod::draft_model) {
      spec.draft = read_model(sp);
      if (spec.draft.heads % c.parallel.tp != 0) {
        sp.fail("model", "the draft model's heads must divide over tp = " + std::to_string(c.parallel.tp));
      }
    } else if (sp.has("model")) {
      sp.fail("model", "only method draft_model takes a model");
    }
    c.scheduler.num_spec_tokens = spec.num_tokens;
    sp.finish();
  }
  sv.finish();

  // --- requests and SLOs ---
  c.requests = read_requests(w, c.rate_search, setup->trace_path, limits);
  setup->estimate.memory_bytes = kBaseBytes + static_cast<double>(c.requests.count) * kBytesPerRequest;
  setup->estimate.events = static_cast<double>(c.requests.count) * kEventsPerRequest;
  ConfigReader slo = w.child("slo", "service-level objectives per request");
  const auto read_slo = [&](const char* key, const char* doc) -> std::optional<sim::Duration> {
    if (!slo.has(key)) {
      slo.allow(key);
      return std::nullopt;
    }
    const sim::Duration d = slo.get_duration(key, std::nullopt, doc);
    if (d <= sim::Duration::zero()) slo.fail(key, "must be positive");
    return d;
  };
  c.slo.ttft = read_slo("ttft", "time to first token at most");
  c.slo.tpot = read_slo("tpot", "time per output token at most");
  c.slo.e2e = read_slo("e2e", "end-to-end latency at most");
  slo.finish();
  if (c.rate_search.enabled && !c.slo.any()) {
    w.fail("slo", "requests.arrival.rate: search needs at least one SLO (ttft, tpot, e2e)");
  }

  // --- the cluster must hold the deployment ---
  const int gpus = c.total_gpus();
  if (gpus > cluster.total_gpus()) {
    sv.fail(c.disaggregation.enabled ? "disaggregation" : "replicas",
            "the deployment needs " + std::to_string(gpus) + " GPUs but the cluster has " +
                std::to_string(cluster.total_gpus()));
  }
  if (gpus < cluster.total_gpus()) {
    notes.push_back("serving uses " + std::to_string(gpus) + " of the cluster's " +
                    std::to_string(cluster.total_gpus()) + " GPUs");
  }

  // --- memory, as vLLM's start-up profiling finds it ---
  const auto plan = [&](inf::ParallelShape p) {
    inf::MemoryInputs in;
    in.weights = c.dtype;
    in.kv = c.kv_dtype;
    in.parallel = p;
    in.capacity = cluster.gpu.hbm_capacity;
    in.gpu_memory_utilization = c.gpu_memory_utilization;
    in.block_size = s.block_size;
    in.max_num_batched_tokens = s.max_num_batched_tokens;
    in.max_num_seqs = s.max_num_seqs;
    in.non_torch = c.non_torch_memory;
    return inf::plan_memory(m, in);
  };
  const auto check_fit = [&](const inf::MemoryPlan& p, const std::string& key, const std::string& what) {
    if (!p.weights_fit()) {
      sv.fail(key, what + ": the model does not fit in GPU memory: " + gib(p.weights.as_double()) +
                       " of weights + " + gib(p.activations.as_double()) + " of activations + " +
                       gib(p.non_torch.as_double()) + " non-torch per GPU exceed " +
                       fmt("%g", c.gpu_memory_utilization) + " x " + gib(p.capacity.as_double()) +
                       "; raise tp or pp");
    }
    const int64_t need = (s.max_model_len + s.block_size - 1) / s.block_size;
    if (p.num_blocks < need) {
      sc.fail("max_model_len",
              what + ": one request of max_model_len = " + std::to_string(s.max_model_len) +
                  " tokens needs " + std::to_string(need) + " KV blocks but only " +
                  std::to_string(p.num_blocks) + " fit (" + gib(p.kv_cache.as_double()) + " left for KV at " +
                  std::to_string(p.block_bytes) + " B per block); lower max_model_len or raise "
                  "gpu_memory_utilization, tp or pp");
    }
  };
  setup->memory = plan(c.parallel);
  check_fit(setup->memory, "tp", c.disaggregation.enabled ? "decode replicas" : "each replica");
  if (c.disaggregation.enabled) {
    setup->prefill_memory = plan({c.disaggregation.prefill_tp, 1, 1});
    check_fit(setup->prefill_memory, "disaggregation", "prefill replicas");
  }
  if (c.speculative.method == inf::SpecMethod::draft_model) {
    // The draft model's weights share the GPUs: vLLM profiles both.
    const sim::Bytes draft = inf::weight_bytes_per_gpu(c.speculative.draft, c.dtype, {c.parallel.tp, 1, 1});
    setup->memory.weights += draft;
    setup->memory.kv_cache -= draft;
    setup->memory.num_blocks = std::max<int64_t>(0, setup->memory.kv_cache.count() / setup->memory.block_bytes);
    check_fit(setup->memory, "speculative", "with the draft model");
    notes.push_back("speculative decoding: the draft model's own KV cache is not modelled");
  }
  return setup;
}

}  // namespace gcsim::cli
