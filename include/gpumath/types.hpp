// SPDX-License-Identifier: Apache-2.0
/// @file
/// The element-type vocabulary: DataType, what it tells (size_of, to_string, to_cuda, ...) and
/// data_type_of, which maps a C++ element type to its DataType (the DataTypeTraits customization
/// point). Light: it declares CUDA's element types instead of including their headers.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <library_types.h>

// CUDA's element types, declared the way the CUDA headers declare them ahead of their definitions
// (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h; float2 and double2, which cuComplex and cuDoubleComplex
// name, from vector_types.h), so that `data_type_of` knows them without this header pulling in
// those headers (some 60,000 preprocessed lines). <gpumath/cuda_types.hpp> includes the definitions.
struct __half;         // NOLINT(bugprone-reserved-identifier): CUDA's name
struct __nv_bfloat16;  // NOLINT(bugprone-reserved-identifier)
struct __nv_fp8_e4m3;  // NOLINT(bugprone-reserved-identifier)
struct __nv_fp8_e5m2;  // NOLINT(bugprone-reserved-identifier)
struct float2;
struct double2;

/// Everything gpumath offers: the vocabulary (DataType, TensorLayout, TensorView, Tensor, the
/// Error family, logging), matrix products on cuBLASLt (Matmul, matmul(), GroupedMatmul, FP8
/// quantization) and FFTs on cuFFT (FFT, fft(), callbacks). The runtime layer is gpumath::core,
/// the multi-GPU module gpumath::dist.
namespace gpumath {

/// Element types gpumath moves and computes on. `c32` is a complex of two f32, `c64` of two f64.
enum class DataType : std::uint8_t {
    f16,   ///< IEEE 754 half precision (`__half`), 2 bytes.
    bf16,  ///< bfloat16 (`__nv_bfloat16`), 2 bytes.
    f32,   ///< float, 4 bytes.
    f64,   ///< double, 8 bytes.
    c32,   ///< Complex of two f32 (`std::complex<float>`, `cuComplex`), 8 bytes.
    c64,   ///< Complex of two f64 (`std::complex<double>`, `cuDoubleComplex`), 16 bytes.
    e4m3,  ///< 8-bit float with 4 exponent and 3 mantissa bits (`__nv_fp8_e4m3`).
    e5m2,  ///< 8-bit float with 5 exponent and 2 mantissa bits (`__nv_fp8_e5m2`).
    i8,    ///< Signed 8-bit integer (`std::int8_t`).
    i32,   ///< Signed 32-bit integer (`std::int32_t`).
    i64    ///< Signed 64-bit integer (`std::int64_t`): sparse indices and offsets.
};

/// Number of DataType enumerators.
inline constexpr int data_type_count = 11;

/// True when `t` is one of the enumerators (a value cast from an out-of-range integer is not).
[[nodiscard]] constexpr bool is_valid(DataType t) noexcept { return static_cast<int>(t) < data_type_count; }

/// Size of one element in bytes (0 for a value that is not an enumerator).
[[nodiscard]] constexpr std::size_t size_of(DataType t) noexcept {
    switch (t) {
        case DataType::f16:
        case DataType::bf16:
            return 2;
        case DataType::f32:
        case DataType::i32:
            return 4;
        case DataType::f64:
        case DataType::c32:
        case DataType::i64:
            return 8;
        case DataType::c64:
            return 16;
        case DataType::e4m3:
        case DataType::e5m2:
        case DataType::i8:
            return 1;
    }
    return 0;
}

/// The enumerator's name ("f16", "c32", ...).
[[nodiscard]] constexpr std::string_view to_string(DataType t) noexcept {
    switch (t) {
        case DataType::f16:
            return "f16";
        case DataType::bf16:
            return "bf16";
        case DataType::f32:
            return "f32";
        case DataType::f64:
            return "f64";
        case DataType::c32:
            return "c32";
        case DataType::c64:
            return "c64";
        case DataType::e4m3:
            return "e4m3";
        case DataType::e5m2:
            return "e5m2";
        case DataType::i8:
            return "i8";
        case DataType::i32:
            return "i32";
        case DataType::i64:
            return "i64";
    }
    return "unknown";
}

/// True for c32 and c64.
[[nodiscard]] constexpr bool is_complex(DataType t) noexcept { return t == DataType::c32 || t == DataType::c64; }
/// True for the 8-bit floating-point types e4m3 and e5m2.
[[nodiscard]] constexpr bool is_fp8(DataType t) noexcept { return t == DataType::e4m3 || t == DataType::e5m2; }
/// True for the floating-point and complex types.
[[nodiscard]] constexpr bool is_floating(DataType t) noexcept {
    return t != DataType::i8 && t != DataType::i32 && t != DataType::i64;
}

/// The matching `cudaDataType_t` used by cuBLASLt and cufftXt.
[[nodiscard]] constexpr cudaDataType_t to_cuda(DataType t) noexcept {
    switch (t) {
        case DataType::f16:
            return CUDA_R_16F;
        case DataType::bf16:
            return CUDA_R_16BF;
        case DataType::f32:
            return CUDA_R_32F;
        case DataType::f64:
            return CUDA_R_64F;
        case DataType::c32:
            return CUDA_C_32F;
        case DataType::c64:
            return CUDA_C_64F;
        case DataType::e4m3:
            return CUDA_R_8F_E4M3;
        case DataType::e5m2:
            return CUDA_R_8F_E5M2;
        case DataType::i8:
            return CUDA_R_8I;
        case DataType::i32:
            return CUDA_R_32I;
        case DataType::i64:
            return CUDA_R_64I;
    }
    return CUDA_R_32F;
}

/// The DataType of the element type `T`: a customization point. gpumath specializes it for float,
/// double, __half, __nv_bfloat16, std::complex<float/double>, cuComplex/cuDoubleComplex (float2 and
/// double2), __nv_fp8_e4m3/_e5m2, int8_t, int32_t and int64_t; specialize it (deriving from
/// `std::integral_constant<DataType, ...>`) for a type of your own with the same bytes to pass it
/// to TensorView and Tensor. The primary template has no `value`.
template <class T>
struct DataTypeTraits {};

/// float is f32.
template <>
struct DataTypeTraits<float> : std::integral_constant<DataType, DataType::f32> {};
/// double is f64.
template <>
struct DataTypeTraits<double> : std::integral_constant<DataType, DataType::f64> {};
/// __half (cuda_fp16.h) is f16.
template <>
struct DataTypeTraits<__half> : std::integral_constant<DataType, DataType::f16> {};
/// __nv_bfloat16 (cuda_bf16.h) is bf16.
template <>
struct DataTypeTraits<__nv_bfloat16> : std::integral_constant<DataType, DataType::bf16> {};
/// std::complex<float> is c32.
template <>
struct DataTypeTraits<std::complex<float>> : std::integral_constant<DataType, DataType::c32> {};
/// float2 (cuComplex, cuFloatComplex) is c32.
template <>
struct DataTypeTraits<float2> : std::integral_constant<DataType, DataType::c32> {};
/// std::complex<double> is c64.
template <>
struct DataTypeTraits<std::complex<double>> : std::integral_constant<DataType, DataType::c64> {};
/// double2 (cuDoubleComplex) is c64.
template <>
struct DataTypeTraits<double2> : std::integral_constant<DataType, DataType::c64> {};
/// __nv_fp8_e4m3 (cuda_fp8.h) is e4m3.
template <>
struct DataTypeTraits<__nv_fp8_e4m3> : std::integral_constant<DataType, DataType::e4m3> {};
/// __nv_fp8_e5m2 (cuda_fp8.h) is e5m2.
template <>
struct DataTypeTraits<__nv_fp8_e5m2> : std::integral_constant<DataType, DataType::e5m2> {};
/// int8_t is i8.
template <>
struct DataTypeTraits<std::int8_t> : std::integral_constant<DataType, DataType::i8> {};
/// int32_t is i32.
template <>
struct DataTypeTraits<std::int32_t> : std::integral_constant<DataType, DataType::i32> {};
/// int64_t is i64.
template <>
struct DataTypeTraits<std::int64_t> : std::integral_constant<DataType, DataType::i64> {};

/// True when `data_type_of<T>()` is defined (`DataTypeTraits` of T without cv has a `value`).
template <class T>
inline constexpr bool is_element_type_v = requires {
    DataTypeTraits<std::remove_cv_t<T>>::value;
};

namespace detail {
template <class T>
inline constexpr bool always_false = false;
}  // namespace detail

/// The DataType of a C++ element type (cv-qualifiers ignored), from `DataTypeTraits`. Maps float,
/// double, __half, __nv_bfloat16, std::complex<float/double>, cuComplex/cuDoubleComplex,
/// __nv_fp8_e4m3/_e5m2, int8_t, int32_t, int64_t; any other type fails to compile. The CUDA types need not
/// be complete: this header declares them.
template <class T>
[[nodiscard]] constexpr DataType data_type_of() noexcept {
    if constexpr (is_element_type_v<T>) return DataTypeTraits<std::remove_cv_t<T>>::value;
    else static_assert(detail::always_false<T>, "gpumath::data_type_of: no DataType for this element type");
}

}  // namespace gpumath
