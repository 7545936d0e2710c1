// Every CUDA runtime and cuBLAS call of the microbenchmarks goes through
// check(): a failed call ends the program with the call's name and the
// library's error string, so no number is ever measured on a failed launch.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace gcsim::microbench {

// Exit status when the machine has no usable CUDA device: `gcsim calibrate`
// turns it into its own "no GPU" message and exit status 2.
inline constexpr int kNoDeviceExit = 3;

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gcsim_microbench: %s failed: %s (%s)\n", what, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    std::exit(1);
  }
}

inline void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gcsim_microbench: %s failed: cuBLAS status %d\n", what,
                 static_cast<int>(s));
    std::exit(1);
  }
}

// After a kernel launch: the launch itself (bad grid, missing image) fails
// only through cudaGetLastError.
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

}  // namespace gcsim::microbench
