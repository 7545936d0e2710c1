// Parsing and printing of quantities with units, in one table-driven place.
// Accepted spellings (case-sensitive suffix, optional space before it):
//   bytes      B KB MB GB TB (10^3 steps) KiB MiB GiB TiB (2^10 steps)
//   bandwidth  bps Kbps Mbps Gbps Tbps (bits/s), B/s KB/s MB/s GB/s TB/s,
//              KiB/s MiB/s GiB/s (bytes/s)
//   duration   ps ns us ms s min h d, at most 106 days (int64 picoseconds
//              end at 106.75 days)
//   flop rate  FLOP/s GFLOP/s TFLOP/s PFLOP/s, also TF/s, PF/s
// A plain number is accepted only where the quantity is unitless.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::sim {

// Each returns nullopt with `error` set to a one-line reason on bad input.
std::optional<Bytes> parse_bytes(std::string_view text, std::string* error);
std::optional<Bandwidth> parse_bandwidth(std::string_view text, std::string* error);
std::optional<Duration> parse_duration(std::string_view text, std::string* error);
std::optional<FlopRate> parse_flop_rate(std::string_view text, std::string* error);

// Canonical spellings that parse back to the same value.
std::string format_bytes(Bytes b);
std::string format_bandwidth(Bandwidth bw);
std::string format_duration(Duration d);
std::string format_flop_rate(FlopRate r);

}  // namespace gcsim::sim
