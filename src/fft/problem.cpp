// SPDX-License-Identifier: Apache-2.0
// FFT request validation: the problem a request describes and the normalization scale (host-only,
// no CUDA calls); the operands of one execution are checked in operands.cpp.
#include "fft/geometry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "detail/identifier.hpp"
#include "detail/status.hpp"
#include "fft/sources.hpp"

#include "detail/enum_check.hpp"

namespace gpumath {

void FFTAxes::throw_too_many(std::size_t count) {
    detail::throw_invalid(fmt::format("axes: {} given, at most 3 transform axes are allowed (and at most {} "
                                      "values can be held)",
                                      count, max_rank),
                          "FFTAxes");
}

namespace detail {

std::string fft_element_text(DataType precision, bool complex) {
    const bool half = precision == DataType::f16 || precision == DataType::bf16;
    const std::string_view name = gpumath::to_string(fft_element(precision, complex));
    return fmt::format("{} {}{} element{}", name.starts_with('f') ? "an" : "a", name, complex && half ? " complex" : "",
                       complex && half ? " (a real/imaginary pair)" : "");
}

namespace {

bool is_half(DataType t) noexcept { return t == DataType::f16 || t == DataType::bf16; }
bool is_power_of_two(std::int64_t v) noexcept { return v > 0 && (v & (v - 1)) == 0; }

std::string shape_text(const TensorLayout& l) { return gpumath::to_string(l.shape()); }

// The operand as cuFFT sees its elements. Complex data in f16/bf16 carries a trailing dimension
// of 2 (real, imaginary) with stride 1, dropped here; the other strides must count whole pairs.
FftOperand logical_operand(const TensorLayout& l, bool complex, const char* role, const char* api) {
    FftOperand op;
    if (complex && is_half(l.dtype())) {
        if (l.rank() < 2 || l.shape(-1) != 2 || l.stride(-1) != 1)
            throw_invalid(
                fmt::format("{}: complex {} data needs a trailing dimension of 2 (real, imaginary) with "
                            "stride 1 and at least one more dimension; got shape {} strides {}",
                            role, gpumath::to_string(l.dtype()), shape_text(l), gpumath::to_string(l.strides())),
                api);
        op.rank = l.rank() - 1;
        for (int i = 0; i < op.rank; ++i) {
            const std::int64_t s = l.stride(i);
            if (s % 2 != 0 && l.shape(i) > 1)
                throw_invalid(fmt::format("{}: stride {} of dimension {} is odd; complex {} data needs even strides "
                                          "(whole real/imaginary pairs); strides {}",
                                          role, s, i, gpumath::to_string(l.dtype()), gpumath::to_string(l.strides())),
                              api);
            op.shape[std::size_t(i)] = l.shape(i);
            op.strides[std::size_t(i)] = s / 2;
        }
        return op;
    }
    op.rank = l.rank();
    for (int i = 0; i < op.rank; ++i) {
        op.shape[std::size_t(i)] = l.shape(i);
        op.strides[std::size_t(i)] = l.stride(i);
    }
    return op;
}

DataType precision_of(DataType t) noexcept {
    switch (t) {
        case DataType::c32:
            return DataType::f32;
        case DataType::c64:
            return DataType::f64;
        default:
            return t;
    }
}

// Lays out a row-major layout of `logical` extents for `dtype`, appending the pair dimension
// for half-precision complex data.
TensorLayout user_layout(DataType dtype, bool complex, const FftOperand& logical) {
    std::array<std::int64_t, max_rank + 1> shape{};
    std::size_t r = std::size_t(logical.rank);
    for (std::size_t i = 0; i < r; ++i) shape[i] = logical.shape[i];
    if (complex && is_half(dtype)) shape[r++] = 2;
    return TensorLayout(dtype, std::span<const std::int64_t>(shape.data(), r));
}

// ---------------------------------------------------------------------------------------------
// The stages of make_fft_problem, in the order it runs them (which is the order in which errors
// are reported).

// The kind asked for: the function's (`forced`), else the option's, else what the dtypes imply.
FFTKind requested_kind(DataType dt, const TensorLayout* out, FFTKind option, FFTKind forced, const FftRules& rules,
                       const char* api) {
    if (forced != FFTKind::automatic && option != FFTKind::automatic && option != forced)
        throw_invalid(fmt::format("options.kind: {} given, but this function computes {} transforms; leave kind "
                                  "automatic or use the matching function (fft/ifft c2c, rfft r2c, irfft c2r)",
                                  to_string(option), to_string(forced)),
                      api);
    if (is_half(dt) && rules.no_half != nullptr)
        throw_not_supported(fmt::format("input: dtype {}: {}", gpumath::to_string(dt), rules.no_half), api);
    const bool supported =
        dt == DataType::f32 || dt == DataType::f64 || dt == DataType::c32 || dt == DataType::c64 || is_half(dt);
    if (!supported)
        throw_invalid(fmt::format("input: dtype {} cannot be transformed; {}", gpumath::to_string(dt), rules.inputs),
                      api);
    FFTKind kind = forced != FFTKind::automatic ? forced : option;
    if (kind == FFTKind::automatic) {
        kind = is_complex(dt) ? FFTKind::c2c : FFTKind::r2c;
        // An explicit real output of complex input can only be a complex-to-real transform.
        if (is_complex(dt) && out != nullptr && (out->dtype() == DataType::f32 || out->dtype() == DataType::f64))
            kind = FFTKind::c2r;
    }
    return kind;
}

// Kind and types: the input's dtype suits the kind; the precision and which sides are complex.
void kind_stage(const TensorLayout& in, const TensorLayout* out, const FFTOptions& options, FFTKind forced,
                const FftRules& rules, FftProblem& p, const char* api) {
    const DataType dt = in.dtype();
    const FFTKind kind = requested_kind(dt, out, options.kind, forced, rules, api);
    const bool real_in = dt == DataType::f32 || dt == DataType::f64;
    const bool half = rules.no_half == nullptr;
    const char* complex_inputs = half ? "c32, c64, or f16/bf16 with a trailing dimension of 2" : "c32 or c64";
    switch (kind) {
        case FFTKind::c2c:
            p.kind = FFTKind::c2c;
            if (real_in)
                throw_invalid(fmt::format("input: dtype {} is real; complex-to-complex (c2c) transforms need complex "
                                          "input ({}); use rfft for real input",
                                          gpumath::to_string(dt), complex_inputs),
                              api);
            break;
        case FFTKind::r2c:
            p.kind = FFTKind::r2c;
            if (is_complex(dt))
                throw_invalid(fmt::format("input: dtype {} is complex; real-to-complex transforms (rfft) need real "
                                          "input ({}); use fft for complex input",
                                          gpumath::to_string(dt), half ? "f32, f64, f16, bf16" : "f32 or f64"),
                              api);
            break;
        case FFTKind::c2r:
            p.kind = FFTKind::c2r;
            if (real_in)
                throw_invalid(fmt::format("input: dtype {} is real; complex-to-real (c2r) transforms (irfft) need "
                                          "complex input ({})",
                                          gpumath::to_string(dt), complex_inputs),
                              api);
            break;
        case FFTKind::automatic:
            break;
    }
    p.precision = precision_of(dt);
    p.in_complex = p.kind != FFTKind::r2c;
    p.out_complex = p.kind != FFTKind::c2r;
}

// The input in transform elements; a scalar has nothing to transform.
void input_stage(const TensorLayout& in, FftProblem& p, const char* api) {
    p.in_layout = in;
    p.in = logical_operand(in, p.in_complex, "input", api);
    if (p.in.rank == 0)
        throw_invalid(
            fmt::format("input: rank 0 (a scalar, {}); FFTs need at least one dimension", gpumath::to_string(in)), api);
}

// Transform axes: the last by default, else 1 to 3 distinct axes in range, made non-negative.
void axes_stage(const FFTAxes& given, FftProblem& p, const char* api) {
    const int rank = p.in.rank;
    std::array<int, max_rank> axes{};
    int naxes = given.size();
    if (naxes == 0) {
        axes[0] = rank - 1;
        naxes = 1;
    } else {
        if (naxes > 3)
            throw_invalid(
                fmt::format("axes: {} given ({}); 1 to 3 transform axes are allowed", naxes, fmt::join(given, ", ")),
                api);
        for (int i = 0; i < naxes; ++i) {
            const int a = given[i];
            if (a < -rank || a >= rank)
                throw_invalid(fmt::format("axes: axis {} is out of range for an input of rank {} (shape {}); valid "
                                          "axes are {}..{}",
                                          a, rank, gpumath::to_string(std::span(p.in.shape.data(), std::size_t(rank))),
                                          -rank, rank - 1),
                              api);
            axes[std::size_t(i)] = a < 0 ? a + rank : a;
            for (int j = 0; j < i; ++j)
                if (axes[std::size_t(j)] == axes[std::size_t(i)])
                    throw_invalid(fmt::format("axes: axis {} is repeated in ({}); each axis may appear once",
                                              axes[std::size_t(i)], fmt::join(given, ", ")),
                                  api);
        }
    }
    p.naxes = naxes;
    for (int i = 0; i < naxes; ++i) p.axes[std::size_t(i)] = axes[std::size_t(i)];
}

// Options that apply to one kind only.
void check_kind_options(const FFTOptions& options, FFTKind kind, const char* api) {
    if (options.last_axis_size < 0)
        throw_invalid(fmt::format("options.last_axis_size: {} is negative; give the c2r output length (>= 1) or 0 "
                                  "for the default 2 * (m - 1)",
                                  options.last_axis_size),
                      api);
    if (options.last_axis_size != 0 && kind != FFTKind::c2r)
        throw_invalid(fmt::format("options.last_axis_size: {} given for a {} transform; it sets the output length of "
                                  "complex-to-real transforms (irfft) only",
                                  options.last_axis_size, to_string(kind)),
                      api);
    if (options.inplace && kind != FFTKind::c2c)
        throw_invalid(fmt::format("options.inplace: in-place transforms are only supported for c2c; {} transforms "
                                  "change the element type and need separate input and output",
                                  to_string(kind)),
                      api);
}

// Whether two different indices of `op` address one element (strides in elements, none negative).
// Strides that nest (sorted, each at least the span of the dimensions inside it) rule it out; a pair
// of dimensions whose strides have a common multiple within both extents proves it. Between those,
// the offsets are listed when there are few, and a layout too large to list counts as overlapping
// (it cannot be shown one-to-one; cuFFT's layouts all nest).
bool self_overlapping(const FftOperand& op) {
    struct Dim {
        std::int64_t extent, stride;
    };
    std::vector<Dim> dims;
    for (int i = 0; i < op.rank; ++i) {
        if (op.shape[std::size_t(i)] == 0) return false;  // no element at all
        if (op.shape[std::size_t(i)] > 1) dims.push_back({op.shape[std::size_t(i)], op.strides[std::size_t(i)]});
    }
    for (const Dim& d : dims)
        if (d.stride == 0) return true;
    std::sort(dims.begin(), dims.end(), [](const Dim& x, const Dim& y) { return x.stride < y.stride; });
    bool nested = true;
    std::int64_t span = 0;  // the largest offset of the dimensions so far (fits: the layout was validated)
    for (const Dim& d : dims) {
        if (d.stride <= span) nested = false;
        span += (d.extent - 1) * d.stride;
    }
    if (nested) return false;
    for (std::size_t i = 0; i < dims.size(); ++i)
        for (std::size_t j = i + 1; j < dims.size(); ++j) {
            // a * s_i == b * s_j with 0 < a < e_i, 0 < b < e_j: the smallest such pair.
            const std::int64_t g = std::gcd(dims[i].stride, dims[j].stride);
            if (dims[j].stride / g < dims[i].extent && dims[i].stride / g < dims[j].extent) return true;
        }
    // An outermost dimension whose stride exceeds the span of all the others repeats them without
    // meeting them: only the dimensions inside it need listing.
    for (;;) {
        std::int64_t inner = 0;
        for (std::size_t i = 0; i + 1 < dims.size(); ++i) inner += (dims[i].extent - 1) * dims[i].stride;
        if (dims.size() < 2 || dims.back().stride <= inner) break;
        dims.pop_back();
    }
    std::int64_t count = 1;
    for (const Dim& d : dims) {
        count *= d.extent;
        if (count > (std::int64_t(1) << 20)) return true;
    }
    std::vector<std::int64_t> offsets{0};
    for (const Dim& d : dims) {
        const std::size_t inner = offsets.size();
        for (std::int64_t k = 1; k < d.extent; ++k)
            for (std::size_t o = 0; o < inner; ++o) offsets.push_back(offsets[o] + k * d.stride);
    }
    std::sort(offsets.begin(), offsets.end());
    return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

// The c2r output length along the last transform axis: `last_axis_size`, else the out view's
// extent there, else 2 * (m - 1); it must give back the input's extent m as n / 2 + 1.
std::int64_t last_axis_size_stage(const FftProblem& p, const TensorLayout* out, std::int64_t last_axis_size,
                                  const char* api) {
    const int last = p.axes[std::size_t(p.naxes - 1)];
    const std::int64_t m = p.in.shape[std::size_t(last)];
    // An empty input bounds no extent by its bytes; keep 2 * m - 1 within int64.
    if (m > std::numeric_limits<std::int64_t>::max() / 2)
        throw_invalid(fmt::format("input: extent {} along the last transform axis {} is too large: the c2r output "
                                  "length 2 * (m - 1) does not fit in int64",
                                  m, last),
                      api);
    std::int64_t n = last_axis_size;
    if (n == 0 && out != nullptr) {
        // The output view fixes the length (its layout is checked in full by output_stage).
        FftOperand o = logical_operand(*out, false, "out", api);
        if (o.rank == p.in.rank) n = o.shape[std::size_t(last)];
    }
    if (n == 0 && m == 0)
        throw_invalid(fmt::format("input: extent 0 along the last transform axis {}; a c2r transform needs at least "
                                  "one element there (n / 2 + 1 >= 1)",
                                  last),
                      api);
    if (n == 0) {
        n = 2 * (m - 1);
        if (n == 0)
            throw_invalid(fmt::format("input: extent {} along the last transform axis {} gives a default c2r output "
                                      "length of 2 * (m - 1) = 0; pass options.last_axis_size (1 for a "
                                      "single point)",
                                      m, last),
                          api);
    }
    if (m != n / 2 + 1)
        throw_invalid(fmt::format("options.last_axis_size: an output length of {} along axis {} needs an input "
                                  "extent of {} / 2 + 1 = {} there, the input has {} (shape {}); valid lengths "
                                  "for this input are {} and {}",
                                  n, last, n, n / 2 + 1, m,
                                  gpumath::to_string(std::span(p.in.shape.data(), std::size_t(p.in.rank))), 2 * (m - 1),
                                  2 * m - 1),
                      api);
    return n;
}

// The output's extents in transform elements: the input's, with r2c's halved last transform axis
// or c2r's output length there.
FftOperand output_extents_stage(const FftProblem& p, const TensorLayout* out, std::int64_t last_axis_size,
                                const char* api) {
    FftOperand want = p.in;
    const auto last = std::size_t(p.axes[std::size_t(p.naxes - 1)]);
    if (p.kind == FFTKind::r2c) want.shape[last] = p.in.shape[last] / 2 + 1;
    if (p.kind == FFTKind::c2r) want.shape[last] = last_axis_size_stage(p, out, last_axis_size, api);
    return want;
}

// Transform lengths (c2r's are the output's), their product, and whether a batch is empty.
void lengths_stage(const FftOperand& want, FftProblem& p, const char* api) {
    for (int i = 0; i < p.naxes; ++i) {
        const int a = p.axes[std::size_t(i)];
        const std::int64_t len = p.kind == FFTKind::c2r ? want.shape[std::size_t(a)] : p.in.shape[std::size_t(a)];
        if (len == 0)
            throw_invalid(fmt::format("input: extent 0 along transform axis {} (shape {}); a transform needs at least "
                                      "one point",
                                      a, gpumath::to_string(std::span(p.in.shape.data(), std::size_t(p.in.rank)))),
                          api);
        p.n[std::size_t(i)] = len;
        if (__builtin_mul_overflow(p.n_total, len, &p.n_total))
            throw_invalid(fmt::format("input: transform size does not fit in int64: the product of the transform "
                                      "lengths (through axis {}, shape {}) overflows; transform fewer or shorter axes",
                                      a, gpumath::to_string(std::span(p.in.shape.data(), std::size_t(p.in.rank)))),
                          api);
    }
    for (int i = 0; i < p.in.rank; ++i)
        if (p.in.shape[std::size_t(i)] == 0) p.empty = true;
}

// InvalidArgument when the output `op` (of user layout `layout`, called `name`) broadcasts or puts
// two elements at one address: results would overwrite each other.
// `name` is the operand the results are written through: "out", or "in" for an in-place transform.
void check_output_addresses(const FftOperand& op, const TensorLayout& layout, const char* name, const char* api) {
    const bool in_place = std::string_view(name) == "in";
    const char* role = in_place ? " (an in-place transform writes its results through in)" : "";
    for (int i = 0; i < op.rank; ++i)
        if (op.shape[std::size_t(i)] > 1 && op.strides[std::size_t(i)] == 0)
            throw_invalid(fmt::format("{}: stride 0 along dimension {} (strides {}) would write several results to "
                                      "one element; outputs cannot broadcast{}",
                                      name, i, gpumath::to_string(layout.strides()), role),
                          api);
    if (self_overlapping(op))
        throw_invalid(fmt::format("{}: shape {} with strides {} puts several elements at one address (or cannot be "
                                  "shown not to), so results would overwrite each other{}; give each element of the "
                                  "output its own memory (for instance strides that nest, as a contiguous tensor's do)",
                                  name, shape_text(layout), gpumath::to_string(layout.strides()), role),
                      api);
}

// The output layout: the out view's, checked against what the transform writes, else the input's
// (in place) or a row-major one.
void output_stage(const TensorLayout& in, const TensorLayout* out, bool inplace, const FftOperand& want, FftProblem& p,
                  const char* api) {
    const DataType out_dtype = p.out_complex ? fft_element(p.precision, true) : p.precision;
    if (out == nullptr) {
        if (inplace) {
            p.out_layout = in;
            p.out = p.in;
            // In place, the input's layout is the output's: it must give each element its own address.
            check_output_addresses(p.out, in, "in", api);
        } else {
            p.out_layout = user_layout(out_dtype, p.out_complex, want);
            p.out = logical_operand(p.out_layout, p.out_complex, "out", api);
        }
        return;
    }
    if (out->dtype() != out_dtype)
        throw_invalid(
            fmt::format("out: dtype {} given, a {} transform of {} input writes {}", gpumath::to_string(out->dtype()),
                        to_string(p.kind), gpumath::to_string(in.dtype()), gpumath::to_string(out_dtype)),
            api);
    const TensorLayout expected = user_layout(out_dtype, p.out_complex, want);
    bool same_shape = out->rank() == expected.rank();
    for (int i = 0; same_shape && i < expected.rank(); ++i) same_shape = out->shape(i) == expected.shape(i);
    if (!same_shape)
        throw_invalid(
            fmt::format("out: shape {} given, the {} transform of input shape {} along axes ({}) "
                        "writes shape {}",
                        shape_text(*out), to_string(p.kind), shape_text(in),
                        fmt::join(std::span(p.axes.data(), std::size_t(p.naxes)), ", "), shape_text(expected)),
            api);
    p.out_layout = *out;
    p.out = logical_operand(*out, p.out_complex, "out", api);
    check_output_addresses(p.out, *out, "out", api);
    if (inplace && !(*out == in))
        throw_invalid(fmt::format("out: options.inplace needs the output layout to equal the input layout ({}); "
                                  "got {}",
                                  gpumath::to_string(in), gpumath::to_string(*out)),
                      api);
}

// Half precision: power-of-two lengths, fewer than 2^32 elements, no callbacks; bf16's compute
// capability is checked when planning (it needs a device).
void check_half_precision(const FftProblem& p, const TensorLayout& in, const FFTOptions& options, const char* api) {
    if (!is_half(p.precision)) return;
    for (int i = 0; i < p.naxes; ++i)
        if (!is_power_of_two(p.n[std::size_t(i)]))
            throw_not_supported(fmt::format("input: {} transforms need power-of-two lengths (a cuFFT rule); length {} "
                                            "along axis {} is not one (shape {}); use f32 for other lengths",
                                            gpumath::to_string(p.precision), p.n[std::size_t(i)],
                                            p.axes[std::size_t(i)], shape_text(in)),
                                api);
    // cuFFT does not support half-precision transforms spanning more than 4 billion (2^32)
    // elements: refused here, before any GPU work, instead of by cuFFT's planning. Counted in
    // transform elements (a complex pair is one) over the whole batch, input and output.
    constexpr std::int64_t half_limit = std::int64_t(1) << 32;
    for (const FftOperand* op : {&p.in, &p.out}) {
        std::int64_t count = 1;
        bool over = false;
        for (int i = 0; i < op->rank; ++i)
            over = over || __builtin_mul_overflow(count, op->shape[std::size_t(i)], &count);
        if (over || count >= half_limit)
            throw_not_supported(
                fmt::format(
                    "{}: {} transforms of 2^32 or more elements are not supported (a cuFFT rule: half-precision "
                    "transforms may not span more than 4 billion elements); the {} has {} elements{} (shape {}); "
                    "use f32, or transform the batch in parts",
                    op == &p.in ? "input" : "out", gpumath::to_string(p.precision), op == &p.in ? "input" : "output",
                    over ? std::string("more than 2^63") : fmt::format("{}", count),
                    (op == &p.in ? p.in_complex : p.out_complex) ? " (complex pairs)" : "",
                    gpumath::to_string(std::span(op->shape.data(), std::size_t(op->rank)))),
                api);
    }
    if (!options.prolog.empty() || !options.epilog.empty())
        throw_not_supported(fmt::format("options.{}: callbacks need f32/c32/f64/c64 data (cuFFT has no "
                                        "half-precision callbacks); the input is {}",
                                        options.prolog.empty() ? "epilog" : "prolog", gpumath::to_string(in.dtype())),
                            api);
}

// Each callback names its function and comes as source or LTO-IR (one of them).
void check_callbacks(const FFTOptions& options, const char* api) {
    for (const FFTCallback* cb : {&options.prolog, &options.epilog}) {
        const char* name = cb == &options.prolog ? "prolog" : "epilog";
        // Which one would run is a guess either way, and the plan cache keys code by identity alone.
        if (!cb->source.empty() && !cb->code.empty())
            throw_invalid(
                fmt::format("options.{}: give source or code, not both (source has {} bytes, code is {} "
                            "bytes of {})",
                            name, cb->source.size(), cb->code.bytes().size(), core::to_string(cb->code.type())),
                api);
        if (!cb->empty() && cb->symbol.empty())
            throw_invalid(fmt::format("options.{}.symbol: empty; name the __device__ function the callback source "
                                      "defines",
                                      name),
                          api);
        if (!cb->symbol.empty()) check_qualified_name(cb->symbol, fmt::format("options.{}.symbol", name), api);
        if (cb->empty() && !cb->symbol.empty())
            throw_invalid(fmt::format("options.{}: symbol \"{}\" given without source or code", name, cb->symbol), api);
        // Nothing would read it, yet it keys the plan: surely a callback that was meant to be set.
        if (cb->empty() && cb->user_info != nullptr)
            throw_invalid(fmt::format("options.{}.user_info: given without a callback (no source or code); set the "
                                      "callback, or leave user_info null",
                                      name),
                          api);
        check_no_nul(cb->source, fmt::format("options.{}.source", name), api);
        // cuFFT links callbacks as LTO-IR; PTX or a cubin would only fail when planning.
        if (!cb->code.empty() && cb->code.type() != core::CodeType::ltoir)
            throw_invalid(fmt::format("options.{}: ObjectCode of type {} given; an FFT callback must be CUDA C++ "
                                      "source or LTO-IR (CodeType::ltoir)",
                                      name, core::to_string(cb->code.type())),
                          api);
    }
    // Fused, each callback's module is compiled from the whole source with the other function
    // renamed away by its own name; two functions of one name cannot be told apart.
    if (options.callback_mode == CallbackMode::fused && fft_callbacks_share_name(options))
        throw_invalid(fmt::format("options.epilog.symbol: \"{}\" ends in the same name as options.prolog.symbol "
                                  "\"{}\", and both come from one source; fused callbacks of one source need "
                                  "functions of different names (the two modules cuFFT links would both define "
                                  "them); rename one, or use CallbackMode::separate or automatic",
                                  options.epilog.symbol, options.prolog.symbol),
                      api);
}

}  // namespace

void check_fft_option_enums(const FFTOptions& options, const char* api) {
    check_enum(options.kind, int(FFTKind::c2r) + 1, "an FFTKind", "options.kind", api);
    check_enum(options.normalization, int(Normalization::none) + 1, "a Normalization", "options.normalization", api);
    check_enum(options.callback_mode, int(CallbackMode::separate) + 1, "a CallbackMode", "options.callback_mode", api);
}

FftProblem make_fft_problem(const TensorLayout& in, const TensorLayout* out, const FFTOptions& options, FFTKind forced,
                            const char* api, const FftRules& rules) {
    check_fft_option_enums(options, api);
    FftProblem p;
    kind_stage(in, out, options, forced, rules, p, api);
    input_stage(in, p, api);
    axes_stage(options.axes, p, api);
    check_kind_options(options, p.kind, api);
    const FftOperand want = output_extents_stage(p, out, options.last_axis_size, api);
    lengths_stage(want, p, api);
    output_stage(in, out, options.inplace, want, p, api);
    check_half_precision(p, in, options, api);
    check_callbacks(options, api);
    p.normalization = options.normalization;
    p.inplace = options.inplace;
    p.overwrite_input = options.overwrite_input;
    p.has_prolog = !options.prolog.empty();
    p.has_epilog = !options.epilog.empty();
    return p;
}

double fft_scale(const FftProblem& problem, Direction direction) noexcept {
    return normalization_scale(problem.normalization, direction, double(problem.n_total));
}

double normalization_scale(Normalization normalization, Direction direction, double n) noexcept {
    switch (normalization) {
        case Normalization::backward:
            return direction == Direction::inverse ? 1.0 / n : 1.0;
        case Normalization::forward:
            return direction == Direction::forward ? 1.0 / n : 1.0;
        case Normalization::ortho:
            return 1.0 / std::sqrt(n);
        case Normalization::none:
            return 1.0;
    }
    return 1.0;
}

}  // namespace detail
}  // namespace gpumath
