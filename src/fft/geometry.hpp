// SPDX-License-Identifier: Apache-2.0
// Private: validation of FFT requests and their mapping onto cuFFT's advanced data layout. Pure
// host code (no CUDA calls), so every rule here is tested on machines without a GPU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <gpumath/fft/options.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/types.hpp>

#include "fft/kernels/fft_pass_params.hpp"

namespace gpumath::detail {

/// The element of an FFT operand of `precision`: the precision itself for real data, c32/c64 for
/// complex f32/f64 data, and f16/bf16 again for complex half data (pairs of it).
[[nodiscard]] constexpr DataType fft_element(DataType precision, bool complex) noexcept {
    if (!complex) return precision;
    if (precision == DataType::f32) return DataType::c32;
    if (precision == DataType::f64) return DataType::c64;
    return precision;
}

/// Bytes of one element of an FFT operand (a complex f16/bf16 pair counts as one element).
[[nodiscard]] constexpr std::size_t fft_element_bytes(DataType precision, bool complex) noexcept {
    return size_of(precision) * (complex ? 2 : 1);
}

/// An operand in transform elements: a complex element counts once (also a pair of f16/bf16
/// values, whose trailing dimension of 2 is dropped here), a real element once.
struct FftOperand {
    int rank = 0;
    std::array<std::int64_t, max_rank> shape{};
    std::array<std::int64_t, max_rank> strides{};
};

/// A validated FFT request: what the user asked for, independent of how cuFFT is driven.
struct FftProblem {
    /// c2c, r2c or c2r (never automatic).
    FFTKind kind = FFTKind::c2c;
    /// f32, f64, f16 or bf16: the precision of the transform.
    DataType precision = DataType::f32;
    bool in_complex = true;
    bool out_complex = true;
    /// The layouts the user sees (f16/bf16 complex data with its trailing dimension of 2).
    TensorLayout in_layout{};
    TensorLayout out_layout{};
    /// The same in transform elements.
    FftOperand in{};
    FftOperand out{};
    /// Transform axes (logical, non-negative) in the order given; the last is r2c/c2r's halved axis.
    int naxes = 1;
    std::array<int, 3> axes{};
    /// Transform lengths along `axes` (for c2r the output lengths).
    std::array<std::int64_t, 3> n{};
    /// Product of the transform lengths (the n of the normalization).
    std::int64_t n_total = 1;
    /// True when some batch extent is 0: there is nothing to compute.
    bool empty = false;
    Normalization normalization = Normalization::backward;
    bool inplace = false;
    bool overwrite_input = false;
    bool has_prolog = false;
    bool has_epilog = false;
};

/// What an API that validates through make_fft_problem transforms, where it is less than gpumath::FFT
/// does: the multi-GPU FFT (cuFFT Xt) has no half precision. The defaults are gpumath::FFT's.
struct FftRules {
    /// Why f16/bf16 input is NotSupported, or null where it is transformed.
    const char* no_half = nullptr;
    /// How a message refusing an input's dtype lists the inputs the API takes.
    const char* inputs = "FFT inputs are f32, f64, c32, c64, f16 or bf16";
};

/// Validates a request before any GPU work. `out` may be null (the output layout is then
/// row-major, or the input layout for `inplace`). `forced` is the kind a free function computes
/// (automatic for the FFT class). Throws InvalidArgument / NotSupported naming the operand, the
/// value given and what is allowed; messages start with `api`. The stages run in the order errors
/// are reported: option enums, kind and types (`rules`), input, axes, kind-only options, output
/// extents with c2r's last_axis_size, transform lengths, output layout, half-precision rules,
/// callbacks.
[[nodiscard]] FftProblem make_fft_problem(const TensorLayout& in, const TensorLayout* out, const FFTOptions& options,
                                          FFTKind forced, const char* api, const FftRules& rules = {});

/// make_fft_problem's first stage: every enum of `options` is one of its enumerators.
void check_fft_option_enums(const FFTOptions& options, const char* api);

/// "a c32 element", "an f32 element", "an f16 complex element (a real/imaginary pair)": how
/// messages name one element of a transform's side.
[[nodiscard]] std::string fft_element_text(DataType precision, bool complex);

/// Checks the operands of one execution of `problem` before any GPU work: their layouts are the
/// planned ones, `direction` is a Direction the kind runs, each data pointer is aligned to its
/// element (a complex one, f16/bf16 pairs included, to the whole complex element) and `out` does
/// not overlap `in` unless it is `in` itself in a c2c transform with equal layouts. `out` null:
/// the call allocates the output, so only `in` and `direction` are checked. Throws
/// InvalidArgument naming the operand; messages start with `api`.
void check_fft_operands(const FftProblem& problem, const TensorView& in, const TensorView* out, Direction direction,
                        const char* api);

/// Scale factor of a transform in `direction` of `n` points (the product of the transform
/// lengths) under `normalization`, as NumPy defines it. Also the multi-GPU FFT's.
[[nodiscard]] double normalization_scale(Normalization normalization, Direction direction, double n) noexcept;

/// Scale factor of a transform in `direction` under `problem.normalization`.
[[nodiscard]] double fft_scale(const FftProblem& problem, Direction direction) noexcept;

/// How one operand is handed to cuFFT.
struct FftSide {
    /// The transform reads (input) or writes (output) a contiguous workspace temp instead of the
    /// user's memory; a gather (input) or scatter (output) pass moves the data.
    bool temp = false;
    /// Strides (transform elements) of the operand cuFFT sees, per logical dimension: the user's
    /// strides, or the temp's.
    std::array<std::int64_t, max_rank> strides{};
    /// Elements of the temp (0 when not a temp).
    std::int64_t temp_elements = 0;
    /// cuFFT's advanced layout: embed (outer to inner), stride, distance between batches.
    std::array<std::int64_t, 3> embed{};
    std::int64_t stride = 1;
    std::int64_t dist = 1;
};

/// A cuFFT plan's geometry for a problem, plus the host loop over batch groups that cuFFT's
/// single batch stride cannot express.
struct FftGeometry {
    int rank = 1;
    /// Logical dimension of each cuFFT dimension, outer to inner.
    std::array<int, 3> dims{};
    /// cuFFT lengths, outer to inner (real lengths for r2c/c2r).
    std::array<std::int64_t, 3> n{};
    std::int64_t batch = 1;
    FftSide in{};
    FftSide out{};
    /// Batch groups run by a host loop, one cuFFT execution each (strides in elements of the
    /// operands cuFFT sees).
    int loop_rank = 0;
    std::array<std::int64_t, max_rank> loop_extent{};
    std::array<std::int64_t, max_rank> loop_in_stride{};
    std::array<std::int64_t, max_rank> loop_out_stride{};
    /// Number of cuFFT executions per transform (product of loop_extent).
    [[nodiscard]] std::int64_t executions() const noexcept {
        std::int64_t e = 1;
        for (int i = 0; i < loop_rank; ++i) e *= loop_extent[std::size_t(i)];
        return e;
    }
};

/// Most host-loop executions gpumath accepts for a transform before it copies through a
/// contiguous temp instead (unless each execution is large; see make_fft_geometry).
inline constexpr std::int64_t fft_max_loop_executions = 16;

/// Maps `problem` onto cuFFT. `in_temp`/`out_temp` force a gather/scatter through workspace
/// temps; operands cuFFT cannot address (transform strides that do not nest, broadcast inputs,
/// strided real data of half-precision r2c/c2r) become temps too, as do both operands when more
/// than `max_executions` host-loop executions would be needed and each is small (with
/// `max_executions` <= 1: whatever their size), and the real operand of r2c/c2r when a host loop
/// would start an execution at an odd real offset.
[[nodiscard]] FftGeometry make_fft_geometry(const FftProblem& problem, bool in_temp, bool out_temp,
                                            std::int64_t max_executions = fft_max_loop_executions);

/// True when every host-loop execution of `g` starts the real operand of an r2c/c2r transform at an
/// even real offset (aligned like a complex element, as cuFFT requires); always true for c2c.
[[nodiscard]] bool real_loops_aligned(const FftProblem& problem, const FftGeometry& g) noexcept;

/// The index space and strides of an elementwise pass (kernels/fft_pass_params.hpp, the pass
/// kernel's parameter).
using FftPass = kernels::FftPassParams;
static_assert(kernels::fft_pass_max_rank == max_rank);

/// A pass over `shape` reading with `src` strides and writing with `dst` strides.
[[nodiscard]] FftPass make_fft_pass(const FftOperand& shape, const std::array<std::int64_t, max_rank>& src,
                                    const std::array<std::int64_t, max_rank>& dst) noexcept;

}  // namespace gpumath::detail
