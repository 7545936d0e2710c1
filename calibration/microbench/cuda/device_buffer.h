// Device memory owned by one object, and fresh random contents for it.
// Inputs are uniform in [-1, 1) from a counter-based hash (never zeros:
// a zero operand can run faster than real data and hides unwritten output).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "check.h"

namespace gcsim::microbench {

enum class ElemType { fp32, bf16, fp16, fp8_e4m3 };

inline size_t elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::fp32: return 4;
    case ElemType::bf16: case ElemType::fp16: return 2;
    case ElemType::fp8_e4m3: return 1;
  }
  return 0;
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) check(cudaMalloc(&ptr_, bytes_), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = o.ptr_; bytes_ = o.bytes_;
      o.ptr_ = nullptr; o.bytes_ = 0;
    }
    return *this;
  }
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Fills `count` elements of `type` at `ptr` with uniform values in
// [-scale, scale), different for every (seed, index). Asynchronous on `stream`.
void fill_random(void* ptr, size_t count, ElemType type, uint64_t seed, float scale,
                 cudaStream_t stream);

// Fills `bytes` bytes (a multiple of 16) with a non-zero pattern: poison for
// outputs, so a kernel that skips elements is caught by the checks.
void fill_poison(void* ptr, size_t bytes, cudaStream_t stream);

}  // namespace gcsim::microbench
