// SPDX-License-Identifier: Apache-2.0
// The tensor kernels behind gpumath::fill, cast and copy: one conversion rule for every pair of
// element types, applied by flat kernels (contiguous operands, 16-byte loads and stores where
// aligned), a strided kernel (any layout, up to eight dimensions) and a tiled transpose (the input's
// unit stride along the output's rows). Instantiated by name expression for the types a call
// needs: fill_flat<T, V>, fill_strided<T>, convert_flat<In, Out, V>,
// convert_strided<In, Out>, transpose<In, Out> and random_flat<T, D>.
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

// Reading: every type to a complex double, exactly (i64 beyond 2^53 rounds to the nearest double).
__device__ inline Value to_value(float x) { return {x, 0.0}; }
__device__ inline Value to_value(double x) { return {x, 0.0}; }
__device__ inline Value to_value(__half x) { return {__half2float(x), 0.0}; }
__device__ inline Value to_value(__nv_bfloat16 x) { return {__bfloat162float(x), 0.0}; }
__device__ inline Value to_value(__nv_fp8_e4m3 x) { return {static_cast<float>(x), 0.0}; }
__device__ inline Value to_value(__nv_fp8_e5m2 x) { return {static_cast<float>(x), 0.0}; }
__device__ inline Value to_value(signed char x) { return {double(x), 0.0}; }
__device__ inline Value to_value(int x) { return {double(x), 0.0}; }
__device__ inline Value to_value(long long x) { return {double(x), 0.0}; }
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
// The upper bound is the largest double below 2^63 (2^63 itself does not fit).
template <>
__device__ inline long long from_value<long long>(Value v) {
    return static_cast<long long>(to_integer(v.re, -9223372036854775808.0, 9223372036854774784.0));
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

/// A 16-byte element (c64) with the 16-byte alignment its type lacks, so that it moves as one
/// access: for operands whose address allows it.
template <class T>
struct alignas(16) Aligned16 {
    T v;
};
__device__ inline bool aligned16(const void* p) { return ((unsigned long long)p & 15ull) == 0; }

__device__ inline long long first_thread() { return (long long)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline long long thread_count() { return (long long)gridDim.x * blockDim.x; }

/// The element offsets of index `i` of the index space in both operands.
struct Offsets {
    long long in, out;
};
__device__ inline Offsets offsets_of(const ElementwiseParams& p, long long i) {
    Offsets o{0, 0};
    if (p.count <= 0xffffffffLL) {
        // 32-bit division, several times cheaper than 64-bit (which the hardware lacks): index
        // spaces below 2^32 elements, the usual case.
        unsigned int j = (unsigned int)i;
        for (int d = p.rank - 1; d >= 0; --d) {
            const unsigned int extent = (unsigned int)p.shape[d];
            const unsigned int q = j / extent;
            const long long c = (long long)(j - q * extent);
            j = q;
            o.in += c * p.in_strides[d];
            o.out += c * p.out_strides[d];
        }
        return o;
    }
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
    if constexpr (sizeof(T) == 16) {
        if (aligned16(p.out)) {
            auto* out = static_cast<Aligned16<T>*>(p.out);
            for (long long i = first_thread(); i < p.count; i += thread_count()) out[i] = Aligned16<T>{value};
            return;
        }
    }
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
    if constexpr (sizeof(Out) == 16) {
        if (aligned16(p.out)) {
            auto* out = static_cast<Aligned16<Out>*>(p.out);
            for (long long i = first_thread(); i < p.count; i += thread_count())
                out[i] = Aligned16<Out>{convert<In, Out>(static_cast<const In*>(p.in)[i])};
            return;
        }
    }
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

/// Converts every element of a strided index space.
template <class In, class Out>
__global__ void convert_strided(const ElementwiseParams p) {
    for (long long i = first_thread(); i < p.count; i += thread_count()) {
        const Offsets o = offsets_of(p, i);
        static_cast<Out*>(p.out)[o.out] = convert<In, Out>(static_cast<const In*>(p.in)[o.in]);
    }
}

constexpr int tile_threads_x = 32, tile_threads_y = 8;

/// The side of a transpose tile (transpose_tile_side* in tensor_ops_params.hpp, which the host's
/// launch reads too) and the padding of a tile's rows: one 4-byte word (one element, or 4 / size
/// elements below 4 bytes), so that the 32 threads reading a column hit 32 banks.
template <class In>
struct TileSide {
    static constexpr int value = sizeof(In) >= 16 ? transpose_tile_side_16 : transpose_tile_side;
    static constexpr int pad = sizeof(In) < 4 ? int(4 / sizeof(In)) : 1;
};

/// Calls f(x, k) for the cells of a `side` x `side` tile this thread of a 32 x 8 block owns: x from
/// threadIdx.x in steps of 32 (consecutive threads, consecutive addresses), k from threadIdx.y in
/// steps of 8.
template <int side, class F>
__device__ inline void each_cell(F f) {
#pragma unroll
    for (int x = threadIdx.x; x < side; x += tile_threads_x)
#pragma unroll
        for (int k = threadIdx.y; k < side; k += tile_threads_y) f(x, k);
}

/// Moves one whole tile (no cell outside the matrices): the tile's corner addressed once in 64 bits,
/// the cells by unrolled steps from it.
template <int side, class In, class Out, class Cell>
__device__ inline void transpose_full_tile(Cell& cell, const In* in_tile, Out* out_tile, long long in_col_stride,
                                           long long out_row_stride) {
    const In* src = in_tile + threadIdx.y * in_col_stride + threadIdx.x;
#pragma unroll
    for (int k = 0; k < side / tile_threads_y; ++k)
#pragma unroll
        for (int x = 0; x < side / tile_threads_x; ++x)
            cell[threadIdx.y + k * tile_threads_y][threadIdx.x + x * tile_threads_x] =
                src[k * tile_threads_y * in_col_stride + x * tile_threads_x];
    __syncthreads();
    Out* dst = out_tile + threadIdx.y * out_row_stride + threadIdx.x;
#pragma unroll
    for (int k = 0; k < side / tile_threads_y; ++k)
#pragma unroll
        for (int x = 0; x < side / tile_threads_x; ++x)
            dst[k * tile_threads_y * out_row_stride + x * tile_threads_x] =
                convert<In, Out>(cell[threadIdx.x + x * tile_threads_x][threadIdx.y + k * tile_threads_y]);
    __syncthreads();
}

/// Transposes (and converts) square tiles through shared memory: a block of 32 x 8 threads reads
/// the tile's lines along the input's unit stride and writes lines along the output's. Grid: x over
/// column tiles, y over row tiles, z over batches (each dimension looping where the grid is
/// smaller). Whole tiles take transpose_full_tile; tiles at the matrices' edges check each cell.
template <class In, class Out>
__global__ void transpose(const TransposeParams p) {
    constexpr int side = TileSide<In>::value;
    __shared__ In cell[side][side + TileSide<In>::pad];
    const auto* in = static_cast<const In*>(p.in);
    auto* out = static_cast<Out*>(p.out);
    const long long row_tiles = (p.rows + side - 1) / side, col_tiles = (p.cols + side - 1) / side;
    for (long long b = blockIdx.z; b < p.batches; b += gridDim.z)
        for (long long rt = blockIdx.y; rt < row_tiles; rt += gridDim.y)
            for (long long ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {
                const In* in_tile = in + b * p.in_batch_stride;
                Out* out_tile = out + b * p.out_batch_stride;
                if ((rt + 1) * side <= p.rows && (ct + 1) * side <= p.cols) {
                    transpose_full_tile<side>(cell, in_tile + ct * side * p.in_col_stride + rt * side,
                                              out_tile + rt * side * p.out_row_stride + ct * side, p.in_col_stride,
                                              p.out_row_stride);
                    continue;
                }
                // Read: lines along r (the input's unit stride), one per c.
                each_cell<side>([&](int x, int k) {
                    const long long r = rt * side + x, c = ct * side + k;
                    if (r < p.rows && c < p.cols) cell[k][x] = in_tile[c * p.in_col_stride + r];
                });
                __syncthreads();
                // Write: lines along c (the output's unit stride), one per r.
                each_cell<side>([&](int x, int k) {
                    const long long c = ct * side + x, rr = rt * side + k;
                    if (rr < p.rows && c < p.cols) out_tile[rr * p.out_row_stride + c] = convert<In, Out>(cell[x][k]);
                });
                __syncthreads();
            }
}

// Random values: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, SC 2011), a counter-based generator:
// block j of the sequence of a seed is the four 32-bit words philox(counter = j, key = seed), so any
// value is computed from its index alone, without state carried between calls. The value of index
// k (what docs/tensors.md promises):
//   - f16, bf16, f32: 32-bit draws, word k % 4 of block k / 4. Uniform: u = ((w >> 8) + 1) 2^-24 in
//     (0, 1]. Normal: words 0, 1 of a block give values 0, 1 and words 2, 3 values 2, 3, each pair
//     by Box-Muller (u1 from the first word, u2 from the second: r cos(2 pi u2), r sin(2 pi u2) with
//     r = sqrt(-2 ln u1)), in f32 (the sine and cosine the hardware's, on the angle taken to
//     (-pi, pi]).
//   - f64: 64-bit draws, block k / 2. Uniform: words 2i, 2i + 1 (i = k % 2, the second word the high
//     half) give u = ((x >> 11) + 1) 2^-53. Normal: words 0, 1 give u1 and 2, 3 give u2, one pair
//     of values by Box-Muller in f64.

/// Random123's Philox4x32 multipliers and key increments.
constexpr unsigned int philox_m0 = 0xD2511F53u, philox_m1 = 0xCD9E8D57u;
constexpr unsigned int philox_w0 = 0x9E3779B9u, philox_w1 = 0xBB67AE85u;

struct Words {
    unsigned int w[4];
};

/// The four words of block `counter` of the sequence of `seed`: ten rounds, the key bumped between
/// rounds.
__device__ inline Words philox(unsigned long long counter, unsigned long long seed) {
    unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32), c2 = 0, c3 = 0;
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += philox_w0;
            k1 += philox_w1;
        }
        const unsigned int hi0 = __umulhi(philox_m0, c0), lo0 = philox_m0 * c0;
        const unsigned int hi1 = __umulhi(philox_m1, c2), lo1 = philox_m1 * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    return {{c0, c1, c2, c3}};
}

__device__ inline float unit_f32(unsigned int w) { return float((w >> 8) + 1u) * 0x1p-24f; }
__device__ inline double unit_f64(unsigned int lo, unsigned int hi) {
    const unsigned long long x = ((unsigned long long)hi << 32) | lo;
    return double((x >> 11) + 1ull) * 0x1p-53;
}

template <class T>
struct is_f64 {
    static constexpr bool value = false;
};
template <>
struct is_f64<double> {
    static constexpr bool value = true;
};

/// The values of one block: four in f32 (for f16, bf16 and f32 outputs) or two in f64.
template <class T, int D>
struct Block {
    static constexpr int size = 4;
    float v[4];
};
template <int D>
struct Block<double, D> {
    static constexpr int size = 2;
    double v[2];
};

template <class T, int D>
__device__ inline Block<T, D> block_values(const Words& r, const RandomParams& p) {
    Block<T, D> out;
    if constexpr (is_f64<T>::value) {
        if constexpr (D == random_uniform) {
            // Rounding may carry low + (high - low) u past high: the top of the range stays high.
            for (int i = 0; i < 2; ++i)
                out.v[i] = fmin(__fma_rn(p.b - p.a, unit_f64(r.w[2 * i], r.w[2 * i + 1]), p.a), p.b);
        } else {
            const double radius = sqrt(-2.0 * log(unit_f64(r.w[0], r.w[1])));
            double s, c;
            sincospi(2.0 * unit_f64(r.w[2], r.w[3]), &s, &c);
            out.v[0] = __fma_rn(p.b, radius * c, p.a);
            out.v[1] = __fma_rn(p.b, radius * s, p.a);
            if constexpr (D == random_lognormal)
                for (int i = 0; i < 2; ++i) out.v[i] = exp(out.v[i]);
        }
    } else {
        if constexpr (D == random_uniform_f32) {
            // The same values as below where the host chose it: a, b and b - a are f32 values and
            // the f64 multiply-add is exact, so one f32 rounding of the exact value is what the f64
            // path's final rounding gives.
            const float low = float(p.a), high = float(p.b), width = float(p.b - p.a);
            for (int i = 0; i < 4; ++i) out.v[i] = fminf(__fmaf_rn(width, unit_f32(r.w[i]), low), high);
        } else if constexpr (D == random_uniform) {
            // In f64 (high - low may pass the f32 range), kept at most high, then rounded to f32.
            for (int i = 0; i < 4; ++i) out.v[i] = float(fmin(__fma_rn(p.b - p.a, double(unit_f32(r.w[i])), p.a), p.b));
        } else {
            const float mean = float(p.a), stddev = float(p.b);
            for (int i = 0; i < 4; i += 2) {
                const float radius = sqrtf(-2.0f * logf(unit_f32(r.w[i])));
                // The angle 2 pi u2 taken to (-pi, pi] (u2 - 1/2 is exact), where the hardware's
                // sine and cosine are accurate to 2^-21.4: cos(2 pi u2) = -cos(2 pi (u2 - 1/2)).
                float s, c;
                __sincosf(6.28318530717958648f * (unit_f32(r.w[i + 1]) - 0.5f), &s, &c);
                out.v[i] = __fmaf_rn(stddev, -radius * c, mean);
                out.v[i + 1] = __fmaf_rn(stddev, -radius * s, mean);
            }
            if constexpr (D == random_lognormal)
                for (int i = 0; i < 4; ++i) out.v[i] = expf(out.v[i]);
        }
    }
    return out;
}

template <class T>
__device__ inline T real_to(float x);
template <>
__device__ inline float real_to<float>(float x) {
    return x;
}
template <>
__device__ inline __half real_to<__half>(float x) {
    return __float2half_rn(x);
}
template <>
__device__ inline __nv_bfloat16 real_to<__nv_bfloat16>(float x) {
    return __float2bfloat16_rn(x);
}
__device__ inline double real_to_f64(double x) { return x; }

/// Writes values `offset` to `offset + count - 1` of the sequence to `count` contiguous elements of
/// T (f16, bf16, f32 or f64) in distribution D: one Philox block per thread and step, stored as one
/// vector where the whole block falls inside the output and its address allows.
template <class T, int D>
__global__ void random_flat(const RandomParams p) {
    constexpr int per = Block<T, D>::size;
    T* out = static_cast<T*>(p.out);
    const unsigned long long first = p.offset / per, end = p.offset + (unsigned long long)p.count;
    const unsigned long long blocks = (end + per - 1) / per - first;
    for (unsigned long long i = first_thread(); i < blocks; i += thread_count()) {
        const unsigned long long j = first + i;
        const Block<T, D> b = block_values<T, D>(philox(j, p.seed), p);
        Pack<T, per> pack;
        for (int l = 0; l < per; ++l) {
            if constexpr (is_f64<T>::value) pack.v[l] = real_to_f64(b.v[l]);
            else pack.v[l] = real_to<T>(b.v[l]);
        }
        const unsigned long long k0 = j * per;  // the index of the block's first value
        if (k0 >= p.offset && k0 + per <= end &&
            (unsigned long long)(out + (k0 - p.offset)) % sizeof(Pack<T, per>) == 0) {
            *reinterpret_cast<Pack<T, per>*>(out + (k0 - p.offset)) = pack;
        } else {
            for (int l = 0; l < per; ++l)
                if (k0 + l >= p.offset && k0 + l < end) out[(long long)(k0 + l - p.offset)] = pack.v[l];
        }
    }
}

}  // namespace gpumath::kernels
