// Numeric formats a kernel computes in, with their storage size.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gcsim::models::gpu {

enum class Dtype { fp32, tf32, bf16, fp16, fp8, int8 };

inline constexpr Dtype kAllDtypes[] = {Dtype::fp32, Dtype::tf32, Dtype::bf16,
                                       Dtype::fp16, Dtype::fp8,  Dtype::int8};

// Bytes per element in memory (tf32 is stored as fp32).
constexpr double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32: case Dtype::tf32: return 4.0;
    case Dtype::bf16: case Dtype::fp16: return 2.0;
    case Dtype::fp8: case Dtype::int8: return 1.0;
  }
  return 0.0;
}

constexpr std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
    case Dtype::int8: return "int8";
  }
  return "?";
}

inline std::optional<Dtype> parse_dtype(std::string_view s) {
  for (Dtype d : kAllDtypes) {
    if (dtype_name(d) == s) return d;
  }
  return std::nullopt;
}

}  // namespace gcsim::models::gpu
