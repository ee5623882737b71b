// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: how analysis reports bad input, and the checks that are not part of a
// stage's own decision (options, per-call values, FP8 scales and operands, epilog operands).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "detail/status.hpp"

#include "matmul/problem.hpp"

namespace gpumath::detail {

template <class... Args>
[[noreturn]] void invalid(const char* api, fmt::format_string<Args...> f, Args&&... args) {
    throw_invalid(fmt::format(f, std::forward<Args>(args)...), api);
}
template <class... Args>
[[noreturn]] void unsupported(const char* api, fmt::format_string<Args...> f, Args&&... args) {
    throw_not_supported(fmt::format(f, std::forward<Args>(args)...), api);
}

/// The bytes [lo, hi) an operand occupies, for the checks that outputs and inputs stay apart.
struct ByteRange {
    std::uintptr_t lo = 0, hi = 0;
};
inline ByteRange bytes_of(const void* p, std::int64_t bytes) {
    const auto lo = reinterpret_cast<std::uintptr_t>(p);
    return {lo, lo + std::uintptr_t(bytes)};
}
inline ByteRange bytes_of(const TensorView& v) { return bytes_of(v.data(), v.span_bytes()); }
/// The 4 bytes of one f32 (a per-tensor scale or amax).
inline ByteRange bytes_of(const float* p) { return bytes_of(p, std::int64_t(sizeof(float))); }
/// Whether two ranges, neither empty, share a byte.
[[nodiscard]] constexpr bool meet(const ByteRange& x, const ByteRange& y) noexcept {
    return x.lo < y.hi && y.lo < x.hi && x.lo != x.hi && y.lo != y.hi;
}

/// InvalidArgument naming `name` when `v` has elements at a null pointer (a default TensorView: rank
/// 0, one element) or addresses bytes past the end of the address space (its ByteRange would wrap).
void check_view_memory(const TensorView& v, const char* name, const char* api);
/// The same for `bytes` bytes at `p` (storage past a view's span, a per-tensor scale).
void check_memory(const void* p, std::int64_t bytes, const char* name, const char* api);

inline std::string shape_text(const TensorLayout& l) { return to_string(l.shape()); }
inline std::string strides_text(const TensorLayout& l) { return to_string(l.strides()); }

/// FP8 scales: only for FP8 products, no C scale, d/amax scales only for an FP8 D, 16-byte aligned.
void check_scales(const MatmulSignature& sig, const ProblemTypes& types, const char* api);

/// The epilog against the types and the inputs given (a bias, aux or bias gradient the epilog
/// does not take, or a missing one).
void check_epilog_operands(const MatmulSignature& sig, const ProblemTypes& types, Epilog epilog, std::int64_t k,
                           const char* api);

/// FP8's dimension and pointer-alignment rules (the layout rule depends on the device: checked when
/// planning). `swap`: the arrangement swaps the operands (cuBLASLt computes D^T for a row-major D).
void check_fp8_operands(const MatmulSignature& sig, const ProblemShape& shape, bool swap, const char* api);

}  // namespace gpumath::detail
