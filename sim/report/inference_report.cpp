#include "sim/report/inference_report.h"

#include <algorithm>
#include <sstream>

#include "sim/report/format.h"
#include "sim/scenario/gpu_spec_loader.h"
#include "sim/report/network_report.h"
#include "sim/report/report_parts.h"
#include "sim/report/serving_step_classes.h"
#include "sim/engine/trace_writer.h"

namespace gcsim::cli {

using sim::config::Json;
namespace inf = workloads::inference;

namespace {

// Board energy under the clock model: every replica's GPUs from time zero
// to the run's end, idle between steps included (replica.h).
struct ServingEnergy {
  double total_j = 0, per_step_j = 0, per_output_token_j = 0, per_gpu_j = 0, mean_power_w_per_gpu = 0;
};

ServingEnergy serving_energy(const InferenceFigures& f) {
  ServingEnergy e;
  double steps_j = 0;
  int64_t steps = 0;
  for (const auto& r : f.outcome.replicas) e.total_j += r.energy_j;
  for (const auto& st : f.outcome.steps) steps_j += st.energy_j, ++steps;
  const double run_s = f.outcome.end.seconds();
  const int gpus = f.setup->serving.total_gpus();
  const int64_t tokens = f.metrics.output_tokens;
  e.per_step_j = steps > 0 ? steps_j / static_cast<double>(steps) : 0.0;
  e.per_output_token_j = tokens > 0 ? e.total_j / static_cast<double>(tokens) : 0.0;
  e.per_gpu_j = gpus > 0 ? e.total_j / gpus : 0.0;
  e.mean_power_w_per_gpu = gpus > 0 && run_s > 0 ? e.total_j / gpus / run_s : 0.0;
  return e;
}

std::string ms(double s) { return fmt("%.2f", s * 1e3); }

Json percentiles(const inf::Percentiles& p) {
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"count", p.count}};
}

int64_t total_blocks(const InferenceFigures& f) {
  int64_t n = 0;
  for (const auto& r : f.outcome.replicas) n += r.blocks_total;
  return n;
}

double peak_fraction(const InferenceFigures& f) {
  double peak = 0;
  for (const auto& r : f.outcome.replicas) {
    if (r.blocks_total > 0) {
      peak = std::max(peak, static_cast<double>(r.peak_used_blocks) / r.blocks_total);
    }
  }
  return peak;
}

Json memory_json(const inf::MemoryPlan& p) {
  return {{"capacity_bytes", p.capacity.count()},
          {"budget_bytes", p.budget.count()},
          {"weights_bytes_per_gpu", p.weights.count()},
          {"activation_peak_bytes_per_gpu", p.activations.count()},
          {"non_torch_bytes_per_gpu", p.non_torch.count()},
          {"kv_cache_bytes_per_gpu", p.kv_cache.count()},
          {"kv_bytes_per_token_per_gpu", p.bytes_per_token},
          {"block_bytes", p.block_bytes},
          {"num_gpu_blocks", p.num_blocks}};
}

std::string describe_step(const inf::StepRecord& s) {
  std::string n;
  if (s.prefills > 0) n += std::to_string(s.prefills) + " prefill (" + std::to_string(s.prefill_tokens) + " tok)";
  if (s.decodes > 0) n += std::string(n.empty() ? "" : " + ") + std::to_string(s.decodes) + " decode";
  return n.empty() ? "step" : n;
}

}  // namespace

Json build_inference_summary(const InferenceFigures& f) {
  const Scenario& s = *f.scenario;
  const inf::ServingConfig& c = f.setup->serving;
  const inf::ServingMetrics& m = f.metrics;
  Json j = Json::object();
  j["kind"] = s.workload_kind;
  j["status"] = "ok";
  j["simulated_time_s"] = f.outcome.end.seconds();
  j["events"] = f.events;
  j["wall_time_s"] = f.wall_time_s;
  j["gpus"] = c.total_gpus();
  j["gpu"] = s.cluster.gpu.name;
  j["model"] = c.model.name;
  j["ttft_s"] = percentiles(m.ttft);
  j["tpot_s"] = percentiles(m.tpot);
  j["itl_s"] = percentiles(m.itl);
  j["e2e_s"] = percentiles(m.e2e);
  j["throughput"] = {{"requests_per_s", m.requests_per_s},
                     {"output_tokens_per_s", m.output_tokens_per_s},
                     {"output_tokens_per_s_per_gpu", m.output_tokens_per_s / c.total_gpus()}};
  j["requests"] = {{"sent", static_cast<int64_t>(f.outcome.requests.size())},
                   {"completed", m.completed},
                   {"rejected", m.rejected},
                   {"arrival_rate_per_s", f.rate},
                   {"prompt_tokens", m.prompt_tokens},
                   {"output_tokens", m.output_tokens}};
  j["preemptions"] = f.outcome.preemptions;
  j["framework"] = inf::serving_framework_name(c.framework);
  j["breakdown"] = serving_step_classes_json(f.outcome.steps);
  if (s.cluster.clock_model) {
    const ServingEnergy e = serving_energy(f);
    Json ej = Json::object();
    ej["total_j"] = e.total_j;
    ej["per_step_j"] = e.per_step_j;
    ej["per_output_token_j"] = e.per_output_token_j;
    ej["per_gpu_j"] = e.per_gpu_j;
    ej["mean_power_w_per_gpu"] = e.mean_power_w_per_gpu;
    ej["source"] = "power model (cluster.clocks: model): board power of every GPU, idle included; "
                   "per_step_j: a step's replica over the step";
    j["energy"] = ej;
  }
  int64_t queried = 0, hits = 0;
  for (const auto& r : f.outcome.replicas) {
    queried += r.prefix_queried_tokens;
    hits += r.prefix_hit_tokens;
  }
  j["kv_cache"] = {{"blocks_total", total_blocks(f)},
                   {"block_size", c.scheduler.block_size},
                   {"peak_used_fraction", peak_fraction(f)},
                   {"prefix_hit_rate", queried > 0 ? static_cast<double>(hits) / queried : 0.0}};
  if (m.slo_attainment) {
    j["slo_attainment"] = *m.slo_attainment;
    j["goodput_requests_per_s"] = *m.goodput_requests_per_s;
  }
  j["littles_law"] = {
      {"mean_requests_in_system", inf::mean_requests_in_system(f.outcome.steps, f.outcome.end.seconds())},
      {"arrival_rate_x_mean_e2e", f.rate * m.e2e.mean}};
  Json memory = Json::object();
  memory["replica"] = memory_json(f.setup->memory);
  if (c.disaggregation.enabled) memory["prefill_replica"] = memory_json(f.setup->prefill_memory);
  memory["fits"] = true;
  j["memory"] = memory;
  Json reps = Json::array();
  for (const auto& r : f.outcome.replicas) {
    reps.push_back({{"index", r.index},
                    {"role", inf::role_name(r.role)},
                    {"first_rank", r.ranks.empty() ? 0 : r.ranks.front()},
                    {"gpus", r.ranks.size()},
                    {"requests", r.requests},
                    {"steps", r.steps},
                    {"busy_fraction", f.outcome.end.seconds() > 0 ? r.busy_s / f.outcome.end.seconds() : 0.0},
                    {"kv_blocks", r.blocks_total},
                    {"kv_peak_used_fraction",
                     r.blocks_total > 0 ? static_cast<double>(r.peak_used_blocks) / r.blocks_total : 0.0},
                    {"preemptions", r.preemptions}});
  }
  j["replicas"] = reps;
  if (!f.outcome.transfers.empty()) {
    double bytes = 0, time = 0;
    for (const auto& t : f.outcome.transfers) {
      bytes += t.bytes.as_double();
      time += (t.end - t.start).seconds();
    }
    j["kv_transfers"] = {{"count", static_cast<int64_t>(f.outcome.transfers.size())},
                         {"bytes", bytes},
                         {"mean_time_s", time / static_cast<double>(f.outcome.transfers.size())}};
  }
  if (!f.search.empty()) {
    Json pts = Json::array();
    for (const auto& p : f.search) {
      pts.push_back({{"rate", p.rate}, {"slo_attainment", p.slo_attainment},
                     {"goodput_requests_per_s", p.goodput}, {"meets", p.meets}});
    }
    j["rate_search"] = {{"target", c.rate_search.target}, {"best_rate", f.rate}, {"points", pts}};
  }
  if (f.network) j["network"] = network_summary(*f.network);
  j["comm_probes"] = f.comm_probes;
  j["notes"] = s.notes;
  j["hardware"] = gpu_spec_json(s.cluster.gpu);
  j["config"] = s.resolved;
  return j;
}

std::string build_inference_report(const InferenceFigures& f) {
  const Scenario& s = *f.scenario;
  const inf::ServingConfig& c = f.setup->serving;
  const inf::ServingMetrics& m = f.metrics;
  std::ostringstream o;
  o << "# gcsim report: " << s.config_path << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| workload | inference (" << (c.scheduler.mode == inf::SchedulerMode::v1 ? "vllm-v1" : "vllm-v0")
    << ") |\n";
  o << "| model | " << c.model.name << " |\n";
  if (c.disaggregation.enabled) {
    o << "| deployment | " << c.disaggregation.prefill_replicas << " prefill x TP"
      << c.disaggregation.prefill_tp << " + " << c.disaggregation.decode_replicas << " decode x TP"
      << c.parallel.tp << (c.disaggregation.layerwise ? ", KV sent layer by layer" : "") << " |\n";
  } else {
    o << "| deployment | " << c.replicas << " replica(s) x TP" << c.parallel.tp << " PP" << c.parallel.pp
      << (c.parallel.ep > 1 ? " EP" + std::to_string(c.parallel.ep) : "") << ", router "
      << inf::router_name(c.router) << " |\n";
  }
  o << "| cluster | " << s.cluster.nodes << " node(s) x " << s.cluster.gpus_per_node << " "
    << s.cluster.gpu.name << ", network " << s.network.model << " |\n";
  o << "| requests | " << f.outcome.requests.size() << " sent, " << m.completed << " completed, "
    << m.rejected << " rejected" << (f.rate > 0 ? ", " + fmt("%.3g", f.rate) + " req/s offered" : "")
    << " |\n";
  o << "| simulated time | " << fmt("%.3f s", f.outcome.end.seconds()) << " |\n";
  if (s.cluster.clock_model) {
    const ServingEnergy e = serving_energy(f);
    o << "| energy (all GPUs) | " << fmt("%.4g J", e.total_j) << " |\n";
    o << "| energy per output token | " << fmt("%.4g J", e.per_output_token_j) << " |\n";
    o << "| mean board power per GPU | " << fmt("%.0f W", e.mean_power_w_per_gpu) << " |\n";
  }
  o << "| seed | " << s.seed << " |\n\n";

  o << "## Latency (ms)\n\n| metric | mean | p50 | p90 | p99 |\n|---|---:|---:|---:|---:|\n";
  const auto row = [&](const char* name, const inf::Percentiles& p) {
    o << "| " << name << " | " << ms(p.mean) << " | " << ms(p.p50) << " | " << ms(p.p90) << " | "
      << ms(p.p99) << " |\n";
  };
  row("TTFT", m.ttft);
  row("TPOT", m.tpot);
  row("ITL", m.itl);
  row("E2E", m.e2e);
  o << "\nTPOT = (E2E - TTFT) / (output tokens - 1) per request; ITL pools every gap between "
       "tokens (vLLM benchmark_serving).\n\n";
  o << "## Throughput\n\n| | |\n|---|---:|\n";
  o << "| requests/s | " << fmt("%.3f", m.requests_per_s) << " |\n";
  o << "| output tokens/s | " << fmt("%.1f", m.output_tokens_per_s) << " |\n";
  o << "| output tokens/s per GPU | " << fmt("%.1f", m.output_tokens_per_s / c.total_gpus()) << " |\n";
  o << "| preemptions | " << f.outcome.preemptions << " |\n";
  if (m.slo_attainment) {
    o << "| SLO attainment | " << fmt("%.1f%%", 100 * *m.slo_attainment) << " |\n";
    o << "| goodput (requests/s) | " << fmt("%.3f", *m.goodput_requests_per_s) << " |\n";
  }
  if (f.rate > 0) {
    o << "| Little's law: mean requests in the engines / (arrival rate x mean E2E) | "
      << fmt("%.3g", inf::mean_requests_in_system(f.outcome.steps, f.outcome.end.seconds())) << " / "
      << fmt("%.3g", f.rate * m.e2e.mean) << " |\n";
  }
  if (!f.search.empty()) {
    o << "\n## Rate search (SLO attainment >= " << fmt("%.0f%%", 100 * c.rate_search.target)
      << ")\n\n| rate (req/s) | attainment | goodput | meets |\n|---:|---:|---:|---|\n";
    for (const auto& p : f.search) {
      o << "| " << fmt("%.4g", p.rate) << " | " << fmt("%.1f%%", 100 * p.slo_attainment) << " | "
        << fmt("%.3g", p.goodput) << " | " << (p.meets ? "yes" : "no") << " |\n";
    }
    o << "\nHighest rate meeting the target: **" << fmt("%.4g", f.rate) << " req/s**; the figures "
      << "above are that run's.\n";
  }
  o << "\n## Replicas\n\n| replica | role | GPUs | requests | steps | busy | KV blocks | peak KV use "
       "| preemptions |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : f.outcome.replicas) {
    o << "| " << r.index << " | " << inf::role_name(r.role) << " | " << r.ranks.size() << " | "
      << r.requests << " | " << r.steps << " | "
      << fmt("%.0f%%", f.outcome.end.seconds() > 0 ? 100 * r.busy_s / f.outcome.end.seconds() : 0)
      << " | " << r.blocks_total << " | "
      << fmt("%.1f%%", r.blocks_total > 0 ? 100.0 * r.peak_used_blocks / r.blocks_total : 0) << " | "
      << r.preemptions << " |\n";
  }
  o << serving_step_classes_markdown(f.outcome.steps);
  const auto mem = [&](const char* title, const inf::MemoryPlan& p) {
    o << "\n## Memory per GPU, " << title << "\n\n| | |\n|---|---:|\n";
    o << "| HBM x gpu_memory_utilization | " << gib(p.budget.as_double()) << " |\n";
    o << "| weights | " << gib(p.weights.as_double()) << " |\n";
    o << "| peak activations (profiling pass) | " << gib(p.activations.as_double()) << " |\n";
    o << "| non-torch | " << gib(p.non_torch.as_double()) << " |\n";
    o << "| KV cache | " << gib(p.kv_cache.as_double()) << " (" << p.num_blocks << " blocks of "
      << c.scheduler.block_size << " tokens, " << p.bytes_per_token << " B per token) |\n";
  };
  mem(c.disaggregation.enabled ? "decode replicas" : "each replica", f.setup->memory);
  if (c.disaggregation.enabled) mem("prefill replicas", f.setup->prefill_memory);
  if (!f.outcome.transfers.empty()) {
    double bytes = 0, t = 0, worst = 0;
    for (const auto& x : f.outcome.transfers) {
      bytes += x.bytes.as_double();
      t += (x.end - x.start).seconds();
      worst = std::max(worst, (x.end - x.start).seconds());
    }
    o << "\n## KV transfers\n\n" << f.outcome.transfers.size() << " transfers, "
      << gib(bytes) << " in all; mean " << ms(t / f.outcome.transfers.size()) << " ms, longest "
      << ms(worst) << " ms.\n";
  }
  o << report_tail(s, f.network);
  return o.str();
}

std::string inference_human_summary(const InferenceFigures& f, const std::string& out_dir,
                                    bool trace) {
  const Scenario& s = *f.scenario;
  const inf::ServingConfig& c = f.setup->serving;
  const inf::ServingMetrics& m = f.metrics;
  std::ostringstream o;
  o << "gcsim: " << s.config_path << "\n";
  o << "  inference: " << c.model.name << " on " << c.total_gpus() << " x " << s.cluster.gpu.name
    << ", seed " << s.seed << "\n";
  o << "  " << m.completed << " requests (" << m.rejected << " rejected) in "
    << fmt("%.3f", f.outcome.end.seconds()) << " s simulated, " << f.events << " events, "
    << fmt("%.3f", f.wall_time_s) << " s wall\n";
  o << "  TTFT mean " << ms(m.ttft.mean) << " ms p99 " << ms(m.ttft.p99) << " ms; TPOT mean "
    << ms(m.tpot.mean) << " ms p99 " << ms(m.tpot.p99) << " ms\n";
  o << "  " << fmt("%.2f", m.requests_per_s) << " req/s, " << fmt("%.0f", m.output_tokens_per_s)
    << " output tok/s; preemptions " << f.outcome.preemptions << "; KV blocks " << total_blocks(f)
    << ", peak use " << fmt("%.1f%%", 100 * peak_fraction(f)) << "\n";
  if (m.slo_attainment) {
    o << "  SLO attainment " << fmt("%.1f%%", 100 * *m.slo_attainment) << ", goodput "
      << fmt("%.3f", *m.goodput_requests_per_s) << " req/s";
    if (!f.search.empty()) o << "; highest rate meeting the target " << fmt("%.4g", f.rate) << " req/s";
    o << "\n";
  }
  for (const auto& n : s.notes) o << "  note: " << n << "\n";
  o << "  wrote " << out_dir << "/summary.json, report.md, report.html" << (trace ? ", trace.json" : "") << "\n";
  return o.str();
}

void write_inference_trace(const InferenceFigures& f, const std::string& path) {
  sim::TraceWriter t(path);
  const int replicas = static_cast<int>(f.outcome.replicas.size());
  for (const auto& r : f.outcome.replicas) {
    t.process_name(r.index, std::string("replica ") + std::to_string(r.index) + " (" +
                                inf::role_name(r.role) + ", GPUs " +
                                std::to_string(r.ranks.front()) + "-" +
                                std::to_string(r.ranks.back()) + ")");
    t.thread_name(r.index, 0, "engine steps");
  }
  for (const auto& s : f.outcome.steps) {
    std::ostringstream args;
    args << "{\"tokens\":" << s.tokens << ",\"prefills\":" << s.prefills
         << ",\"prefill_tokens\":" << s.prefill_tokens << ",\"decodes\":" << s.decodes
         << ",\"running\":" << s.running << ",\"waiting\":" << s.waiting
         << ",\"kv_used_blocks\":" << s.kv_used_blocks << ",\"preempted\":" << s.preempted
         << ",\"compute_us\":" << s.compute.microseconds()
         << ",\"communication_us\":" << s.communication.microseconds() << "}";
    t.span(s.replica, 0, describe_step(s), "step", s.start, s.end, args.str());
    t.counter(s.replica, "KV blocks used", s.start, static_cast<double>(s.kv_used_blocks));
    t.counter(s.replica, "running requests", s.start, static_cast<double>(s.running));
    t.counter(s.replica, "waiting requests", s.start, static_cast<double>(s.waiting));
    if (s.sm_clock_mhz > 0.0) {
      // Under the clock model, the training trace's two GPU counters: the
      // step's SM clock, and one GPU's board power over the step (the
      // replica's energy over its GPUs and the step's length).
      const double gpus = static_cast<double>(f.outcome.replicas[static_cast<size_t>(s.replica)].ranks.size());
      const double secs = (s.end - s.start).seconds();
      t.counter(s.replica, "SM clock (MHz)", s.start, s.sm_clock_mhz);
      if (secs > 0.0 && gpus > 0.0) t.counter(s.replica, "board power (W)", s.start, s.energy_j / gpus / secs);
    }
  }
  if (!f.outcome.transfers.empty()) {
    const int pid = replicas;
    t.process_name(pid, "KV transfers (prefill -> decode)");
    for (const auto& x : f.outcome.transfers) {
      const int tid = x.dst_rank;
      std::ostringstream args;
      const double secs = (x.end - x.start).seconds();
      args << "{\"request\":" << x.request << ",\"bytes\":" << x.bytes.count() << ",\"src_rank\":"
           << x.src_rank << ",\"dst_rank\":" << x.dst_rank << ",\"GBps\":"
           << (secs > 0 ? x.bytes.as_double() / secs * 1e-9 : 0.0) << "}";
      t.span(pid, tid, "KV req " + std::to_string(x.request), "kv", x.start, x.end, args.str());
    }
  }
  t.close();
}

}  // namespace gcsim::cli
