// SPDX-License-Identifier: Apache-2.0
// Conversions between float, in which gpumath's matmul kernels compute, and the element types they
// read and write: gm_load reads an element as float, gm_store writes a float to one (rounding to
// nearest). An in-memory header of the grouped GEMM programs (kernels/grouped_gemm.cu) and of the
// epilog pass (kernels/epilog_pass.cu), so both read and write D and the bias alike.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float gm_load(__half x) { return __half2float(x); }
__device__ __forceinline__ float gm_load(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float gm_load(float x) { return x; }
__device__ __forceinline__ void gm_store(__half& out, float x) { out = __float2half_rn(x); }
__device__ __forceinline__ void gm_store(__nv_bfloat16& out, float x) { out = __float2bfloat16_rn(x); }
__device__ __forceinline__ void gm_store(float& out, float x) { out = x; }
