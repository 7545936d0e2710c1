// cluster.clocks through the command line: a training step runs its tensor
// work at the GPU's sustained (power-capped) clocks by default, a graph
// under the power model from rest, and any can be chosen; bad values are
// exit-2 errors.
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_bad_config;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

const char* const kGemm = gcsim::test::kH100Gemm8192;

}  // namespace

TEST_CASE("a GEMM at sustained clocks takes 1/0.854 of its rested tile time", "[scenario][clocks]") {
  const auto rested = run_summary(kGemm);
  const auto forced_rested = run_summary(kGemm, {"-s", "cluster.clocks=rested"});
  CHECK(rested["ops"][0]["end_s"] == forced_rested["ops"][0]["end_s"]);
  // The default is `auto`: the power model for a graph (README, "Clocks
  // from a power model"), which starts on a rested GPU, so one GEMM runs at
  // full clock, as `rested` does.
  CHECK(rested["config"]["cluster"]["clocks"] == "auto");
  const auto model = run_summary(kGemm, {"-s", "cluster.clocks=model"});
  CHECK(model["ops"][0]["end_s"] == rested["ops"][0]["end_s"]);
  const auto sustained = run_summary(kGemm, {"-s", "cluster.clocks=sustained"});
  // The 16 waves by hand (h100_gemm8192_waves_s), the arithmetic derated by
  // the H100's measured 0.854 (configs/hardware/h100-sxm.yaml), after the
  // 2 us launch.
  CHECK(rested["ops"][0]["end_s"].get<double>() ==
        Approx(2e-6 + gcsim::test::h100_gemm8192_waves_s(0.81)).epsilon(1e-6));
  CHECK(sustained["ops"][0]["end_s"].get<double>() ==
        Approx(2e-6 + gcsim::test::h100_gemm8192_waves_s(0.81 * 0.854)).epsilon(1e-6));
  CHECK(sustained["hardware"]["efficiency"]["tensor"]["bf16"].get<double>() == Approx(0.81 * 0.854));
}

TEST_CASE("training runs at sustained clocks unless told rested", "[scenario][clocks][training]") {
  const std::string config = R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: training
  model: {layers: 4, hidden: 4096, heads: 32, vocab: 32000, seq_len: 2048}
  batch: {global: 8, micro: 1}
  parallelism: {tp: 8, pp: 1, dp: 1}
)";
  const auto sustained = run_summary(config);
  const auto rested = run_summary(config, {"-s", "cluster.clocks=rested"});
  const double ts = sustained["step_time_s"].get<double>(), tr = rested["step_time_s"].get<double>();
  // Only the tensor-core share of the step slows, by at most 1/0.854.
  CHECK(ts > tr * 1.03);
  CHECK(ts < tr / 0.854);
  // MFU keeps the datasheet peak as its denominator: it falls with the step.
  CHECK(sustained["mfu"].get<double>() == Approx(rested["mfu"].get<double>() * tr / ts).epsilon(1e-9));
}

TEST_CASE("serving under the clock model: from rest at f_max, steady at the step's periodic clock",
          "[scenario][clocks][serving]") {
  // The serving validation's 8192-token TP2 prefill (calibration/validation/
  // serving, which runs it with clock_start: steady: the bench ran it back
  // to back). From rest (the default for serving) its one step starts with
  // the governor's filters at zero: f_max, the rested step. From its
  // periodic state the step repeated back to back holds the board at the
  // cap: a clock below f_max and above back-to-back GEMMs' 1349 MHz (the
  // step's eager passes and collectives lower its mean activity), its GEMMs
  // slower than rested, faster than at `sustained` (x0.852 on every GEMM).
  const std::string config = gcsim::test::read_text(
      gcsim::test::source_path("calibration/validation/serving/tp2_prefill_s8192.yaml"));
  const auto from_rest = run_summary(config, {"-s", "cluster.clock_start=rest"});
  const auto steady = run_summary(config);
  const auto rested = run_summary(config, {"-s", "cluster.clocks=rested"});
  const auto sustained = run_summary(config, {"-s", "cluster.clocks=sustained"});
  const auto step = [](const nlohmann::ordered_json& s) {
    return s["breakdown"]["prefill_steps"]["mean_step_s"].get<double>();
  };
  const auto mhz = [](const nlohmann::ordered_json& s) {
    return s["breakdown"]["prefill_steps"]["mean_sm_clock_mhz"].get<double>();
  };
  CHECK(step(from_rest) == step(rested));
  CHECK(mhz(from_rest) == 1980.0);
  CHECK(mhz(steady) < 1980.0);
  CHECK(mhz(steady) > 1349.0);
  CHECK(step(steady) > step(rested));
  CHECK(step(steady) < step(sustained));
  // rested and sustained report no modelled clock or energy.
  CHECK_FALSE(rested["breakdown"]["prefill_steps"].contains("mean_sm_clock_mhz"));
  CHECK_FALSE(rested.contains("energy"));
  // Energy: the one step's replica (2 GPUs) over the step is the run's
  // (the run ends with the step), one output token. In the periodic state
  // below f_max the step draws a constant power (one clock, its mean
  // activity) that its filters, settled on it, hold at the cap: every GPU
  // draws the preset's cap_w, 697.4 W (both loops' caps), to the fixed
  // point's tolerance.
  const auto& e = steady["energy"];
  CHECK(e["per_step_j"].get<double>() == Approx(e["total_j"].get<double>()).epsilon(1e-9));
  CHECK(e["per_output_token_j"].get<double>() == Approx(e["total_j"].get<double>()).epsilon(1e-9));
  CHECK(e["mean_power_w_per_gpu"].get<double>() == Approx(697.4).epsilon(1e-5));
  CHECK(e["total_j"].get<double>() == Approx(697.4 * 2 * step(steady)).epsilon(1e-5));
  bool says_model = false, says_rested = false;
  for (const auto& n : steady["notes"]) {
    const auto text = n.get<std::string>();
    says_model |= text.find("serving steps at SM clocks from the power model") != std::string::npos;
    says_rested |= text.find("serving runs at rested clocks") != std::string::npos;
  }
  CHECK(says_model);
  CHECK_FALSE(says_rested);
}

TEST_CASE("bad clocks and sustained fractions are exit-2 errors naming the key", "[scenario][clocks][cli]") {
  CHECK(run_bad_config(kGemm, {"-s", "cluster.clocks=fast"}).find("cluster.clocks") != std::string::npos);
  const std::string inline_gpu = R"(cluster:
  gpu: {preset: h100-sxm, sustained_tensor_fraction: 1.5}
  nodes: 1
  gpus_per_node: 1
workload:
  kind: graph
  ops:
    - {name: g, rank: 0, op: gemm, m: 64, n: 64, k: 64}
)";
  const std::string err = run_bad_config(inline_gpu, {});
  CHECK(err.find("sustained_tensor_fraction") != std::string::npos);
  CHECK(err.find("config.yaml:2") != std::string::npos);
}

TEST_CASE("power parameters outside their physical ranges are exit-2 errors naming the key",
          "[scenario][clocks][power][cli]") {
  auto with_power = [](const std::string& power) {
    return "cluster:\n  gpu: {preset: h100-sxm, power: " + power + "}\n  nodes: 1\n  gpus_per_node: 1\n" +
           "workload:\n  kind: graph\n  ops:\n    - {name: g, rank: 0, op: gemm, m: 64, n: 64, k: 64}\n";
  };
  std::string err = run_bad_config(with_power("{tensor_w: 5000}"), {});
  CHECK(err.find("tensor_w") != std::string::npos);
  CHECK(err.find("config.yaml:2") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  err = run_bad_config(with_power("{time_constant: 10s}"), {});
  CHECK(err.find("time_constant") != std::string::npos);
  err = run_bad_config(with_power("{idle_w: 200, cap_w: 150}"), {});
  CHECK(err.find("idle_w") != std::string::npos);
  err = run_bad_config(with_power("{tensr_w: 900}"), {});
  CHECK(err.find("tensr_w") != std::string::npos);
  err = run_bad_config(with_power("{cap_w: -1}"), {});
  CHECK(err.find("cap_w") != std::string::npos);
  // The fast loop: its cap over the board cap, its window, and that window
  // against the slow one.
  err = run_bad_config(with_power("{fast_cap_w: 2000}"), {});
  CHECK(err.find("fast_cap_w") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  err = run_bad_config(with_power("{fast_cap_w: 750, fast_time_constant: 200ms}"), {});
  CHECK(err.find("fast_time_constant") != std::string::npos);
  err = run_bad_config(with_power("{fast_cap_w: 750, fast_time_constant: 40ms, time_constant: 30ms}"), {});
  CHECK(err.find("shorter than time_constant") != std::string::npos);
  err = run_bad_config(with_power("{fast_cap_w: -5}"), {});
  CHECK(err.find("fast_cap_w") != std::string::npos);
  // The instantaneous limiter: its cap over the board cap (1.0-1.6), not
  // negative; fused attention's tensor share in [0.3, 1].
  err = run_bad_config(with_power("{instant_cap_w: 1500}"), {});
  CHECK(err.find("instant_cap_w") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  CHECK(err.find("config.yaml:2") != std::string::npos);
  err = run_bad_config(with_power("{instant_cap_w: 600}"), {});
  CHECK(err.find("instant_cap_w") != std::string::npos);
  err = run_bad_config(with_power("{instant_cap_w: -1}"), {});
  CHECK(err.find("instant_cap_w") != std::string::npos);
  err = run_bad_config(with_power("{attention_tensor_share: 0.1}"), {});
  CHECK(err.find("attention_tensor_share") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  err = run_bad_config(with_power("{idle_w: 120}"), {"-s", "cluster.gpu.power.instant_cap_w=abc"});
  CHECK(err.find("instant_cap_w") != std::string::npos);
  // Its sustained cap: between cap_w and instant_cap_w, and only with one.
  err = run_bad_config(with_power("{instant_sustained_w: 800}"), {});
  CHECK(err.find("instant_sustained_w") != std::string::npos);
  CHECK(err.find("config.yaml:2") != std::string::npos);
  err = run_bad_config(with_power("{instant_cap_w: 860, instant_sustained_w: 600}"), {});
  CHECK(err.find("instant_sustained_w") != std::string::npos);
  err = run_bad_config(with_power("{instant_cap_w: 860, instant_sustained_w: 900}"), {});
  CHECK(err.find("instant_sustained_w") != std::string::npos);
  // A -s override names itself.
  err = run_bad_config(with_power("{idle_w: 120}"), {"-s", "cluster.gpu.power.clock_bound_share=3"});
  CHECK(err.find("clock_bound_share") != std::string::npos);
  err = run_bad_config(with_power("{hbm_device_share: 0.05}"), {});
  CHECK(err.find("hbm_device_share") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  err = run_bad_config(with_power("{idle_w: 120}"), {"-s", "cluster.gpu.power.hbm_device_share=abc"});
  CHECK(err.find("hbm_device_share") != std::string::npos);
  err = run_bad_config(with_power("{memory_issue_share: 1.2}"), {});
  CHECK(err.find("memory_issue_share") != std::string::npos);
  CHECK(err.find("config.yaml:2") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  err = run_bad_config(with_power("{activity_hold: 5ms}"), {});
  CHECK(err.find("activity_hold") != std::string::npos);
  CHECK(err.find("physical range") != std::string::npos);
  err = run_bad_config(with_power("{idle_w: 120}"), {"-s", "cluster.gpu.power.activity_hold=abc"});
  CHECK(err.find("activity_hold") != std::string::npos);
}

TEST_CASE("a training step under the power model reports its energy and clock counters",
          "[scenario][clocks][power][training]") {
  const std::string config = R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: training
  model: {layers: 4, hidden: 4096, heads: 32, vocab: 32000, seq_len: 2048}
  batch: {global: 8, micro: 1}
  parallelism: {tp: 8, pp: 1, dp: 1}
)";
  TempDir tmp;
  write_text(tmp / "c.yaml", config);
  const auto r = run_gcsim({"run", (tmp / "c.yaml").string(), "-q", "--trace", "-s", "cluster.clocks=model",
                            "-o", (tmp / "out").string()});
  REQUIRE(r.exit_status == 0);
  const auto j = gcsim::test::read_json(tmp / "out" / "summary.json");
  REQUIRE(j.contains("energy"));
  const auto& e = j["energy"];
  const double step = j["step_time_s"].get<double>();
  const double tokens = j["model"]["tokens_per_step"].get<double>();
  // Per step = 8 GPUs x the observed GPU's energy; per token = per step / 16384 tokens.
  CHECK(e["per_step_j"].get<double>() == Approx(8 * e["per_gpu_j"].get<double>()));
  CHECK(e["per_token_j"].get<double>() == Approx(e["per_step_j"].get<double>() / tokens));
  CHECK(e["mean_power_w_per_gpu"].get<double>() == Approx(e["per_gpu_j"].get<double>() / step));
  // A step of GEMMs, norms and TP all-reduces: above idle, at most the cap
  // (the governor holds the averaged power there; the step starts hot).
  const double w = e["mean_power_w_per_gpu"].get<double>();
  const double idle = j["hardware"]["power"]["idle_w"].get<double>();
  CHECK(w > idle + 100.0);
  CHECK(w <= 700.0 * 1.01);
  const std::string trace = gcsim::test::read_text(tmp / "out" / "trace.json");
  CHECK(gcsim::test::contains(trace, "SM clock (MHz)"));
  CHECK(gcsim::test::contains(trace, "board power (W)"));
  // The same config and seed give the same summary (energy included).
  const auto again = run_summary(config, {"-s", "cluster.clocks=model"});
  CHECK(again["energy"] == j["energy"]);
}
