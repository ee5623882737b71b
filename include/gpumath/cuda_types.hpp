// SPDX-License-Identifier: Apache-2.0
/// @file
/// CUDA's element types with their definitions: __half (cuda_fp16.h), __nv_bfloat16 (cuda_bf16.h),
/// __nv_fp8_e4m3/_e5m2 (cuda_fp8.h) and cuComplex/cuDoubleComplex (cuComplex.h), plus the DataType
/// vocabulary of <gpumath/types.hpp>. types.hpp alone maps these types (it declares them), so
/// include this header where code needs their values, conversions or arithmetic on the host.
/// <gpumath/gpumath.hpp> includes it; the module headers do not.
#pragma once

#include <cuComplex.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <gpumath/types.hpp>

namespace gpumath::detail {
// The declarations in types.hpp name the same types the CUDA headers define.
static_assert(data_type_of<__half>() == DataType::f16 && sizeof(__half) == size_of(DataType::f16));
static_assert(data_type_of<__nv_bfloat16>() == DataType::bf16 && sizeof(__nv_bfloat16) == size_of(DataType::bf16));
static_assert(data_type_of<__nv_fp8_e4m3>() == DataType::e4m3 && sizeof(__nv_fp8_e4m3) == size_of(DataType::e4m3));
static_assert(data_type_of<__nv_fp8_e5m2>() == DataType::e5m2 && sizeof(__nv_fp8_e5m2) == size_of(DataType::e5m2));
static_assert(data_type_of<cuComplex>() == DataType::c32 && sizeof(cuComplex) == size_of(DataType::c32));
static_assert(data_type_of<cuDoubleComplex>() == DataType::c64 && sizeof(cuDoubleComplex) == size_of(DataType::c64));
}  // namespace gpumath::detail
