#include "nvml_probe.h"

#include <dlfcn.h>

namespace gcsim::microbench {

namespace {
// NVML's C interface, as far as it is used here (nvml.h: nvmlReturn_t is an
// int enum, 0 = success; nvmlDevice_t an opaque pointer).
using InitFn = int (*)();
using ByBusIdFn = int (*)(const char*, void**);
using ClockFn = int (*)(void*, int, unsigned*);  // (device, nvmlClockType_t, MHz)
using PowerFn = int (*)(void*, unsigned*);       // milliwatts
using ReasonsFn = int (*)(void*, unsigned long long*);
using DriverFn = int (*)(char*, unsigned);
using ShutdownFn = int (*)();
constexpr int kClockSm = 1, kClockMem = 2;  // NVML_CLOCK_SM, NVML_CLOCK_MEM
}  // namespace

NvmlProbe::NvmlProbe(const std::string& pci_bus_id) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    error_ = "libnvidia-ml.so.1 not found";
    return;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<ByBusIdFn>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto max_clock = reinterpret_cast<ClockFn>(dlsym(lib_, "nvmlDeviceGetMaxClockInfo"));
  auto limit = reinterpret_cast<PowerFn>(dlsym(lib_, "nvmlDeviceGetEnforcedPowerLimit"));
  auto driver = reinterpret_cast<DriverFn>(dlsym(lib_, "nvmlSystemGetDriverVersion"));
  clock_fn_ = dlsym(lib_, "nvmlDeviceGetClockInfo");
  power_fn_ = dlsym(lib_, "nvmlDeviceGetPowerUsage");
  reasons_fn_ = dlsym(lib_, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!reasons_fn_) reasons_fn_ = dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons");
  shutdown_fn_ = dlsym(lib_, "nvmlShutdown");
  if (!init || !by_bus || !clock_fn_ || !power_fn_ || init() != 0) {
    error_ = "NVML entry points missing or nvmlInit failed";
    return;
  }
  void* dev = nullptr;
  if (by_bus(pci_bus_id.c_str(), &dev) != 0) {
    error_ = "NVML has no device at PCI bus id " + pci_bus_id;
    return;
  }
  device_ = dev;
  char buf[96] = {0};
  if (driver && driver(buf, sizeof buf) == 0) driver_ = buf;
  if (max_clock) {
    max_clock(device_, kClockSm, &max_sm_mhz_);
    max_clock(device_, kClockMem, &max_mem_mhz_);
  }
  unsigned mw = 0;
  if (limit && limit(device_, &mw) == 0) power_limit_w_ = mw / 1000.0;
}

NvmlProbe::~NvmlProbe() {
  if (device_ && shutdown_fn_) reinterpret_cast<ShutdownFn>(shutdown_fn_)();
  if (lib_) dlclose(lib_);
}

GpuReading NvmlProbe::read() const {
  GpuReading r;
  if (!device_) return r;
  auto clock = reinterpret_cast<ClockFn>(clock_fn_);
  unsigned mw = 0;
  r.ok = clock(device_, kClockSm, &r.sm_mhz) == 0 && clock(device_, kClockMem, &r.mem_mhz) == 0 &&
         reinterpret_cast<PowerFn>(power_fn_)(device_, &mw) == 0;
  r.power_w = mw / 1000.0;
  if (reasons_fn_) reinterpret_cast<ReasonsFn>(reasons_fn_)(device_, &r.event_reasons);
  return r;
}

}  // namespace gcsim::microbench
