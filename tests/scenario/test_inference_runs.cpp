// Inference runs through the gcsim binary: the summary.json contract of
// DESIGN.md, byte-identical reruns, the trace's steps and KV counters, the
// rate search, `gcsim check` round-trips, Llama-2-70B TP8 latency
// relations, and the speed target (10,000 requests over 8 replicas).
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using gcsim::test::write_text;
using Json = nlohmann::ordered_json;

namespace {

const char* kSmall = R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, scale_up: {kind: nvswitch}, scale_out: {topology: none}}
workload:
  kind: inference
  model: {preset: llama3-8b}
  serving: {tp: 1}
  requests:
    count: 60
    arrival: {kind: poisson, rate: 4}
    prompt_len: 512
    output_len: 64
)";

std::string strip_wall_time(const std::string& s) {
  std::string out, line;
  std::istringstream in(s);
  while (std::getline(in, line)) {
    if (line.find("\"wall_time_s\"") == std::string::npos) out += line + "\n";
  }
  return out;
}

// Llama-2-70B (Llama 3 70B's shape, 32,000-token vocabulary) at TP8 on one
// HGX H100, `count` requests at once.
std::string llama2_70b(int count, int prompt, int output) {
  return R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8, scale_up: {kind: nvswitch}, scale_out: {topology: none}}
workload:
  kind: inference
  model: {preset: llama3-70b, name: llama2-70b, vocab: 32000, seq_len: 4096}
  serving: {tp: 8}
  requests:
    count: )" + std::to_string(count) + R"(
    arrival: {kind: burst}
    prompt_len: )" + std::to_string(prompt) + R"(
    output_len: )" + std::to_string(output) + "\n";
}

}  // namespace

TEST_CASE("inference summary.json carries the contract keys", "[scenario][inference]") {
  const Json s = run_summary(kSmall);
  CHECK(s["kind"] == "inference");
  for (const char* k : {"ttft_s", "tpot_s", "itl_s", "e2e_s"}) {
    INFO(k);
    for (const char* p : {"mean", "p50", "p90", "p99"}) CHECK(s[k][p].is_number());
    CHECK(s[k]["p50"].get<double>() <= s[k]["p99"].get<double>());
  }
  CHECK(s["throughput"]["requests_per_s"].get<double>() > 0);
  CHECK(s["throughput"]["output_tokens_per_s"].get<double>() > 0);
  CHECK(s["preemptions"].is_number_integer());
  CHECK(s["kv_cache"]["blocks_total"].get<int64_t>() > 0);
  CHECK(s["kv_cache"]["peak_used_fraction"].get<double>() > 0);
  CHECK(s["kv_cache"]["peak_used_fraction"].get<double>() <= 1);
  CHECK(s["requests"]["completed"] == 60);
  CHECK(s["simulated_time_s"].get<double>() > 0);
  // Without SLOs there is no attainment or goodput.
  CHECK_FALSE(s.contains("slo_attainment"));
  CHECK_FALSE(s.contains("goodput_requests_per_s"));
  const Json t = run_summary(std::string(kSmall) + "  slo: {ttft: 1s, tpot: 50ms}\n");
  CHECK(t["slo_attainment"].get<double>() == 1.0);
  CHECK(t["goodput_requests_per_s"].get<double>() == t["throughput"]["requests_per_s"].get<double>());
  // An impossible TPOT: nobody meets it.
  const Json u = run_summary(std::string(kSmall) + "  slo: {tpot: 1ms}\n");
  CHECK(u["slo_attainment"].get<double>() == 0.0);
}

TEST_CASE("inference runs are byte-identical for a seed; the trace shows steps and KV use",
          "[scenario][inference]") {
  TempDir tmp;
  const std::string config = source_path("configs/examples/inference_llama3_8b.yaml");
  for (const char* dir : {"a", "b"}) {
    const GcsimResult r = run_gcsim({"run", config, "-o", (tmp / dir).string(), "--trace", "-q"});
    INFO(r.err);
    REQUIRE(r.exit_status == 0);
  }
  CHECK(strip_wall_time(read_text(tmp / "a" / "summary.json")) ==
        strip_wall_time(read_text(tmp / "b" / "summary.json")));
  const std::string ta = read_text(tmp / "a" / "trace.json");
  CHECK(ta == read_text(tmp / "b" / "trace.json"));
  const Json trace = Json::parse(ta);
  int steps = 0, counters = 0, mixed = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "step") {
      ++steps;
      mixed += e["args"]["prefills"].get<int>() > 0 && e["args"]["decodes"].get<int>() > 0;
    }
    if (e.value("ph", "") == "C" && e.value("name", "") == "KV blocks used") ++counters;
  }
  CHECK(steps > 200);
  CHECK(counters == steps);
  CHECK(mixed > 0);  // V1 mixes prefill chunks with decodes
  // Another seed, other arrivals.
  const GcsimResult c = run_gcsim({"run", config, "-o", (tmp / "c").string(), "--seed", "2", "-q"});
  REQUIRE(c.exit_status == 0);
  CHECK(read_json(tmp / "c" / "summary.json")["ttft_s"] !=
        read_json(tmp / "a" / "summary.json")["ttft_s"]);
}

TEST_CASE("the serving trace carries each step's SM clock and board power under the clock model",
          "[scenario][inference]") {
  // One prefill step of Llama-2-70B (80 layers, TP4, 8192 tokens): the
  // trace's counters against summary.json, by hand: the clock is the step's
  // (breakdown.prefill_steps.mean_sm_clock_mhz, the run's one step), the
  // power its energy over the replica's 4 GPUs and the step's length.
  TempDir tmp;
  const std::string cfg = source_path("calibration/validation/serving_l70_full/tp4_prefill_s8192.yaml");
  const GcsimResult r = run_gcsim({"run", cfg, "-s", "cluster.gpu=h100-sxm", "-o", (tmp / "m").string(),
                                   "--trace", "-q"});
  REQUIRE(r.exit_status == 0);
  const Json s = read_json(tmp / "m" / "summary.json");
  const Json& b = s["breakdown"]["prefill_steps"];
  REQUIRE(b["steps"].get<int>() == 1);
  const double step_s = b["mean_step_s"].get<double>();
  const double want_w = s["energy"]["per_step_j"].get<double>() / 4.0 / step_s;
  CHECK(want_w > s["hardware"]["power"]["idle_w"].get<double>());
  CHECK(want_w <= s["hardware"]["power"]["cap_w"].get<double>() * 1.001);
  int clocks = 0, powers = 0;
  const Json trace = read_json(tmp / "m" / "trace.json");  // kept: the loop reads into it
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "C") continue;
    if (e.value("name", "") == "SM clock (MHz)") {
      CHECK(e["args"]["value"].get<double>() == Approx(b["mean_sm_clock_mhz"].get<double>()).epsilon(1e-9));
      ++clocks;
    }
    if (e.value("name", "") == "board power (W)") {
      CHECK(e["args"]["value"].get<double>() == Approx(want_w).epsilon(1e-6));
      ++powers;
    }
  }
  CHECK(clocks == 1);
  CHECK(powers == 1);
  // Rested clocks (no clock model): neither counter.
  const GcsimResult q = run_gcsim({"run", cfg, "-s", "cluster.gpu=h100-sxm", "-s", "cluster.clocks=rested", "-o",
                                   (tmp / "r").string(), "--trace", "-q"});
  REQUIRE(q.exit_status == 0);
  const Json rested = read_json(tmp / "r" / "trace.json");  // kept: the loop reads into it
  for (const auto& e : rested["traceEvents"]) {
    CHECK(e.value("name", "") != "SM clock (MHz)");
    CHECK(e.value("name", "") != "board power (W)");
  }
}

TEST_CASE("rate: search finds the highest Poisson rate meeting the SLO target",
          "[scenario][inference]") {
  std::string cfg = kSmall;
  cfg.replace(cfg.find("rate: 4"), 7, "rate: search");
  cfg += "  slo: {tpot: 12ms}\n";
  const Json s = run_summary(cfg);
  const Json& rs = s["rate_search"];
  const double best = rs["best_rate"].get<double>();
  CHECK(best > 0);
  CHECK(s["requests"]["arrival_rate_per_s"].get<double>() == best);
  bool some_fail = false;
  for (const auto& p : rs["points"]) {
    // Every rate tried at or below the best one that met the target...
    if (p["rate"].get<double>() == best) CHECK(p["meets"] == true);
    some_fail = some_fail || !p["meets"].get<bool>();
    CHECK(p["meets"].get<bool>() == (p["slo_attainment"].get<double>() >= 0.9));
  }
  CHECK(some_fail);  // ...and the search saw the SLO break
  CHECK(s["slo_attainment"].get<double>() >= 0.9);
}

TEST_CASE("gcsim check prints an inference config that runs the same", "[scenario][inference]") {
  const std::string config = source_path("configs/examples/inference_prefix_caching.yaml");
  const GcsimResult c = run_gcsim({"check", config});
  INFO(c.err);
  REQUIRE(c.exit_status == 0);
  CHECK(c.out.find("block_size: 16") != std::string::npos);
  CHECK(c.out.find("max_num_batched_tokens: 8192") != std::string::npos);
  TempDir tmp;
  write_text(tmp / "resolved.yaml", c.out);
  const GcsimResult a = run_gcsim({"run", (tmp / "resolved.yaml").string(), "-o", (tmp / "a").string(), "-q"});
  const GcsimResult b = run_gcsim({"run", config, "-o", (tmp / "b").string(), "-q"});
  INFO(a.err << b.err);
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  CHECK(read_json(tmp / "a" / "summary.json")["e2e_s"] == read_json(tmp / "b" / "summary.json")["e2e_s"]);
}

TEST_CASE("Llama-2-70B at TP8: TTFT grows with the prompt, TPOT sublinearly with the batch",
          "[scenario][inference]") {
  // One request alone: TTFT is one prefill step, TPOT one decode step.
  const Json p512 = run_summary(llama2_70b(1, 512, 32));
  const Json p2048 = run_summary(llama2_70b(1, 2048, 32));
  const double ttft512 = p512["ttft_s"]["mean"].get<double>();
  const double ttft2048 = p2048["ttft_s"]["mean"].get<double>();
  CHECK(ttft2048 > 2.5 * ttft512);  // compute-bound: about 4x the tokens
  CHECK(ttft2048 < 5.0 * ttft512);
  // Decode reads 17.2 GB of weights per GPU per step (Llama-2-70B / 8 in
  // bf16) at 3.35 TB/s: at least 5.1 ms per token.
  const double tpot1 = p512["tpot_s"]["mean"].get<double>();
  CHECK(tpot1 > 17.25e9 / 3350e9);
  // 64 requests at once: once their prompts are in, each decode step
  // carries 64 tokens but reads the weights once, so the steady-state
  // token interval (ITL p50) grows far less than 64x. (Mean TPOT also
  // counts the steps that prefilled the others' prompts.)
  const Json b64 = run_summary(llama2_70b(64, 512, 32));
  const double itl64 = b64["itl_s"]["p50"].get<double>();
  CHECK(itl64 > p512["itl_s"]["p50"].get<double>());
  CHECK(itl64 < 2.0 * tpot1);
  CHECK(b64["tpot_s"]["mean"].get<double>() > itl64);
  // Requests arriving together are scheduled together: the 64 prompts
  // (32,768 tokens) fill four 8,192-token steps.
  CHECK(b64["ttft_s"]["p50"].get<double>() > 2 * ttft512);
}

TEST_CASE("10,000 requests over 8 replicas simulate within 10 s", "[scenario][inference][speed]") {
  const std::string cfg = R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8, scale_up: {kind: nvswitch}, scale_out: {topology: none}}
workload:
  kind: inference
  model: {preset: llama3-8b}
  serving: {tp: 1, replicas: 8, router: least_outstanding}
  requests:
    count: 10000
    arrival: {kind: poisson, rate: 60}
    prompt_len: {kind: uniform, min: 128, max: 2048}
    output_len: {kind: uniform, min: 16, max: 512}
)";
  const Json s = run_summary(cfg);
  CHECK(s["requests"]["completed"] == 10000);
  INFO("wall " << s["wall_time_s"].get<double>() << " s");
  CHECK(s["wall_time_s"].get<double>() < 10.0);
}
