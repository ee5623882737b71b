// SPDX-License-Identifier: Apache-2.0
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

namespace gpumath::test::mm {

namespace {

std::int64_t product(const std::vector<std::int64_t>& s) {
    return std::accumulate(s.begin(), s.end(), std::int64_t(1), std::multiplies<>());
}

std::vector<std::int64_t> unravel(std::int64_t i, const std::vector<std::int64_t>& shape) {
    std::vector<std::int64_t> idx(shape.size());
    for (std::size_t k = shape.size(); k-- > 0;) {
        idx[k] = i % shape[k];
        i /= shape[k];
    }
    return idx;
}

void encode(DataType t, cd x, unsigned char* out) {
    switch (t) {
        case DataType::f16: {
            const __half h = __float2half(float(x.real()));
            std::memcpy(out, &h, 2);
            break;
        }
        case DataType::bf16: {
            const __nv_bfloat16 h = __float2bfloat16(float(x.real()));
            std::memcpy(out, &h, 2);
            break;
        }
        case DataType::f32: {
            const float f = float(x.real());
            std::memcpy(out, &f, 4);
            break;
        }
        case DataType::f64: {
            const double f = x.real();
            std::memcpy(out, &f, 8);
            break;
        }
        case DataType::c32: {
            const float f[2] = {float(x.real()), float(x.imag())};
            std::memcpy(out, f, 8);
            break;
        }
        case DataType::c64: {
            const double f[2] = {x.real(), x.imag()};
            std::memcpy(out, f, 16);
            break;
        }
        case DataType::e4m3: {
            const __nv_fp8_e4m3 f(float(x.real()));
            std::memcpy(out, &f, 1);
            break;
        }
        case DataType::e5m2: {
            const __nv_fp8_e5m2 f(float(x.real()));
            std::memcpy(out, &f, 1);
            break;
        }
        case DataType::i8: {
            const auto i = static_cast<std::int8_t>(std::lround(x.real()));
            std::memcpy(out, &i, 1);
            break;
        }
        case DataType::i32: {
            const auto i = static_cast<std::int32_t>(std::llround(x.real()));
            std::memcpy(out, &i, 4);
            break;
        }
        case DataType::i64: {
            const auto i = static_cast<std::int64_t>(std::llround(x.real()));
            std::memcpy(out, &i, 8);
            break;
        }
    }
}

cd decode(DataType t, const unsigned char* in) {
    switch (t) {
        case DataType::f16: {
            __half h;
            std::memcpy(&h, in, 2);
            return __half2float(h);
        }
        case DataType::bf16: {
            __nv_bfloat16 h;
            std::memcpy(&h, in, 2);
            return __bfloat162float(h);
        }
        case DataType::f32: {
            float f;
            std::memcpy(&f, in, 4);
            return f;
        }
        case DataType::f64: {
            double f;
            std::memcpy(&f, in, 8);
            return f;
        }
        case DataType::c32: {
            float f[2];
            std::memcpy(f, in, 8);
            return {f[0], f[1]};
        }
        case DataType::c64: {
            double f[2];
            std::memcpy(f, in, 16);
            return {f[0], f[1]};
        }
        case DataType::e4m3: {
            __nv_fp8_e4m3 f;
            std::memcpy(&f, in, 1);
            return float(f);
        }
        case DataType::e5m2: {
            __nv_fp8_e5m2 f;
            std::memcpy(&f, in, 1);
            return float(f);
        }
        case DataType::i8: {
            std::int8_t i;
            std::memcpy(&i, in, 1);
            return double(i);
        }
        case DataType::i32: {
            std::int32_t i;
            std::memcpy(&i, in, 4);
            return double(i);
        }
        case DataType::i64: {
            std::int64_t i;
            std::memcpy(&i, in, 8);
            return double(i);
        }
    }
    return 0;
}

void check(cudaError_t s, const char* what) {
    if (s != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(s));
}

}  // namespace

Host::Host(DataType t, std::vector<std::int64_t> s) : dtype(t), shape(std::move(s)), v(std::size_t(product(shape))) {}

cd& Host::at(const std::vector<std::int64_t>& idx) {
    std::int64_t off = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) off = off * shape[k] + idx[k];
    return v[std::size_t(off)];
}
const cd& Host::at(const std::vector<std::int64_t>& idx) const { return const_cast<Host*>(this)->at(idx); }

const cd& Host::broadcast_at(const std::vector<std::int64_t>& idx) const {
    std::int64_t off = 0;
    const std::size_t extra = idx.size() - shape.size();
    for (std::size_t k = 0; k < shape.size(); ++k) off = off * shape[k] + (shape[k] == 1 ? 0 : idx[k + extra]);
    return v[std::size_t(off)];
}

cd round_to(DataType t, cd x) {
    unsigned char buf[16];
    encode(t, x, buf);
    return decode(t, buf);
}

Host random_host(DataType t, std::vector<std::int64_t> shape, std::mt19937_64& rng, double lo, double hi) {
    Host h(t, std::move(shape));
    std::uniform_real_distribution<double> dist(lo, hi);
    std::uniform_int_distribution<int> ints(-8, 8);
    for (cd& x : h.v) {
        if (t == DataType::i8 || t == DataType::i32) {
            int i = 0;
            while (i == 0) i = ints(rng);
            x = double(i);
            continue;
        }
        do {
            x = cd(dist(rng), is_complex(t) ? dist(rng) : 0.0);
            x = round_to(t, x);
        } while (x == cd(0.0));
    }
    return h;
}

std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& shape, bool col_major, std::int64_t pad) {
    const std::size_t r = shape.size();
    std::vector<std::int64_t> s(r);
    if (r == 1) {
        s[0] = 1;
        return s;
    }
    std::int64_t matrix;
    if (col_major) {
        s[r - 2] = 1;
        s[r - 1] = shape[r - 2] + pad;
        matrix = s[r - 1] * shape[r - 1];
    } else {
        s[r - 1] = 1;
        s[r - 2] = shape[r - 1] + pad;
        matrix = s[r - 2] * shape[r - 2];
    }
    for (std::size_t k = r - 2; k-- > 0;) {
        s[k] = matrix;
        matrix *= shape[k];
    }
    return s;
}

namespace {

Dev allocate(DataType t, const std::vector<std::int64_t>& shape, std::vector<std::int64_t>& strides,
             std::size_t offset_bytes, core::StreamRef stream, std::vector<unsigned char>& staging) {
    if (strides.empty()) strides = strides_for(shape, false);
    const TensorLayout layout(t, shape, strides);
    const std::size_t span = std::size_t(layout.span_bytes());
    Dev d;
    d.buffer = core::Buffer(span + offset_bytes + 256, stream);
    auto* base = static_cast<unsigned char*>(d.buffer.data());
    auto* aligned =
        reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(base) + 255) & ~std::uintptr_t(255));
    d.view = TensorView(aligned + offset_bytes, layout);
    staging.assign(d.buffer.size_bytes(), 0xFF);
    return d;
}

}  // namespace

Dev upload(const Host& h, std::vector<std::int64_t> strides, std::size_t offset_bytes, core::StreamRef stream) {
    std::vector<unsigned char> staging;
    Dev d = allocate(h.dtype, h.shape, strides, offset_bytes, stream, staging);
    const auto offset = static_cast<std::size_t>(static_cast<unsigned char*>(d.view.data()) -
                                                 static_cast<unsigned char*>(d.buffer.data()));
    const std::size_t elem = size_of(h.dtype);
    for (std::int64_t i = 0; i < h.size(); ++i) {
        const auto idx = unravel(i, h.shape);
        std::int64_t off = 0;
        for (std::size_t k = 0; k < idx.size(); ++k) off += idx[k] * strides[k];
        encode(h.dtype, h.v[std::size_t(i)], staging.data() + offset + std::size_t(off) * elem);
    }
    check(cudaMemcpyAsync(d.buffer.data(), staging.data(), staging.size(), cudaMemcpyHostToDevice, stream.handle()),
          "upload");
    stream.synchronize();
    return d;
}

Dev poisoned(DataType t, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides, std::size_t offset_bytes,
             core::StreamRef stream) {
    std::vector<unsigned char> staging;
    Dev d = allocate(t, shape, strides, offset_bytes, stream, staging);
    check(cudaMemsetAsync(d.buffer.data(), 0xFF, d.buffer.size_bytes(), stream.handle()), "poison");
    stream.synchronize();
    return d;
}

std::vector<unsigned char> download_bytes(const TensorView& v, core::StreamRef stream) {
    std::vector<unsigned char> bytes(std::size_t(v.span_bytes()));
    check(cudaMemcpyAsync(bytes.data(), v.data(), bytes.size(), cudaMemcpyDeviceToHost, stream.handle()), "download");
    stream.synchronize();
    return bytes;
}

Host download(const TensorView& v, core::StreamRef stream) {
    const auto bytes = download_bytes(v, stream);
    Host h(v.dtype(), std::vector<std::int64_t>(v.shape().begin(), v.shape().end()));
    const std::size_t elem = size_of(v.dtype());
    for (std::int64_t i = 0; i < h.size(); ++i) {
        const auto idx = unravel(i, h.shape);
        std::int64_t off = 0;
        for (std::size_t k = 0; k < idx.size(); ++k) off += idx[k] * v.stride(int(k));
        h.v[std::size_t(i)] = decode(v.dtype(), bytes.data() + std::size_t(off) * elem);
    }
    return h;
}

double gelu(double x) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double gelu_grad(double x) {
    const double k = std::sqrt(2.0 / M_PI);
    const double u = k * (x + 0.044715 * x * x * x);
    const double t = std::tanh(u);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

RefResult reference(const Host& a, const Host& b, DataType d_type, const RefArgs& args) {
    const std::int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
    // Broadcast batch shape.
    const std::size_t ra = a.shape.size() - 2, rb = b.shape.size() - 2, rank = std::max(ra, rb);
    std::vector<std::int64_t> batch(rank, 1);
    for (std::size_t i = 0; i < rank; ++i) {
        const std::int64_t ea = i + ra >= rank ? a.shape[i + ra - rank] : 1;
        const std::int64_t eb = i + rb >= rank ? b.shape[i + rb - rank] : 1;
        batch[i] = std::max(ea, eb);
    }
    std::vector<std::int64_t> dshape = batch;
    dshape.push_back(M);
    dshape.push_back(N);
    RefResult r;
    r.d = Host(d_type, dshape);
    r.pre = Host(d_type, dshape);
    const bool takes_bias = epilog_takes_bias(args.epilog);
    for (std::int64_t i = 0; i < r.d.size(); ++i) {
        std::vector<std::int64_t> idx = unravel(i, dshape);
        const std::int64_t m = idx[rank], n = idx[rank + 1];
        std::vector<std::int64_t> ia = idx, ib = idx;
        ia[rank] = m;
        ia[rank + 1] = 0;
        ib[rank] = 0;
        ib[rank + 1] = n;
        const cd* pa = &a.broadcast_at(ia);  // a[..., m, k] = pa[k]
        const cd* pb = &b.broadcast_at(ib);  // b[..., k, n] = pb[k * N]
        cd acc = 0;
        if (is_complex(a.dtype)) {
            for (std::int64_t k = 0; k < K; ++k) acc += pa[k] * pb[k * N];
        } else {
            double re = 0;
            for (std::int64_t k = 0; k < K; ++k) re += pa[k].real() * pb[k * N].real();
            acc = re;
        }
        cd x = args.alpha * args.scale_ab * acc;
        if (args.c) x += args.beta * args.scale_c * args.c->broadcast_at(idx);
        if (takes_bias) x += args.bias->broadcast_at(idx);
        r.pre.v[std::size_t(i)] = x;
        cd y = x;
        switch (args.epilog) {
            case Epilog::relu:
            case Epilog::relu_aux:
            case Epilog::relu_bias:
            case Epilog::relu_aux_bias:
                y = std::max(x.real(), 0.0);
                break;
            case Epilog::gelu:
            case Epilog::gelu_aux:
            case Epilog::gelu_bias:
            case Epilog::gelu_aux_bias:
                y = gelu(x.real());
                break;
            case Epilog::silu:
            case Epilog::silu_bias:
                y = x.real() / (1.0 + std::exp(-x.real()));
                break;
            case Epilog::drelu:
            case Epilog::drelu_bgrad:
                y = args.grad_pre->at(idx).real() > 0 ? x : cd(0.0);
                break;
            case Epilog::dgelu:
            case Epilog::dgelu_bgrad:
                y = x * gelu_grad(args.grad_pre->at(idx).real());
                break;
            default:
                break;
        }
        r.amax = std::max(r.amax, std::abs(y));
        r.d.v[std::size_t(i)] = y * args.scale_d;
    }
    if (epilog_writes_bias_grad(args.epilog)) {
        const bool over_k_a = args.epilog == Epilog::bgrada, over_k_b = args.epilog == Epilog::bgradb;
        const std::int64_t len = over_k_a ? M : over_k_b ? N : (args.bias_grad_per_column ? N : M);
        std::vector<std::int64_t> gshape = batch;
        gshape.push_back(len);
        r.bias_grad = Host(d_type, gshape);
        for (std::int64_t i = 0; i < r.bias_grad.size(); ++i) {
            std::vector<std::int64_t> g = unravel(i, gshape);
            std::vector<std::int64_t> idx = g;
            idx.pop_back();
            idx.push_back(0);
            idx.push_back(0);
            cd sum = 0;
            if (over_k_a) {
                for (std::int64_t k = 0; k < K; ++k) {
                    idx[rank] = g[rank];
                    idx[rank + 1] = k;
                    sum += a.broadcast_at(idx);
                }
            } else if (over_k_b) {
                for (std::int64_t k = 0; k < K; ++k) {
                    idx[rank] = k;
                    idx[rank + 1] = g[rank];
                    sum += b.broadcast_at(idx);
                }
            } else {
                const std::int64_t other = args.bias_grad_per_column ? M : N;
                for (std::int64_t j = 0; j < other; ++j) {
                    idx[rank] = args.bias_grad_per_column ? j : g[rank];
                    idx[rank + 1] = args.bias_grad_per_column ? g[rank] : j;
                    sum += r.d.at(idx);
                }
            }
            r.bias_grad.v[std::size_t(i)] = sum;
        }
    }
    return r;
}

Product random_product(DataType t, std::int64_t m, std::int64_t n, std::int64_t k, std::mt19937_64& rng) {
    Host a = random_host(t, {m, k}, rng), b = random_host(t, {k, n}, rng);
    Dev da = upload(a), db = upload(b);
    RefResult want = reference(a, b, t, {});
    return {std::move(a), std::move(b), std::move(da), std::move(db), std::move(want)};
}

double relative_error(const Host& got, const Host& want) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < want.v.size(); ++i) {
        if (std::isnan(got.v[i].real()) || std::isnan(got.v[i].imag())) return NAN;
        num += std::norm(got.v[i] - want.v[i]);
        den += std::norm(want.v[i]);
    }
    return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

std::string worst_elements(const Host& got, const Host& want, int count) {
    std::vector<std::size_t> order(want.v.size());
    std::iota(order.begin(), order.end(), 0);
    auto err = [&](std::size_t i) {
        const double e = std::abs(got.v[i] - want.v[i]);
        return std::isnan(e) ? 1e300 : e;
    };
    std::partial_sort(order.begin(), order.begin() + std::min<std::ptrdiff_t>(count, std::ptrdiff_t(order.size())),
                      order.end(), [&](std::size_t x, std::size_t y) { return err(x) > err(y); });
    std::ostringstream s;
    for (int k = 0; k < count && std::size_t(k) < order.size(); ++k) {
        const std::size_t i = order[std::size_t(k)];
        const auto idx = unravel(std::int64_t(i), want.shape);
        s << "\n  at (";
        for (std::size_t j = 0; j < idx.size(); ++j) s << (j ? ", " : "") << idx[j];
        s << "): got " << got.v[i] << " want " << want.v[i];
    }
    return s.str();
}

double tolerance(DataType in, DataType d, ComputeType compute) {
    if (is_fp8(in) || is_fp8(d)) return 5e-2;
    if (d == DataType::bf16 || d == DataType::f16 || in == DataType::bf16 || in == DataType::f16) return 1e-2;
    if (compute == ComputeType::f32_fast_tf32) return 5e-4;
    if (compute == ComputeType::f32_fast_f16 || compute == ComputeType::f32_fast_bf16) return 1e-2;
    if (d == DataType::f64 || d == DataType::c64) return 1e-12;
    if (d == DataType::i32) return 0.0;
    return 1e-5;
}

bool device_at_least(int major, int minor) {
    if (core::Device::count() == 0) return false;
    const auto cc = core::Device::current().compute_capability();
    return cc >= core::ComputeCapability{major, minor};
}

}  // namespace gpumath::test::mm
