// SPDX-License-Identifier: Apache-2.0
// Shared by the FFT GPU tests: strided device operands with poisoned gaps, and a CPU DFT in double.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <gpumath/core.hpp>
#include <gpumath/fft.hpp>

#include "common/test_util.hpp"

namespace gpumath::fft_test {

using cd = std::complex<double>;
using Shape = std::vector<std::int64_t>;

inline std::int64_t count(const Shape& s) {
    std::int64_t n = 1;
    for (auto e : s) n *= e;
    return n;
}

inline std::string str(const Shape& s) {
    std::ostringstream o;
    o << "(";
    for (std::size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
    o << ")";
    return o.str();
}

/// True for complex data of `layout` (c32, c64, or f16/bf16 when `half_complex`).
inline bool complex_data(DataType t, bool half_complex) {
    return is_complex(t) || ((t == DataType::f16 || t == DataType::bf16) && half_complex);
}

/// The logical shape: the layout's, without the trailing pair dimension of complex halves.
inline Shape logical_shape(const TensorLayout& l, bool half_complex) {
    Shape s(l.shape().begin(), l.shape().end());
    if ((l.dtype() == DataType::f16 || l.dtype() == DataType::bf16) && half_complex) s.pop_back();
    return s;
}

/// Element offset (in dtype elements) of logical index `x`.
inline std::int64_t offset(const TensorLayout& l, const Shape& x) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < x.size(); ++d) o += x[d] * l.stride(int(d));
    return o;
}

template <class F>
void for_each_index(const Shape& shape, F&& f) {
    const std::int64_t n = count(shape);
    Shape x(shape.size(), 0);
    for (std::int64_t i = 0; i < n; ++i) {
        f(x, i);
        for (std::size_t d = shape.size(); d-- > 0;) {
            if (++x[d] < shape[d]) break;
            x[d] = 0;
        }
    }
}

inline void put(std::vector<unsigned char>& bytes, DataType t, std::int64_t off, bool half_complex, cd v) {
    unsigned char* p = bytes.data() + off * std::int64_t(size_of(t));
    switch (t) {
        case DataType::f32: {
            const float f = float(v.real());
            std::memcpy(p, &f, 4);
            break;
        }
        case DataType::f64: {
            const double f = v.real();
            std::memcpy(p, &f, 8);
            break;
        }
        case DataType::c32: {
            const std::complex<float> f(v);
            std::memcpy(p, &f, 8);
            break;
        }
        case DataType::c64:
            std::memcpy(p, &v, 16);
            break;
        case DataType::f16: {
            const __half a = __float2half(float(v.real()));
            std::memcpy(p, &a, 2);
            if (half_complex) {
                const __half b = __float2half(float(v.imag()));
                std::memcpy(p + 2, &b, 2);
            }
            break;
        }
        case DataType::bf16: {
            const __nv_bfloat16 a = __float2bfloat16(float(v.real()));
            std::memcpy(p, &a, 2);
            if (half_complex) {
                const __nv_bfloat16 b = __float2bfloat16(float(v.imag()));
                std::memcpy(p + 2, &b, 2);
            }
            break;
        }
        default:
            ADD_FAILURE() << "unsupported dtype";
    }
}

inline cd get(const std::vector<unsigned char>& bytes, DataType t, std::int64_t off, bool half_complex) {
    const unsigned char* p = bytes.data() + off * std::int64_t(size_of(t));
    switch (t) {
        case DataType::f32: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
        case DataType::f64: {
            double f;
            std::memcpy(&f, p, 8);
            return f;
        }
        case DataType::c32: {
            std::complex<float> f;
            std::memcpy(&f, p, 8);
            return cd(f);
        }
        case DataType::c64: {
            cd f;
            std::memcpy(&f, p, 16);
            return f;
        }
        case DataType::f16: {
            __half a, b;
            std::memcpy(&a, p, 2);
            if (!half_complex) return __half2float(a);
            std::memcpy(&b, p + 2, 2);
            return {__half2float(a), __half2float(b)};
        }
        case DataType::bf16: {
            __nv_bfloat16 a, b;
            std::memcpy(&a, p, 2);
            if (!half_complex) return __bfloat162float(a);
            std::memcpy(&b, p + 2, 2);
            return {__bfloat162float(a), __bfloat162float(b)};
        }
        default:
            ADD_FAILURE() << "unsupported dtype";
            return 0;
    }
}

/// Device memory holding a strided operand; bytes outside the addressed elements are 0xFF.
struct Operand {
    core::Buffer buffer;
    TensorLayout layout;
    bool half_complex = false;
    [[nodiscard]] TensorView view() const { return TensorView(buffer.data(), layout); }
    [[nodiscard]] std::size_t bytes() const { return std::size_t(std::max<std::int64_t>(layout.span_bytes(), 1)); }
};

/// An operand of `layout` filled with NaN bytes (the poison every output starts from).
inline Operand poisoned(const TensorLayout& layout, bool half_complex = false) {
    Operand o{core::Buffer(std::size_t(std::max<std::int64_t>(layout.span_bytes(), 1))), layout, half_complex};
    EXPECT_EQ(cudaMemset(o.buffer.data(), 0xFF, o.bytes()), cudaSuccess);
    return o;
}

/// Uploads logical values (row-major over the logical shape) into a new operand of `layout`.
inline Operand upload(const TensorLayout& layout, const std::vector<cd>& values, bool half_complex = false) {
    Operand o = poisoned(layout, half_complex);
    std::vector<unsigned char> host(o.bytes(), 0xFF);
    for_each_index(logical_shape(layout, half_complex), [&](const Shape& x, std::int64_t i) {
        put(host, layout.dtype(), offset(layout, x), half_complex, values[std::size_t(i)]);
    });
    EXPECT_EQ(cudaMemcpy(o.buffer.data(), host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    return o;
}

/// Downloads the logical values (blocking).
inline std::vector<cd> download(const Operand& o) {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char> host(o.bytes());
    EXPECT_EQ(cudaMemcpy(host.data(), o.buffer.data(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    const Shape shape = logical_shape(o.layout, o.half_complex);
    std::vector<cd> v(std::size_t(count(shape)));
    for_each_index(shape, [&](const Shape& x, std::int64_t i) {
        v[std::size_t(i)] = get(host, o.layout.dtype(), offset(o.layout, x), o.half_complex);
    });
    return v;
}

/// Same as download, for a Tensor (row-major).
inline std::vector<cd> download(const Tensor& t, bool half_complex = false) {
    Operand o{core::Buffer(), t.layout(), half_complex};
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char> host(std::size_t(t.layout().span_bytes()));
    EXPECT_EQ(cudaMemcpy(host.data(), t.data(), host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    const Shape shape = logical_shape(t.layout(), half_complex);
    std::vector<cd> v(std::size_t(count(shape)));
    for_each_index(shape, [&](const Shape& x, std::int64_t i) {
        v[std::size_t(i)] = get(host, t.dtype(), offset(t.layout(), x), half_complex);
    });
    return v;
}

/// n random values (real or complex), never zero; rounded to what `dtype` holds.
inline std::vector<cd> random_values(std::int64_t n, bool complex, DataType dtype, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    std::vector<cd> v(static_cast<std::size_t>(n));
    auto round = [&](double x) {
        if (x == 0.0) x = 0.375;
        switch (dtype) {
            case DataType::f32:
            case DataType::c32:
                return double(float(x));
            case DataType::f16:
                return double(__half2float(__float2half(float(x))));
            case DataType::bf16:
                return double(__bfloat162float(__float2bfloat16(float(x))));
            default:
                return x;
        }
    };
    for (auto& e : v) e = complex ? cd(round(dist(rng)), round(dist(rng))) : cd(round(dist(rng)), 0.0);
    return v;
}

/// DFT along `axes` of a row-major array of `shape` (sign -1 forward, +1 inverse), unscaled, O(n^2)
/// per line, in double.
inline std::vector<cd> dft(std::vector<cd> x, const Shape& shape, const std::vector<int>& axes, int sign) {
    for (int axis : axes) {
        const std::int64_t n = shape[std::size_t(axis)];
        std::int64_t inner = 1;
        for (std::size_t d = std::size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
        const std::int64_t outer = count(shape) / (n * inner);
        std::vector<cd> tw(static_cast<std::size_t>(n));
        for (std::int64_t k = 0; k < n; ++k)
            tw[std::size_t(k)] = std::polar(1.0, sign * 2.0 * std::numbers::pi * double(k) / double(n));
        std::vector<cd> line(static_cast<std::size_t>(n));
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t i = 0; i < inner; ++i) {
                const std::int64_t base = o * n * inner + i;
                for (std::int64_t k = 0; k < n; ++k) {
                    cd s = 0;
                    for (std::int64_t j = 0; j < n; ++j)
                        s += x[std::size_t(base + j * inner)] * tw[std::size_t((j * k) % n)];
                    line[std::size_t(k)] = s;
                }
                for (std::int64_t k = 0; k < n; ++k) x[std::size_t(base + k * inner)] = line[std::size_t(k)];
            }
    }
    return x;
}

/// The first n/2+1 entries along `axis` of a full spectrum (NumPy's rfftn layout).
inline std::vector<cd> half_spectrum(const std::vector<cd>& full, const Shape& shape, int axis) {
    Shape h = shape;
    h[std::size_t(axis)] = shape[std::size_t(axis)] / 2 + 1;
    std::vector<cd> out(std::size_t(count(h)));
    for_each_index(h, [&](const Shape& x, std::int64_t i) {
        std::int64_t src = 0;
        for (std::size_t d = 0; d < shape.size(); ++d) src = src * shape[d] + x[d];
        out[std::size_t(i)] = full[std::size_t(src)];
    });
    return out;
}

/// Relative L2 error of `got` against `want` (NaN when any value is NaN), with the first differing
/// index for the message.
inline double rel_error(const std::vector<cd>& got, const std::vector<cd>& want, std::string* where = nullptr) {
    double num = 0, den = 0, worst = -1;
    std::size_t at = 0;
    if (got.size() != want.size()) return INFINITY;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(got[i].real()) || std::isnan(got[i].imag())) {
            if (where) *where = "NaN (poison never overwritten?) at logical index " + std::to_string(i);
            return NAN;
        }
        const double d = std::norm(got[i] - want[i]);
        if (d > worst) {
            worst = d;
            at = i;
        }
        num += d;
        den += std::norm(want[i]);
    }
    if (where && !want.empty()) {
        std::ostringstream o;
        o << "largest difference at logical index " << at << ": got " << got[at] << " want " << want[at];
        *where = o.str();
    }
    return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

/// Tolerance of a transform of precision `p` (relative L2 error).
inline double tolerance(DataType p) {
    switch (p) {
        case DataType::f64:
        case DataType::c64:
            return 1e-11;
        case DataType::f16:
            return 1e-2;
        case DataType::bf16:
            return 4e-2;
        default:
            return 2e-5;
    }
}

#define GPUMATH_EXPECT_CLOSE(got, want, tol, what)                                                                  \
    do {                                                                                                            \
        std::string where_;                                                                                         \
        const double err_ = ::gpumath::fft_test::rel_error(got, want, &where_);                                     \
        EXPECT_LE(err_, tol) << what << ": relative L2 error " << err_ << " (tolerance " << tol << "); " << where_; \
    } while (0)

inline std::vector<cd> scaled(std::vector<cd> v, double s) {
    for (auto& e : v) e *= s;
    return v;
}

}  // namespace gpumath::fft_test
