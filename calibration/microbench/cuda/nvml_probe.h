// Reads the GPU's clocks, power and clock-event (throttle) reasons through
// NVML, loaded at run time (dlopen) so the benchmark builds and runs where
// NVML is missing: then every reading is reported as unavailable.
// The card's settings are only read, never changed.
#pragma once

#include <string>

namespace gcsim::microbench {

struct GpuReading {
  bool ok = false;
  unsigned sm_mhz = 0, mem_mhz = 0;
  double power_w = 0;
  unsigned long long event_reasons = 0;  // NVML clocks-event reason bit mask
};

class NvmlProbe {
 public:
  // `pci_bus_id` as cudaDeviceGetPCIBusId gives it, so the NVML device is
  // the CUDA device being measured whatever the enumeration orders are.
  explicit NvmlProbe(const std::string& pci_bus_id);
  ~NvmlProbe();
  NvmlProbe(const NvmlProbe&) = delete;
  NvmlProbe& operator=(const NvmlProbe&) = delete;

  bool ok() const { return device_ != nullptr; }
  GpuReading read() const;
  std::string driver_version() const { return driver_; }
  unsigned max_sm_mhz() const { return max_sm_mhz_; }
  unsigned max_mem_mhz() const { return max_mem_mhz_; }
  double power_limit_w() const { return power_limit_w_; }
  std::string error() const { return error_; }

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  std::string driver_, error_;
  unsigned max_sm_mhz_ = 0, max_mem_mhz_ = 0;
  double power_limit_w_ = 0;
  // NVML entry points, typed in nvml_probe.cpp.
  void* clock_fn_ = nullptr;
  void* power_fn_ = nullptr;
  void* reasons_fn_ = nullptr;
  void* shutdown_fn_ = nullptr;
};

}  // namespace gcsim::microbench
