// SPDX-License-Identifier: Apache-2.0
// Conversions between float and the element types of gpumath's matmul kernels: gm_load reads an
// element as float, gm_store writes a float to one (rounding to nearest). Included by
// kernels/grouped_gemm.cu and placed ahead of the epilog pass's source (matmul/epilog_pass.cpp),
// so both read and write D and the bias alike.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float gm_load(__half x) { return __half2float(x); }
__device__ __forceinline__ float gm_load(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float gm_load(float x) { return x; }
__device__ __forceinline__ void gm_store(__half& out, float x) { out = __float2half_rn(x); }
__device__ __forceinline__ void gm_store(__nv_bfloat16& out, float x) { out = __float2bfloat16_rn(x); }
__device__ __forceinline__ void gm_store(float& out, float x) { out = x; }
