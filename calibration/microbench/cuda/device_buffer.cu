#include "device_buffer.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace gcsim::microbench {

namespace {

// splitmix64: a well-mixed 64-bit hash of the element index and seed.
__device__ uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ float uniform(uint64_t i, uint64_t seed) {
  // 24 random bits -> [0, 1), then to [-1, 1).
  const uint32_t r = static_cast<uint32_t>(mix(i ^ (seed * 0x632be59bd9b4e019ull)) >> 40);
  return static_cast<float>(r) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__device__ T convert(float v);
template <> __device__ float convert<float>(float v) { return v; }
template <> __device__ __nv_bfloat16 convert<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __half convert<__half>(float v) { return __float2half(v); }
template <> __device__ __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

template <typename T>
__global__ void fill_kernel(T* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = convert<T>(scale * uniform(i, seed));
  }
}

__global__ void poison_kernel(uint4* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = make_uint4(0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u);  // bf16/fp32 NaNs
  }
}

unsigned grid_for(size_t n) {
  const size_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? (blocks ? blocks : 1) : 65536);
}

}  // namespace

void fill_random(void* ptr, size_t count, ElemType type, uint64_t seed, float scale,
                 cudaStream_t stream) {
  const unsigned g = grid_for(count);
  switch (type) {
    case ElemType::fp32:
      fill_kernel<<<g, 256, 0, stream>>>(static_cast<float*>(ptr), count, seed, scale);
      break;
    case ElemType::bf16:
      fill_kernel<<<g, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), count, seed, scale);
      break;
    case ElemType::fp16:
      fill_kernel<<<g, 256, 0, stream>>>(static_cast<__half*>(ptr), count, seed, scale);
      break;
    case ElemType::fp8_e4m3:
      fill_kernel<<<g, 256, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(ptr), count, seed, scale);
      break;
  }
  check_launch("fill_random");
}

void fill_poison(void* ptr, size_t bytes, cudaStream_t stream) {
  const size_t n = bytes / 16;
  poison_kernel<<<grid_for(n), 256, 0, stream>>>(static_cast<uint4*>(ptr), n);
  check_launch("fill_poison");
}

}  // namespace gcsim::microbench
