// Runs the built `gcsim` executable as a user would, for scenario and
// bad-input tests: arguments in, exit status and the two output streams out.
// Tests that need files get a TempDir, removed when it goes out of scope,
// and read summary.json with read_json().
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gcsim::test {

struct GcsimResult {
  int exit_status = -1;  // the process's exit code; 128 + signal if it was killed
  std::string out;       // everything it wrote to stdout
  std::string err;       // everything it wrote to stderr
};

// Runs GCSIM_BINARY with `args` (not including argv[0]), waits for it and
// captures stdout and stderr separately.
GcsimResult run_gcsim(const std::vector<std::string>& args);

// A fresh directory under the system temp dir (unique per process and call),
// deleted recursively on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// GCSIM_SOURCE_DIR/relative: a file of the repository, as an absolute path.
std::string source_path(const std::string& relative);

std::string read_text(const std::filesystem::path& path);

// Whether `text` holds `part` (messages and reports in the scenario tests).
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
void write_text(const std::filesystem::path& path, const std::string& text);
// Parses a JSON file, keeping key order (so re-dumping is byte-stable).
nlohmann::ordered_json read_json(const std::filesystem::path& path);

// Runs `gcsim sweep` on the repository's study config `study` into `out`
// (two jobs, quiet), requires exit status 0 and returns results.csv as rows
// keyed by its header (quoted fields keep their commas).
std::vector<std::map<std::string, std::string>> run_study(const std::string& study,
                                                          const std::filesystem::path& out);

// Writes `yaml` to a temporary config, runs `gcsim run` on it (quiet, plus
// `extra` arguments), requires exit status 0 and returns its summary.json.
nlohmann::ordered_json run_summary(const std::string& yaml, std::vector<std::string> extra = {});

// The same for bad input: checks exit status 2 and returns stderr.
std::string run_bad_config(const std::string& yaml, std::vector<std::string> extra = {});

// One 8192^3 bf16 GEMM on one H100 (2048 tiles of 128x256 in 16 waves), with
// the preset's rounded efficiencies (`calibration: none`) that hand figures use.
inline constexpr const char* kH100Gemm8192 =
    R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, calibration: none}
workload:
  kind: graph
  ops:
    - {name: g, rank: 0, op: gemm, m: 8192, n: 8192, k: 8192}
)";

// One wave of a bf16 K^3 GEMM's 128x256 tiles by hand, ps, as the model
// times it: a tile's arithmetic (2*128*256*K flop at `tensor_flops_per_s`
// over the GPU's 132 SMs) and its bytes (A, B and C once over the K^2 /
// 32768 tiles: 196608 B for every K) at `hbm_bytes_per_s` shared by the
// wave's `sms` SMs, each rounded to 1 ps, overlapped as the p = 4 norm of
// models/gpu/kernel_cost_model.h (kGemmOverlapKnee), + 1 us per wave.
inline int64_t gemm_wave_ps(double k, double tensor_flops_per_s, double hbm_bytes_per_s, int sms) {
  const double compute = std::round(2.0 * 128 * 256 * k / (tensor_flops_per_s / 132) * 1e12);
  const double memory = std::round(196608.0 / (hbm_bytes_per_s / sms) * 1e12);
  return std::llround(std::pow(std::pow(compute, 4) + std::pow(memory, 4), 0.25)) + 1'000'000;
}

// kH100Gemm8192's 2048 tiles by hand, s: 15 waves of 132 and a last of 68,
// at 989.4e12 x `tensor_efficiency` flop/s (88.29 us of arithmetic a tile at
// the preset's 0.81) and the preset's 3350e9 x 0.90 B/s (8.608 us of bytes
// on 132 SMs).
inline double h100_gemm8192_waves_s(double tensor_efficiency = 0.81) {
  const double flops = 989.4e12 * tensor_efficiency, bytes = 3350e9 * 0.90;
  return static_cast<double>(15 * gemm_wave_ps(8192, flops, bytes, 132) + gemm_wave_ps(8192, flops, bytes, 68)) *
         1e-12;
}

// TP 2 x PP 2 (1F1B) x DP 2 on one HGX node of H100s, flow network: a
// ~5 ms step with kernels, TP all-reduces, pipeline sends and receives, DP
// reduce-scatters and memory. `cluster_extra`: more keys of the cluster map
// (", clocks: model").
inline std::string small_hgx_training(const std::string& cluster_extra = "") {
  return "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8" + cluster_extra +
         R"(, scale_up: {kind: nvswitch}, scale_out: {topology: none}}
network: {model: flow}
workload:
  kind: training
  model: {layers: 4, hidden: 1024, heads: 16, vocab: 32000, seq_len: 1024}
  batch: {global: 8, micro: 1}
  parallelism: {tp: 2, pp: 2, dp: 2, schedule: 1f1b}
  optimizer: {kind: adam, zero_stage: 1}
)";
}

}  // namespace gcsim::test
