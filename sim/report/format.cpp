#include "sim/report/format.h"

#include <cstdio>

namespace gcsim::cli {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string human_time(double seconds) {
  if (seconds < 1e-3) return fmt("%.3g us", seconds * 1e6);
  if (seconds < 1.0) return fmt("%.4g ms", seconds * 1e3);
  return fmt("%.4g s", seconds);
}

std::string human_bytes(double bytes) {
  if (bytes >= 1099511627776.0) return fmt("%.3g TiB", bytes / 1099511627776.0);
  if (bytes >= 1073741824.0) return fmt("%.3g GiB", bytes / 1073741824.0);
  if (bytes >= 1048576.0) return fmt("%.3g MiB", bytes / 1048576.0);
  return fmt("%.0f B", bytes);
}

std::string human_bandwidth(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return fmt("%.3g GB/s", bytes_per_s / 1e9);
  if (bytes_per_s >= 1e6) return fmt("%.3g MB/s", bytes_per_s / 1e6);
  if (bytes_per_s >= 1e3) return fmt("%.3g KB/s", bytes_per_s / 1e3);
  return fmt("%.3g B/s", bytes_per_s);
}

std::string gib(double bytes) { return fmt("%.2f GiB", bytes / 1073741824.0); }

}  // namespace gcsim::cli
