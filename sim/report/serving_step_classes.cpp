#include "sim/report/serving_step_classes.h"

#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli {

namespace {

using sim::config::Json;
namespace inf = workloads::inference;
namespace tr = workloads::training;

// The classes a serving step has (no optimizer).
constexpr tr::KernelClass kClasses[] = {tr::KernelClass::gemm, tr::KernelClass::attention,
                                        tr::KernelClass::elementwise, tr::KernelClass::norm,
                                        tr::KernelClass::communication};

struct KindTotals {
  int64_t count = 0;
  double step_s = 0, host_wait_s = 0, kernels = 0;
  double clock_mhz = 0, energy_j = 0;  // summed over steps (clock model)
  bool clocked = false;
  tr::KernelClassTimes classes;
  void add(const inf::StepRecord& r) {
    ++count;
    clock_mhz += r.sm_clock_mhz;
    energy_j += r.energy_j;
    clocked = clocked || r.sm_clock_mhz > 0.0;
    step_s += (r.end - r.start).seconds();
    host_wait_s += r.host_wait.seconds();
    kernels += r.classes.kernels;
    for (size_t c = 0; c < classes.seconds.size(); ++c) classes.seconds[c] += r.classes.seconds[c];
  }
  double mean(double total) const { return count > 0 ? total / static_cast<double>(count) : 0.0; }
};

struct Totals {
  KindTotals prefill, decode;
};

Totals totals(const std::vector<inf::StepRecord>& steps) {
  Totals t;
  for (const auto& r : steps) (r.prefills > 0 ? t.prefill : t.decode).add(r);
  return t;
}

Json kind_json(const KindTotals& k) {
  Json classes = Json::object();
  for (tr::KernelClass c : kClasses) classes[tr::kernel_class_name(c)] = k.mean(k.classes.of(c));
  Json j = {{"steps", k.count},
            {"mean_step_s", k.mean(k.step_s)},
            {"kernel_classes_s", classes},
            {"kernels_per_step", k.mean(k.kernels)},
            {"host_wait_s", k.mean(k.host_wait_s)}};
  if (k.clocked) {
    // The clock model (cluster.clocks: model): each step's SM clock and its
    // replica's board energy over the step (replica.h StepRecord).
    j["mean_sm_clock_mhz"] = k.mean(k.clock_mhz);
    j["energy_per_step_j"] = k.mean(k.energy_j);
  }
  return j;
}

}  // namespace

Json serving_step_classes_json(const std::vector<inf::StepRecord>& steps) {
  const Totals t = totals(steps);
  return {{"prefill_steps", kind_json(t.prefill)}, {"decode_steps", kind_json(t.decode)}};
}

std::string serving_step_classes_markdown(const std::vector<inf::StepRecord>& steps) {
  const Totals t = totals(steps);
  std::ostringstream o;
  o << "\n## Step time by class (mean per step, ms)\n\n| | prefill steps | decode steps |\n|---|---:|---:|\n";
  o << "| steps | " << t.prefill.count << " | " << t.decode.count << " |\n";
  const auto row = [&](const std::string& name, double p, double d) {
    o << "| " << name << " | " << fmt("%.3f", t.prefill.mean(p) * 1e3) << " | "
      << fmt("%.3f", t.decode.mean(d) * 1e3) << " |\n";
  };
  row("step", t.prefill.step_s, t.decode.step_s);
  for (tr::KernelClass c : kClasses) {
    row(tr::kernel_class_name(c), t.prefill.classes.of(c), t.decode.classes.of(c));
  }
  row("host wait", t.prefill.host_wait_s, t.decode.host_wait_s);
  if (t.prefill.clocked || t.decode.clocked) {
    // A kind with no steps has no clock: a dash, not 0 MHz.
    const auto cell = [](const KindTotals& k, const char* f, double total) {
      return k.count > 0 ? fmt(f, k.mean(total)) : std::string("-");
    };
    o << "| SM clock (MHz) | " << cell(t.prefill, "%.0f", t.prefill.clock_mhz) << " | "
      << cell(t.decode, "%.0f", t.decode.clock_mhz) << " |\n";
    o << "| energy per step, replica (J) | " << cell(t.prefill, "%.4g", t.prefill.energy_j) << " | "
      << cell(t.decode, "%.4g", t.decode.energy_j) << " |\n";
  }
  o << "| kernels per step | " << fmt("%.0f", t.prefill.mean(t.prefill.kernels)) << " | "
    << fmt("%.0f", t.decode.mean(t.decode.kernels)) << " |\n";
  o << "\nKernel time summed by class over all pipeline stages (as a profiler's table; "
       "communication: TP collectives and stage sends); host wait: GPUs idle until the host "
       "issued the next kernel.\n";
  return o.str();
}

}  // namespace gcsim::cli
