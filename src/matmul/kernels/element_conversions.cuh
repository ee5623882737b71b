// SPDX-License-Identifier: Apache-2.0
// Conversions between float, in which gpumath's matmul kernels compute, and each element type they
// read or write (the types cuda_element_type names in src/matmul/types.cpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float gm_load(__half x) { return __half2float(x); }
__device__ __forceinline__ float gm_load(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float gm_load(float x) { return x; }
__device__ __forceinline__ void gm_store(__half& out, float x) { out = __float2half_rn(x); }
__device__ __forceinline__ void gm_store(__nv_bfloat16& out, float x) { out = __float2bfloat16_rn(x); }
__device__ __forceinline__ void gm_store(float& out, float x) { out = x; }
