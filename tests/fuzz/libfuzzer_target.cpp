// The libFuzzer target (clang -fsanitize=fuzzer,address): each input is a
// config, loaded as `gcsim check` loads it. A ConfigError is the expected
// answer to bad input; any other exception escapes, and libFuzzer reports
// it (with AddressSanitizer's crashes, leaks, timeouts and out-of-memory)
// as a finding. The custom mutator is the structure-aware one of gcsim_fuzz
// half the time and libFuzzer's own byte mutations the other half, so
// coverage guidance works on both. See README, "Fuzzing".
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/engine/random.h"
#include "tests/fuzz/config_harness.h"
#include "tests/fuzz/config_mutator.h"

namespace {

std::unique_ptr<gcsim::fuzz::FuzzWorkspace> workspace;
std::unique_ptr<gcsim::fuzz::ConfigMutator> mutator;

// The seeds the mutator mines for keys, values and donor subtrees: the
// committed corpus, whatever folders libFuzzer is given.
std::vector<std::string> read_seeds(const std::filesystem::path& dir) {
  std::vector<std::string> seeds;
  if (!std::filesystem::is_directory(dir)) return seeds;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    seeds.push_back(ss.str());
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  workspace = std::make_unique<gcsim::fuzz::FuzzWorkspace>(GCSIM_SOURCE_DIR);
  workspace->warm_up();
  mutator = std::make_unique<gcsim::fuzz::ConfigMutator>(
      read_seeds(std::filesystem::path(GCSIM_SOURCE_DIR) / "tests/fuzz/corpus"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  workspace->check(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  gcsim::sim::RandomStream rng(seed, "libfuzzer");
  if (rng.uniform_int(2) == 0) return LLVMFuzzerMutate(data, size, max_size);
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::string out = mutator->mutate(in, rng, max_size);
  std::copy(out.begin(), out.end(), data);
  return out.size();
}
