// SPDX-License-Identifier: Apache-2.0
/// @file
/// DLPack interop: gpumath's element types as DLPack dtypes and back. `TensorView::from_dlpack`,
/// `Tensor::from_dlpack` and `Tensor::to_dlpack` are declared with their classes. Everything here
/// exists only when gpumath was built with DLPack (the gpumath targets then define
/// GPUMATH_HAS_DLPACK and find <dlpack/dlpack.h>); otherwise this header declares nothing.
#pragma once

#if defined(GPUMATH_HAS_DLPACK)

#include <cstdint>

#include <dlpack/dlpack.h>

#include <gpumath/types.hpp>

// DLManagedTensorVersioned exists from DLPack 1.0 on (Debian 12's 0.6 lacks it): the overloads
// that take or return it are inline, so they follow the <dlpack/dlpack.h> the including code sees.
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION == 1
/// Defined to 1 when <dlpack/dlpack.h> is a 1.x header, which has `DLManagedTensorVersioned`:
/// `Tensor::from_dlpack(DLManagedTensorVersioned*)` and `Tensor::to_dlpack_versioned()` exist.
#define GPUMATH_HAS_DLPACK_VERSIONED 1

#endif

namespace gpumath {

/// The DataType of a DLPack dtype: kDLFloat 16/32/64 bits (f16, f32, f64), kDLBfloat 16 (bf16),
/// kDLComplex 64/128 (c32, c64), kDLInt 8/32/64 (i8, i32, i64), and DLPack 1.1's kDLFloat8_e4m3fn (code
/// 10) and kDLFloat8_e5m2 (code 12) of 8 bits (e4m3, e5m2), each with one lane. InvalidArgument
/// naming `DLTensor.dtype` (or `DLTensor.dtype.lanes`) for anything else: vectors, bool,
/// unsigned integers, other widths and codes.
[[nodiscard]] DataType to_data_type(DLDataType dtype);

/// The DLPack dtype of `t` (one lane); the inverse of `to_data_type`. A value outside DataType's
/// enumerators gives {kDLOpaqueHandle, 0 bits, 0 lanes}, which no consumer takes for a type.
[[nodiscard]] DLDataType to_dlpack(DataType t) noexcept;

namespace detail {
// What Tensor::from_dlpack reads from either managed struct; the versioned overload fills it inline
// so that its struct comes from the caller's header.
struct DLPackSource {
    void* managed = nullptr;                   // handed to `release` exactly once
    void (*release)(void* managed) = nullptr;  // calls the managed tensor's deleter, which may throw
    const DLTensor* tensor = nullptr;          // null when the layout cannot be read
    std::uint32_t major = 0;                   // version.major of a versioned tensor
    std::uint32_t minor = 0;                   // version.minor of a versioned tensor
    std::uint64_t flags = 0;                   // flags of a versioned tensor
    bool versioned = false;
};
}  // namespace detail

}  // namespace gpumath

#endif  // GPUMATH_HAS_DLPACK
