// SPDX-License-Identifier: Apache-2.0
// preview: which entries of a tensor are shown, copying just those to the host, and writing them
// NumPy-style.
#include <gpumath/tensor_io.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "detail/status.hpp"

namespace gpumath::detail {

namespace {

constexpr std::size_t max_shown = 10000;

/// The indices shown along each axis: all of them, or the first and last `edge` of a long axis.
std::vector<std::vector<std::int64_t>> shown_indices(const TensorLayout& t, bool summarize, int edge) {
    std::vector<std::vector<std::int64_t>> axes(std::size_t(t.rank()));
    for (int d = 0; d < t.rank(); ++d) {
        const std::int64_t n = t.shape(d);
        std::vector<std::int64_t>& idx = axes[std::size_t(d)];
        const bool cut = summarize && n > 2 * std::int64_t(edge);
        for (std::int64_t i = 0; i < n; ++i)
            if (!cut || i < edge || i >= n - edge) idx.push_back(i);
    }
    return axes;
}

std::size_t count_of(const std::vector<std::vector<std::int64_t>>& axes) {
    std::size_t n = 1;
    for (const auto& a : axes) n *= a.size();
    return n;
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0) return (sign != 0 ? -1.0f : 1.0f) * std::ldexp(float(mant), -24);
    if (exp == 31) return mant != 0 ? NAN : (sign != 0 ? -INFINITY : INFINITY);
    const std::uint32_t bits = sign | ((exp + 112) << 23) | (mant << 13);
    float f = 0;
    std::memcpy(&f, &bits, 4);
    return f;
}

/// An FP8 value with `exp_bits` exponent bits (e4m3: 4, finite-only with one NaN; e5m2: 5, IEEE).
float fp8_to_float(std::uint8_t v, int exp_bits) {
    const int mant_bits = 7 - exp_bits, bias = (1 << (exp_bits - 1)) - 1;
    const int exp = (v >> mant_bits) & ((1 << exp_bits) - 1), mant = v & ((1 << mant_bits) - 1);
    const float sign = (v & 0x80) != 0 ? -1.0f : 1.0f;
    if (exp_bits == 4 && exp == 15 && mant == 7) return NAN;
    if (exp_bits == 5 && exp == 31) return mant != 0 ? NAN : sign * INFINITY;
    if (exp == 0) return sign * std::ldexp(float(mant), 1 - bias - mant_bits);
    return sign * std::ldexp(float((1 << mant_bits) | mant), exp - bias - mant_bits);
}

std::complex<double> decode(const unsigned char* p, DataType t) {
    const auto as = [&](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t) {
        case DataType::f16:
            return half_to_float(as(std::uint16_t{}));
        case DataType::bf16: {
            const std::uint32_t bits = std::uint32_t(as(std::uint16_t{})) << 16;
            float f = 0;
            std::memcpy(&f, &bits, 4);
            return f;
        }
        case DataType::f32:
            return as(float{});
        case DataType::f64:
            return as(double{});
        case DataType::c32:
            return {as(float{}), [&] {
                        float im = 0;
                        std::memcpy(&im, p + 4, 4);
                        return double(im);
                    }()};
        case DataType::c64: {
            double re = 0, im = 0;
            std::memcpy(&re, p, 8);
            std::memcpy(&im, p + 8, 8);
            return {re, im};
        }
        case DataType::e4m3:
            return fp8_to_float(*p, 4);
        case DataType::e5m2:
            return fp8_to_float(*p, 5);
        case DataType::i8:
            return double(as(std::int8_t{}));
        case DataType::i32:
            return double(as(std::int32_t{}));
        case DataType::i64:
            return double(as(std::int64_t{}));
    }
    return 0.0;
}

/// Copies the shown elements to the host (on `stream`, which is then synchronized) and decodes them.
std::vector<std::complex<double>> gather(const TensorView& t, const std::vector<std::vector<std::int64_t>>& axes,
                                         core::StreamRef stream) {
    const std::size_t n = count_of(axes), size = size_of(t.dtype());
    std::vector<unsigned char> bytes(n * size);
    std::vector<std::size_t> at(axes.size(), 0);  // odometer over the shown indices
    for (std::size_t k = 0; k < n; ++k) {
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < axes.size(); ++d) offset += axes[d][at[d]] * t.stride(int(d));
        check(cudaMemcpyAsync(bytes.data() + k * size, static_cast<const char*>(t.data()) + offset * std::int64_t(size),
                              size, cudaMemcpyDefault, stream.handle()),
              "cudaMemcpyAsync", "copying the values a preview shows");
        for (std::size_t d = axes.size(); d-- > 0;) {
            if (++at[d] < axes[d].size()) break;
            at[d] = 0;
        }
    }
    stream.synchronize();
    std::vector<std::complex<double>> values(n);
    for (std::size_t k = 0; k < n; ++k) values[k] = decode(bytes.data() + k * size, t.dtype());
    return values;
}

std::string number(double v, bool integer, bool scientific, int precision) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    if (integer) return fmt::format("{}", static_cast<long long>(v));
    return scientific ? fmt::format("{:.{}e}", v, precision) : fmt::format("{:.{}f}", v, precision);
}

/// Writes the nested brackets of axis `d` onwards, entries from `cells` in order.
void write_axis(std::string& out, const std::vector<std::vector<std::int64_t>>& axes, const TensorLayout& t,
                const std::vector<std::string>& cells, std::size_t& next, std::size_t d) {
    out += '[';
    const std::vector<std::int64_t>& idx = axes[d];
    const bool last = d + 1 == axes.size();
    for (std::size_t i = 0; i < idx.size(); ++i) {
        if (i > 0) {
            out += ',';
            if (last) out += ' ';
            else out += std::string(axes.size() - d - 1, '\n') + std::string(d + 1, ' ');
            if (idx[i] != idx[i - 1] + 1) {
                out += "...,";
                if (last) out += ' ';
                else out += std::string(axes.size() - d - 1, '\n') + std::string(d + 1, ' ');
            }
        }
        if (last) out += cells[next++];
        else write_axis(out, axes, t, cells, next, d + 1);
    }
    out += ']';
}

}  // namespace

}  // namespace gpumath::detail

namespace gpumath {

std::string preview(const TensorView& tensor, const PreviewOptions& options, core::StreamRef stream) {
    constexpr const char* api = "gpumath::preview";
    if (options.threshold < 0)
        detail::throw_invalid(fmt::format("options.threshold: {} is negative", options.threshold), api);
    if (options.edge_items < 1 || options.edge_items > 1000)
        detail::throw_invalid(
            fmt::format("options.edge_items: {}; show 1 to 1000 entries at each end", options.edge_items), api);
    if (options.precision < 0 || options.precision > 17)
        detail::throw_invalid(fmt::format("options.precision: {}; use 0 to 17 digits", options.precision), api);
    std::string out = fmt::format("tensor(shape {}, {})\n", to_string(tensor.shape()), to_string(tensor.dtype()));
    if (tensor.size() == 0) return out + "[]";
    detail::reject_blocking_copy_in_capture(stream, api);
    bool summarize = tensor.size() > options.threshold;
    int edge = options.edge_items;
    std::vector<std::vector<std::int64_t>> axes = detail::shown_indices(tensor, summarize, edge);
    while (detail::count_of(axes) > detail::max_shown && edge > 1) {
        summarize = true;
        axes = detail::shown_indices(tensor, summarize, --edge);
    }
    const std::vector<std::complex<double>> values = detail::gather(tensor, axes, stream);
    const DataType t = tensor.dtype();
    const bool integer = t == DataType::i8 || t == DataType::i32 || t == DataType::i64;
    const bool complex = t == DataType::c32 || t == DataType::c64;
    double largest = 0, smallest = INFINITY;
    for (const auto& v : values)
        for (const double x : {v.real(), v.imag()})
            if (std::isfinite(x) && x != 0) {
                largest = std::max(largest, std::abs(x));
                smallest = std::min(smallest, std::abs(x));
            }
    const bool scientific = largest >= 1e8 || (smallest < 1e-4 && largest > 0);
    std::vector<std::string> cells;
    cells.reserve(values.size());
    std::size_t width = 0;
    for (const auto& v : values) {
        std::string cell = detail::number(v.real(), integer, scientific, options.precision);
        if (complex) {
            const std::string im = detail::number(v.imag(), false, scientific, options.precision);
            cell += (im.front() == '-' ? "" : "+") + im + "j";
        }
        width = std::max(width, cell.size());
        cells.push_back(std::move(cell));
    }
    for (std::string& c : cells) c.insert(0, width - c.size(), ' ');
    if (tensor.rank() == 0) return out + cells.front();
    std::size_t next = 0;
    detail::write_axis(out, axes, tensor, cells, next, 0);
    return out;
}

std::ostream& operator<<(std::ostream& out, const TensorView& tensor) {
    return out << preview(tensor, {}, core::current_stream());
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) {
    return out << preview(tensor.view(), {}, core::current_stream());
}

}  // namespace gpumath
