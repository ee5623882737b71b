// SPDX-License-Identifier: Apache-2.0
// The tensor kernels behind gpumath::fill, cast and copy: one conversion rule for every pair of
// element types, applied by flat kernels (contiguous operands, 16-byte loads and stores where
// aligned), a strided kernel (any layout, up to eight dimensions) and a tiled transpose (the input's
// unit stride along the output's rows). Instantiated by name expression for the types a call
// needs: fill_flat<T, V>, fill_strided<T>, convert_flat<In, Out, V>, affine_flat<In, Out, V>,
// convert_strided<In, Out> and transpose<In, Out>.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "tensor_ops_params.hpp"

namespace gpumath::kernels {

/// gpumath's complex element types (std::complex's layout).
struct c32 {
    float re, im;
};
struct c64 {
    double re, im;
};

/// A value in flight between two element types.
struct Value {
    double re, im;
};

// Reading: every type to a complex double, exactly.
__device__ inline Value to_value(float x) { return {x, 0.0}; }
__device__ inline Value to_value(double x) { return {x, 0.0}; }
__device__ inline Value to_value(__half x) { return {__half2float(x), 0.0}; }
__device__ inline Value to_value(__nv_bfloat16 x) { return {__bfloat162float(x), 0.0}; }
__device__ inline Value to_value(__nv_fp8_e4m3 x) { return {static_cast<float>(x), 0.0}; }
__device__ inline Value to_value(__nv_fp8_e5m2 x) { return {static_cast<float>(x), 0.0}; }
__device__ inline Value to_value(signed char x) { return {double(x), 0.0}; }
__device__ inline Value to_value(int x) { return {double(x), 0.0}; }
__device__ inline Value to_value(c32 x) { return {x.re, x.im}; }
__device__ inline Value to_value(c64 x) { return {x.re, x.im}; }

/// An integer of [lo, hi] from `x`: rounded toward zero, saturated, NaN as 0.
__device__ inline double to_integer(double x, double lo, double hi) {
    if (x != x) return 0.0;
    return fmin(fmax(trunc(x), lo), hi);
}

// Writing: rounded to nearest (even); FP8 saturates to its largest finite value (448, 57344),
// infinities included, and keeps NaN; integers as to_integer; a complex value written to a real
// type gives its real part.
template <class T>
__device__ inline T from_value(Value v);
template <>
__device__ inline float from_value<float>(Value v) {
    return float(v.re);
}
template <>
__device__ inline double from_value<double>(Value v) {
    return v.re;
}
template <>
__device__ inline __half from_value<__half>(Value v) {
    return __double2half(v.re);
}
template <>
__device__ inline __nv_bfloat16 from_value<__nv_bfloat16>(Value v) {
    return __double2bfloat16(v.re);
}
template <>
__device__ inline __nv_fp8_e4m3 from_value<__nv_fp8_e4m3>(Value v) {
    __nv_fp8_e4m3 r;
    r.__x = __nv_cvt_double_to_fp8(v.re, __NV_SATFINITE, __NV_E4M3);
    return r;
}
template <>
__device__ inline __nv_fp8_e5m2 from_value<__nv_fp8_e5m2>(Value v) {
    __nv_fp8_e5m2 r;
    r.__x = __nv_cvt_double_to_fp8(v.re, __NV_SATFINITE, __NV_E5M2);
    return r;
}
template <>
__device__ inline signed char from_value<signed char>(Value v) {
    return static_cast<signed char>(to_integer(v.re, -128.0, 127.0));
}
template <>
__device__ inline int from_value<int>(Value v) {
    return static_cast<int>(to_integer(v.re, -2147483648.0, 2147483647.0));
}
template <>
__device__ inline c32 from_value<c32>(Value v) {
    return {float(v.re), float(v.im)};
}
template <>
__device__ inline c64 from_value<c64>(Value v) {
    return {v.re, v.im};
}

template <class A, class B>
struct same_type {
    static constexpr bool value = false;
};
template <class A>
struct same_type<A, A> {
    static constexpr bool value = true;
};

/// `x` as an Out: itself, bit for bit, when the types are one (a copy keeps NaN payloads and
/// negative zeros), else through a Value.
template <class In, class Out>
__device__ inline Out convert(In x) {
    if constexpr (same_type<In, Out>::value) return x;
    else return from_value<Out>(to_value(x));
}

/// `n` elements of one type moved as one aligned vector (a 16-byte load or store for n * sizeof(T)
/// of 16). A pack of one element asks for no more than the element's own alignment: a c64 array
/// may sit at any 8-byte boundary.
template <class T, int N>
struct alignas(N == 1 ? alignof(T) : (N * sizeof(T) >= 16 ? 16 : N * sizeof(T))) Pack {
    T v[N];
};

__device__ inline long long first_thread() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline long long thread_count() { return (long long)gridDim.x * blockDim.x; }

/// The element offsets of index `i` of the index space in both operands.
struct Offsets {
    long long in, out;
};
__device__ inline Offsets offsets_of(const ElementwiseParams& p, long long i) {
    Offsets o{0, 0};
    for (int d = p.rank - 1; d >= 0; --d) {
        const long long extent = p.shape[d];
        const long long c = i % extent;
        i /= extent;
        o.in += c * p.in_strides[d];
        o.out += c * p.out_strides[d];
    }
    return o;
}

/// Writes the fill value to `count` contiguous elements, V at a time (the output aligned to V).
template <class T, int V>
__global__ void fill_flat(const ElementwiseParams p) {
    const T value = from_value<T>(Value{p.value_re, p.value_im});
    Pack<T, V> pack;
    for (int k = 0; k < V; ++k) pack.v[k] = value;
    auto* out = static_cast<Pack<T, V>*>(p.out);
    const long long packs = p.count / V;
    for (long long i = first_thread(); i < packs; i += thread_count()) out[i] = pack;
    for (long long i = packs * V + first_thread(); i < p.count; i += thread_count()) static_cast<T*>(p.out)[i] = value;
}

/// Writes the fill value to every element of a strided output.
template <class T>
__global__ void fill_strided(const ElementwiseParams p) {
    const T value = from_value<T>(Value{p.value_re, p.value_im});
    for (long long i = first_thread(); i < p.count; i += thread_count())
        static_cast<T*>(p.out)[offsets_of(p, i).out] = value;
}

/// Converts `count` contiguous elements, V at a time (both operands aligned to V elements).
template <class In, class Out, int V>
__global__ void convert_flat(const ElementwiseParams p) {
    const auto* in = static_cast<const Pack<In, V>*>(p.in);
    auto* out = static_cast<Pack<Out, V>*>(p.out);
    const long long packs = p.count / V;
    for (long long i = first_thread(); i < packs; i += thread_count()) {
        const Pack<In, V> a = in[i];
        Pack<Out, V> b;
        for (int k = 0; k < V; ++k) b.v[k] = convert<In, Out>(a.v[k]);
        out[i] = b;
    }
    for (long long i = packs * V + first_thread(); i < p.count; i += thread_count())
        static_cast<Out*>(p.out)[i] = convert<In, Out>(static_cast<const In*>(p.in)[i]);
}

/// Converts `count` contiguous real elements as `convert_flat` does, mapping each value x to
/// value_re * x + value_im on the way (how random values reach their range). In may be Out in
/// place: each thread reads a pack before writing it.
template <class In, class Out, int V>
__global__ void affine_flat(const ElementwiseParams p) {
    const auto* in = static_cast<const Pack<In, V>*>(p.in);
    auto* out = static_cast<Pack<Out, V>*>(p.out);
    const auto map = [&](In x) { return from_value<Out>(Value{p.value_re * to_value(x).re + p.value_im, 0.0}); };
    const long long packs = p.count / V;
    for (long long i = first_thread(); i < packs; i += thread_count()) {
        const Pack<In, V> a = in[i];
        Pack<Out, V> b;
        for (int k = 0; k < V; ++k) b.v[k] = map(a.v[k]);
        out[i] = b;
    }
    for (long long i = packs * V + first_thread(); i < p.count; i += thread_count())
        static_cast<Out*>(p.out)[i] = map(static_cast<const In*>(p.in)[i]);
}

/// Converts every element of a strided index space.
template <class In, class Out>
__global__ void convert_strided(const ElementwiseParams p) {
    for (long long i = first_thread(); i < p.count; i += thread_count()) {
        const Offsets o = offsets_of(p, i);
        static_cast<Out*>(p.out)[o.out] = convert<In, Out>(static_cast<const In*>(p.in)[o.in]);
    }
}

constexpr int tile = 32, tile_rows = 8;

/// Transposes (and converts) 32 x 32 tiles through shared memory: a block reads 32 lines of the
/// input along its unit stride and writes 32 lines of the output along its own. Grid: x over
/// column tiles, y over row tiles, z over batches (each dimension looping where the grid is
/// smaller).
template <class In, class Out>
__global__ void transpose(const TransposeParams p) {
    __shared__ In cell[tile][tile + 1];
    const auto* in = static_cast<const In*>(p.in);
    auto* out = static_cast<Out*>(p.out);
    const long long row_tiles = (p.rows + tile - 1) / tile, col_tiles = (p.cols + tile - 1) / tile;
    for (long long b = blockIdx.z; b < p.batches; b += gridDim.z)
        for (long long rt = blockIdx.y; rt < row_tiles; rt += gridDim.y)
            for (long long ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {
                // Read: lines along r (the input's unit stride), one per c.
                const long long r = rt * tile + threadIdx.x;
                for (int k = threadIdx.y; k < tile; k += tile_rows) {
                    const long long c = ct * tile + k;
                    if (r < p.rows && c < p.cols)
                        cell[k][threadIdx.x] = in[b * p.in_batch_stride + c * p.in_col_stride + r];
                }
                __syncthreads();
                // Write: lines along c (the output's unit stride), one per r.
                const long long c = ct * tile + threadIdx.x;
                for (int k = threadIdx.y; k < tile; k += tile_rows) {
                    const long long rr = rt * tile + k;
                    if (rr < p.rows && c < p.cols)
                        out[b * p.out_batch_stride + rr * p.out_row_stride + c] =
                            convert<In, Out>(cell[threadIdx.x][k]);
                }
                __syncthreads();
            }
}

}  // namespace gpumath::kernels
