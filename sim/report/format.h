// Number formatting shared by the report writers (report.md and the console
// summary of each workload kind), so that every report prints a time or a
// size the same way.
#pragma once

#include <string>

namespace gcsim::cli {

// `v` through one printf conversion, e.g. fmt("%.2f GiB", bytes / 2^30).
std::string fmt(const char* format, double v);

// Seconds as 12.3 us, 4.56 ms or 1.23 s.
std::string human_time(double seconds);

// Bytes in binary units: 1.5 GiB, 12 MiB, 3.2 TiB, or 512 B below one MiB.
// Every report prints sizes so (GiB for memory) and rates in decimal GB/s.
std::string human_bytes(double bytes);

// Bytes per second in decimal units, as configs write them: 12.5 GB/s, 1 B/s.
std::string human_bandwidth(double bytes_per_s);

// Bytes in GiB with two decimals: "1.50 GiB".
std::string gib(double bytes);

}  // namespace gcsim::cli
