// gcsim_microbench: measures the kernels gcsim's compute model predicts
// (cuBLASLt GEMMs, HBM streams, memory-bound kernels, launch overhead) on
// the local GPU and writes one JSON file of records with provenance.
//
//   gcsim_microbench -o OUT.json [--quick] [--sections gemm,memory,launch] [--device N]
//
// Exit status: 0 done, 1 a CUDA/cuBLAS call or a correctness check failed,
// 2 bad arguments, 3 no CUDA device (gcsim calibrate reports it).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "check.h"
#include "gemm_bench.h"
#include "gpu_timer.h"
#include "json_writer.h"
#include "memory_bench.h"
#include "nvml_probe.h"

using namespace gcsim::microbench;

namespace {

constexpr const char* kVersion = "gcsim_microbench 1.0";

struct Args {
  std::string out;
  bool quick = false;
  std::string sections = "gemm,memory,launch";
  int device = 0;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (s == "-o" || s == "--out") a.out = value();
    else if (s == "--quick") a.quick = true;
    else if (s == "--sections") a.sections = value();
    else if (s == "--device") a.device = std::atoi(value().c_str());
    else return false;
  }
  return !a.out.empty();
}

bool wants(const Args& a, const char* section) {
  return ("," + a.sections + ",").find(std::string(",") + section + ",") != std::string::npos;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

JsonObject reading_json(const GpuReading& r) {
  JsonObject o;
  if (!r.ok) return o.add("available", false);
  return o.add("sm_mhz", static_cast<int>(r.sm_mhz)).add("mem_mhz", static_cast<int>(r.mem_mhz))
      .add("power_w", r.power_w).add("clock_event_reasons", static_cast<long long>(r.event_reasons));
}

void write_file(const std::string& path, const JsonObject& meta, const std::vector<JsonObject>& checks,
                const std::vector<JsonObject>& results) {
  JsonObject doc;
  doc.add("schema", "gcsim.microbench.v1").add("meta", meta).add("checks", checks).add("results", results);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << doc.str() << "\n";
    if (!f) {
      std::fprintf(stderr, "gcsim_microbench: cannot write %s\n", tmp.c_str());
      std::exit(1);
    }
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, args)) {
    std::fprintf(stderr, "usage: gcsim_microbench -o OUT.json [--quick] [--sections gemm,memory,launch] "
                         "[--device N]\n");
    return 2;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "gcsim_microbench: no CUDA device (%s)\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "device count 0");
    return kNoDeviceExit;
  }
  if (args.device < 0 || args.device >= count) {
    std::fprintf(stderr, "gcsim_microbench: --device %d but %d devices\n", args.device, count);
    return 2;
  }
  check(cudaSetDevice(args.device), "cudaSetDevice");
  cudaDeviceProp p;
  check(cudaGetDeviceProperties(&p, args.device), "cudaGetDeviceProperties");
  char bus[32] = {0};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, args.device), "cudaDeviceGetPCIBusId");
  NvmlProbe nvml(bus);
  int runtime = 0, driver = 0;
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const bool has_fp8 = p.major * 10 + p.minor >= 89;

  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  GpuTimer timer(stream);

  JsonObject meta;
  meta.add("tool", kVersion).add("date_utc", utc_now()).add("hostname", host)
      .add("argv", [&] { std::string s; for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]); return s; }())
      .add("device_name", p.name).add("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor))
      .add("sm_count", p.multiProcessorCount).add("l2_bytes", static_cast<long long>(p.l2CacheSize))
      .add("total_memory_bytes", static_cast<long long>(p.totalGlobalMem)).add("pci_bus_id", bus)
      .add("cuda_runtime", runtime).add("cuda_driver_api", driver)
      .add("cublaslt_version", static_cast<long long>(cublasLtGetVersion()))
      .add("nvml", nvml.ok() ? std::string("ok") : nvml.error())
      .add("driver_version", nvml.driver_version()).add("max_sm_mhz", static_cast<int>(nvml.max_sm_mhz()))
      .add("max_mem_mhz", static_cast<int>(nvml.max_mem_mhz())).add("power_limit_w", nvml.power_limit_w())
      .add("spin_cycles_per_us", timer.cycles_per_us()).add("reading_start", reading_json(nvml.read()))
      .add("method", "CUDA events; warm-up 3; phase 1: an event pair per repetition (median/min/p90); "
                     "phase 2: 7 batches of back-to-back repetitions, time_us = median of batch/reps; "
                     "stream back-logged by a spin kernel (backlog_ok); inputs uniform [-1,1) from a hash, "
                     "rotated over rot_sets copies so that their footprint is >= 3x L2; GPU settings as found");
  std::printf("%s on %s (sm_%d%d, %d SMs, L2 %d B), driver %s, CUDA runtime %d\n", kVersion, p.name,
              p.major, p.minor, p.multiProcessorCount, p.l2CacheSize, nvml.driver_version().c_str(), runtime);

  std::vector<JsonObject> checks, results;
  GemmBench gemm(stream, timer, nvml, p.l2CacheSize);
  MemoryBench memory(stream, timer, nvml, p.l2CacheSize, p.multiProcessorCount);
  const bool ok = gemm.verify(checks) & memory.verify(checks);
  for (const auto& c : checks) std::printf("check %s\n", c.str().c_str());
  if (!ok) std::fprintf(stderr, "gcsim_microbench: a correctness check FAILED (see checks)\n");
  meta.add("checks_ok", ok);
  write_file(args.out, meta, checks, results);

  const auto t0 = std::chrono::steady_clock::now();
  if (wants(args, "launch")) {
    for (auto& r : memory.launch_overhead()) {
      std::printf("%s\n", r.str().c_str());
      results.push_back(r);
    }
    write_file(args.out, meta, checks, results);
  }
  if (wants(args, "memory")) {
    for (const MemoryCase& c : memory_grid(args.quick, p.totalGlobalMem)) {
      results.push_back(memory.run(c));
      std::printf("%s\n", results.back().str().c_str());
      std::fflush(stdout);
    }
    write_file(args.out, meta, checks, results);
  }
  if (wants(args, "gemm")) {
    for (const GemmCase& c : gemm_grid(args.quick, has_fp8)) {
      results.push_back(gemm.run(c));
      std::printf("%s\n", results.back().str().c_str());
      std::fflush(stdout);
      if (results.size() % 16 == 0) write_file(args.out, meta, checks, results);
    }
  }
  meta.add("reading_end", reading_json(nvml.read()))
      .add("elapsed_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  write_file(args.out, meta, checks, results);
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::printf("wrote %zu records to %s\n", results.size(), args.out.c_str());
  return ok ? 0 : 1;
}
