// SPDX-License-Identifier: Apache-2.0
// The operands of one FFT execution against the plan's problem: layouts, direction, alignment and
// aliasing (host-only, before any CUDA call).
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "fft/geometry.hpp"

namespace gpumath::detail {
namespace {

struct ByteRange {
    std::uintptr_t lo, hi;
};

ByteRange byte_range(const TensorView& v) noexcept {
    const auto lo = reinterpret_cast<std::uintptr_t>(v.data());
    return {lo, lo + std::uintptr_t(v.span_bytes())};
}

}  // namespace

void check_fft_operands(const FftProblem& p, const TensorView& in, const TensorView* out, Direction d,
                        const char* api) {
    if (!(in.layout() == p.in_layout)) [[unlikely]]
        throw_invalid(fmt::format("in: layout {} given, the plan was made for {}", gpumath::to_string(in.layout()),
                                  gpumath::to_string(p.in_layout)),
                      api);
    if (out != nullptr && !(out->layout() == p.out_layout)) [[unlikely]]
        throw_invalid(fmt::format("out: layout {} given, the plan writes {}", gpumath::to_string(out->layout()),
                                  gpumath::to_string(p.out_layout)),
                      api);
    check_enum(d, int(Direction::inverse) + 1, "a Direction", "direction", api);
    if ((p.kind == FFTKind::r2c && d != Direction::forward) || (p.kind == FFTKind::c2r && d != Direction::inverse))
        [[unlikely]]
        throw_invalid(fmt::format("direction: {} given for a {} transform, which runs {} only", to_string(d),
                                  to_string(p.kind), p.kind == FFTKind::r2c ? "forward" : "inverse"),
                      api);
    // Views may start anywhere; cuFFT and the pass kernels need whole elements (a real operand of
    // r2c/c2r at an odd element offset is fine: execution copies it).
    auto check_aligned = [&](const TensorView& v, bool complex, const char* role) {
        const std::size_t bytes = fft_element_bytes(p.precision, complex);
        if (reinterpret_cast<std::uintptr_t>(v.data()) % bytes != 0) [[unlikely]]
            throw_invalid(fmt::format("{}: data pointer {} is not aligned to the {}-byte size of {}", role,
                                      fmt::ptr(v.data()), bytes, fft_element_text(p.precision, complex)),
                          api);
    };
    check_aligned(in, p.in_complex, "in");
    if (out == nullptr) return;
    check_aligned(*out, p.out_complex, "out");
    if (in.data() == out->data() && in.data() != nullptr) [[unlikely]] {
        if (p.kind != FFTKind::c2c)
            throw_invalid(fmt::format("out: the same memory as in; in-place transforms are only supported for c2c, "
                                      "{} needs a separate output",
                                      to_string(p.kind)),
                          api);
        if (!(p.in_layout == p.out_layout))
            throw_invalid(fmt::format("out: the same memory as in, but the layouts differ (in {}, out {}); an "
                                      "in-place transform needs equal layouts",
                                      gpumath::to_string(p.in_layout), gpumath::to_string(p.out_layout)),
                          api);
        return;  // in place
    }
    const ByteRange a = byte_range(in), b = byte_range(*out);
    if (a.lo < b.hi && b.lo < a.hi && a.lo != a.hi && b.lo != b.hi) [[unlikely]]
        throw_invalid(fmt::format("out: its memory overlaps in's (out bytes [{:#x}, {:#x}), in bytes [{:#x}, {:#x})); "
                                  "an output must not alias an input, except in place: a c2c out that is in itself "
                                  "(same pointer and layout)",
                                  b.lo, b.hi, a.lo, a.hi),
                      api);
}

}  // namespace gpumath::detail
