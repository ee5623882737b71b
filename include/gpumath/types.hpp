// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <cuComplex.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <library_types.h>

namespace gpumath {

/// Element types gpumath moves and computes on. `c32` is a complex of two f32, `c64` of two f64.
enum class DataType : std::uint8_t { f16, bf16, f32, f64, c32, c64, e4m3, e5m2, i8, i32 };

/// Number of DataType enumerators.
inline constexpr int data_type_count = 10;

/// True when `t` is one of the enumerators (a value cast from an out-of-range integer is not).
[[nodiscard]] constexpr bool is_valid(DataType t) noexcept { return static_cast<int>(t) < data_type_count; }

/// Size of one element in bytes (0 for a value that is not an enumerator).
[[nodiscard]] constexpr std::size_t size_of(DataType t) noexcept {
    switch (t) {
    case DataType::f16:
    case DataType::bf16: return 2;
    case DataType::f32:
    case DataType::i32: return 4;
    case DataType::f64:
    case DataType::c32: return 8;
    case DataType::c64: return 16;
    case DataType::e4m3:
    case DataType::e5m2:
    case DataType::i8: return 1;
    }
    return 0;
}

/// The enumerator's name ("f16", "c32", ...).
[[nodiscard]] constexpr std::string_view to_string(DataType t) noexcept {
    switch (t) {
    case DataType::f16: return "f16";
    case DataType::bf16: return "bf16";
    case DataType::f32: return "f32";
    case DataType::f64: return "f64";
    case DataType::c32: return "c32";
    case DataType::c64: return "c64";
    case DataType::e4m3: return "e4m3";
    case DataType::e5m2: return "e5m2";
    case DataType::i8: return "i8";
    case DataType::i32: return "i32";
    }
    return "unknown";
}

/// True for c32 and c64.
[[nodiscard]] constexpr bool is_complex(DataType t) noexcept { return t == DataType::c32 || t == DataType::c64; }
/// True for the 8-bit floating-point types e4m3 and e5m2.
[[nodiscard]] constexpr bool is_fp8(DataType t) noexcept { return t == DataType::e4m3 || t == DataType::e5m2; }
/// True for the floating-point and complex types.
[[nodiscard]] constexpr bool is_floating(DataType t) noexcept { return t != DataType::i8 && t != DataType::i32; }

/// The matching `cudaDataType_t` used by cuBLASLt and cufftXt.
[[nodiscard]] constexpr cudaDataType_t to_cuda(DataType t) noexcept {
    switch (t) {
    case DataType::f16: return CUDA_R_16F;
    case DataType::bf16: return CUDA_R_16BF;
    case DataType::f32: return CUDA_R_32F;
    case DataType::f64: return CUDA_R_64F;
    case DataType::c32: return CUDA_C_32F;
    case DataType::c64: return CUDA_C_64F;
    case DataType::e4m3: return CUDA_R_8F_E4M3;
    case DataType::e5m2: return CUDA_R_8F_E5M2;
    case DataType::i8: return CUDA_R_8I;
    case DataType::i32: return CUDA_R_32I;
    }
    return CUDA_R_32F;
}

namespace detail {
template <class T>
inline constexpr bool always_false = false;
}  // namespace detail

/// The DataType of a C++ element type. Maps float, double, __half, __nv_bfloat16,
/// std::complex<float/double>, cuComplex/cuDoubleComplex, __nv_fp8_e4m3/_e5m2, int8_t, int32_t;
/// any other type fails to compile.
template <class T>
[[nodiscard]] constexpr DataType data_type_of() noexcept {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>) return DataType::f32;
    else if constexpr (std::is_same_v<U, double>) return DataType::f64;
    else if constexpr (std::is_same_v<U, __half>) return DataType::f16;
    else if constexpr (std::is_same_v<U, __nv_bfloat16>) return DataType::bf16;
    else if constexpr (std::is_same_v<U, std::complex<float>> || std::is_same_v<U, cuComplex>) return DataType::c32;
    else if constexpr (std::is_same_v<U, std::complex<double>> || std::is_same_v<U, cuDoubleComplex>)
        return DataType::c64;
    else if constexpr (std::is_same_v<U, __nv_fp8_e4m3>) return DataType::e4m3;
    else if constexpr (std::is_same_v<U, __nv_fp8_e5m2>) return DataType::e5m2;
    else if constexpr (std::is_same_v<U, std::int8_t>) return DataType::i8;
    else if constexpr (std::is_same_v<U, std::int32_t>) return DataType::i32;
    else static_assert(detail::always_false<T>, "gpumath::data_type_of: no DataType for this element type");
}

/// True when `data_type_of<T>()` is defined.
template <class T>
inline constexpr bool is_element_type_v =
    std::is_arithmetic_v<std::remove_cv_t<T>> ? (std::is_same_v<std::remove_cv_t<T>, float> ||
                                                 std::is_same_v<std::remove_cv_t<T>, double> ||
                                                 std::is_same_v<std::remove_cv_t<T>, std::int8_t> ||
                                                 std::is_same_v<std::remove_cv_t<T>, std::int32_t>)
                                              : (std::is_same_v<std::remove_cv_t<T>, __half> ||
                                                 std::is_same_v<std::remove_cv_t<T>, __nv_bfloat16> ||
                                                 std::is_same_v<std::remove_cv_t<T>, std::complex<float>> ||
                                                 std::is_same_v<std::remove_cv_t<T>, std::complex<double>> ||
                                                 std::is_same_v<std::remove_cv_t<T>, cuComplex> ||
                                                 std::is_same_v<std::remove_cv_t<T>, cuDoubleComplex> ||
                                                 std::is_same_v<std::remove_cv_t<T>, __nv_fp8_e4m3> ||
                                                 std::is_same_v<std::remove_cv_t<T>, __nv_fp8_e5m2>);

}  // namespace gpumath
