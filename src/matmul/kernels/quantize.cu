// SPDX-License-Identifier: Apache-2.0
// The kernels of FP8 quantization (quantize_fp8, dequantize_fp8): one program per (element type,
// FP8 type), whose macros come from the program's options (src/matmul/quantize_source.cpp):
// GM_IN_KIND (0 f16, 1 bf16, 2 f32), GM_IN_BYTES, GM_IN_TYPE, GM_FP8_KIND, GM_FP8_MAX and the launch
// shape GM_GROUP, GM_THREADS, GM_UNROLL. It holds every scale mode's quantize kernel (vector and
// scalar loads), the tensor mode's max and finalize kernels, and the dequantize kernel, each
// extern "C" under the name quantize_source.hpp lists.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "quantize_params.hpp"

typedef GM_IN_TYPE gm_in;
using gm_quantize = gpumath::kernels::QuantizeParams;

// GM_GROUP threads cover a 128-element block of a row (GM_EPT elements each); GM_THREADS and
// GM_UNROLL come from the host's constants (quantize_source.hpp).
#define GM_LOAD __ldg
#define GM_EPT (128 / GM_GROUP)
#define GM_EPV (16 / GM_IN_BYTES)
#define GM_VPT (GM_EPT / GM_EPV)
#define GM_TILE_ROWS (128 * GM_GROUP / GM_THREADS)
#define GM_FULL 0xffffffffu

// A thread's GM_EPT elements of a 128-element block, as loaded: GM_VPT vectors of 16 bytes, vector
// j holding columns GM_EPV * (GM_GROUP * j + lane) onwards, so that every load of a group reads
// 16 * GM_GROUP contiguous bytes.
struct gm_raw {
    uint4 v[GM_VPT];
};

// Column, within its 128-element block, of element e (0 .. GM_EPT - 1) of a thread.
static __device__ __forceinline__ int gm_col(int lane, int e) {
    return (e / GM_EPV) * (GM_GROUP * GM_EPV) + lane * GM_EPV + e % GM_EPV;
}

// n / d for non-negative values: in 32 bits when both fit (64-bit division is a long subroutine).
static __device__ __forceinline__ long long gm_div(long long n, long long d) {
    if (((static_cast<unsigned long long>(n) | static_cast<unsigned long long>(d)) >> 32) == 0)
        return static_cast<long long>(static_cast<unsigned>(n) / static_cast<unsigned>(d));
    return n / d;
}

// A 128-element block of a row: batch, row in the batch, block in the row.
struct gm_pos {
    long long b;
    long long r;
    long long kb;
};

static __device__ __forceinline__ gm_pos gm_pos_of(const gm_quantize& p, long long item) {
    gm_pos q;
    const long long row = gm_div(item, p.blocks);
    q.kb = item - row * p.blocks;
    q.b = gm_div(row, p.rows);
    q.r = row - q.b * p.rows;
    return q;
}

static __device__ __forceinline__ void gm_next(const gm_quantize& p, gm_pos& q) {
    if (++q.kb == p.blocks) {
        q.kb = 0;
        if (++q.r == p.rows) {
            q.r = 0;
            ++q.b;
        }
    }
}

static __device__ __forceinline__ void gm_zero(gm_raw& v) {
#pragma unroll
    for (int j = 0; j < GM_VPT; ++j) v.v[j] = make_uint4(0u, 0u, 0u, 0u);
}

// Loads a thread's elements of block q (zeros past the row's end).
template <bool VEC>
static __device__ __forceinline__ void gm_load(gm_raw& v, const gm_quantize& p, const gm_pos& q, int lane) {
    const unsigned char* row =
        static_cast<const unsigned char*>(p.x) + (q.b * p.batch_stride + q.r * p.row_stride) * GM_IN_BYTES;
    const long long c0 = q.kb * 128;
    if constexpr (VEC) {
        // C is a multiple of GM_EPV here, so a vector lies wholly inside the row or wholly past it.
#pragma unroll
        for (int j = 0; j < GM_VPT; ++j) {
            const long long c = c0 + gm_col(lane, j * GM_EPV);
            v.v[j] = c < p.cols ? GM_LOAD(reinterpret_cast<const uint4*>(row + c * GM_IN_BYTES))
                                : make_uint4(0u, 0u, 0u, 0u);
        }
    } else {
        unsigned w[GM_VPT * 4];
#pragma unroll
        for (int i = 0; i < GM_VPT * 4; ++i) w[i] = 0u;
#pragma unroll
        for (int e = 0; e < GM_EPT; ++e) {
            const long long c = c0 + gm_col(lane, e);
            if (c < p.cols) {
#if GM_IN_BYTES == 4
                w[e] = GM_LOAD(reinterpret_cast<const unsigned*>(row) + c);
#else
                w[e / 2] |= static_cast<unsigned>(GM_LOAD(reinterpret_cast<const unsigned short*>(row) + c))
                            << (16 * (e % 2));
#endif
            }
        }
#pragma unroll
        for (int j = 0; j < GM_VPT; ++j) v.v[j] = make_uint4(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3]);
    }
}

// Element e of a thread's elements, as float (exact for every input type).
static __device__ __forceinline__ float gm_float(const gm_raw& v, int e) {
    const uint4 u = v.v[e / GM_EPV];
    const int k = (e % GM_EPV) * GM_IN_BYTES / 4;
    const unsigned w = k == 0 ? u.x : k == 1 ? u.y : k == 2 ? u.z : u.w;
#if GM_IN_KIND == 2
    return __uint_as_float(w);
#elif GM_IN_KIND == 1
    return __uint_as_float(e % 2 ? (w & 0xffff0000u) : (w << 16));
#else
    return __half2float(__ushort_as_half(static_cast<unsigned short>(e % 2 ? (w >> 16) : (w & 0xffffu))));
#endif
}

// max(m, |element|) over a thread's elements; NaN does not count (fmaxf and __hmax2 return the
// other operand). Pairs of 2-byte elements are compared as pairs, which is exact: the max of
// values is one of them.
static __device__ __forceinline__ float gm_absmax(const gm_raw& v, float m) {
#if GM_IN_BYTES == 2
#if GM_IN_KIND == 1
    typedef __nv_bfloat162 gm_pair;
#else
    typedef __half2 gm_pair;
#endif
    unsigned bits = 0u;
    gm_pair acc;
    memcpy(&acc, &bits, 4);
#pragma unroll
    for (int j = 0; j < GM_VPT; ++j) {
        const unsigned w[4] = {v.v[j].x, v.v[j].y, v.v[j].z, v.v[j].w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            gm_pair x;
            memcpy(&x, &w[k], 4);
            acc = __hmax2(acc, __habs2(x));
        }
    }
    return fmaxf(m, fmaxf(__low2float(acc), __high2float(acc)));
#else
#pragma unroll
    for (int e = 0; e < GM_EPT; ++e) m = fmaxf(m, fabsf(gm_float(v, e)));
    return m;
#endif
}

// The scale of a block whose max |x| is amax: amax / the FP8 type's largest finite value, 1 when
// that is 0 (an all-zero block, or an amax so small that the quotient underflows).
static __device__ __forceinline__ float gm_scale(float amax) {
    const float s = __fdiv_rn(amax, GM_FP8_MAX);
    return s > 0.0f ? s : 1.0f;
}

// x / s rounded to nearest, for many x and one s. With r = RN(1/s), y = RN(x r) is within an ulp
// of x / s, and RN(y + r (x - y s)) with the remainder exact (one fma) is RN(x / s) (Markstein's
// theorem) while nothing underflows: for s >= 2^-86 every x whose quotient reaches an FP8 type's
// smallest subnormal keeps its remainder exact; smaller quotients can be off by an ulp but round to
// zero in FP8 either way. copysign keeps the sign of a zero quotient. Other s divide (the same
// result, slower).
struct gm_divider {
    float s;
    float r;
    bool fast;
};

static __device__ __forceinline__ gm_divider gm_make_divider(float s) {
    gm_divider d;
    d.s = s;
    d.r = __frcp_rn(s);
    d.fast = s >= 0x1p-86f && s <= 3.0e38f;
    return d;
}

static __device__ __forceinline__ unsigned gm_fp8x4(float a, float b, float c, float d) {
    const unsigned lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, GM_FP8_KIND);
    const unsigned hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, GM_FP8_KIND);
    return lo | (hi << 16);
}

// Quantizes a thread's elements of block q with divider d and stores them into the dense
// row-major data.
template <bool VEC>
static __device__ __forceinline__ void gm_store(const gm_raw& v, const gm_quantize& p, const gm_pos& q, int lane,
                                                const gm_divider& d) {
    float f[GM_EPT];
    if (d.fast) {
#pragma unroll
        for (int e = 0; e < GM_EPT; ++e) {
            const float x = gm_float(v, e);
            const float y = __fmul_rn(x, d.r);
            f[e] = copysignf(__fmaf_rn(__fmaf_rn(-y, d.s, x), d.r, y), x);
        }
    } else {
#pragma unroll
        for (int e = 0; e < GM_EPT; ++e) f[e] = __fdiv_rn(gm_float(v, e), d.s);
    }
    const long long c0 = q.kb * 128;
    unsigned char* out = static_cast<unsigned char*>(p.data) + ((q.b * p.rows + q.r) * p.cols + c0);
    if constexpr (VEC) {
#pragma unroll
        for (int j = 0; j < GM_VPT; ++j) {
            const int c = gm_col(lane, j * GM_EPV);
            if (c0 + c >= p.cols) continue;
#if GM_EPV == 8
            *reinterpret_cast<uint2*>(out + c) =
                make_uint2(gm_fp8x4(f[8 * j], f[8 * j + 1], f[8 * j + 2], f[8 * j + 3]),
                           gm_fp8x4(f[8 * j + 4], f[8 * j + 5], f[8 * j + 6], f[8 * j + 7]));
#else
            *reinterpret_cast<unsigned*>(out + c) = gm_fp8x4(f[4 * j], f[4 * j + 1], f[4 * j + 2], f[4 * j + 3]);
#endif
        }
    } else {
#pragma unroll
        for (int e = 0; e < GM_EPT; ++e) {
            const int c = gm_col(lane, e);
            if (c0 + c < p.cols)
                out[c] = static_cast<unsigned char>(__nv_cvt_float_to_fp8(f[e], __NV_SATFINITE, GM_FP8_KIND));
        }
    }
}

// The max of m over the block, in every thread. blockDim.x is a multiple of 32.
static __device__ __forceinline__ float gm_block_max(float m) {
    __shared__ float partial[32];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(GM_FULL, m, o));
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
    __syncthreads();
    m = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) m = fmaxf(m, partial[w]);
    return m;
}

// max(*target, m) for m >= 0: non-negative floats order as their bits do as ints. Most blocks'
// maxima are below the running max, so reading it first saves most of the atomics.
static __device__ __forceinline__ void gm_atomic_max(float* target, float m) {
    if (m > *reinterpret_cast<volatile float*>(target)) atomicMax(reinterpret_cast<int*>(target), __float_as_int(m));
}

// The per-block kernels. Each GM_GROUP-thread group takes GM_UNROLL consecutive 128-element blocks
// (items) and loads them all before it reduces, so that enough loads are in flight. MODE 0: max |x|
// into scales[0] (tensor mode's first pass); 1: quantize with the scale of the amax the first pass
// left in scales[0]; 2: one scale per block (block_1x128, scales (..., R, L) with R fastest).
template <int MODE, bool VEC>
static __device__ __forceinline__ void gm_blocks(const gm_quantize& p) {
    const int lane = threadIdx.x % GM_GROUP;
    const long long first =
        (static_cast<long long>(blockIdx.x) * (GM_THREADS / GM_GROUP) + threadIdx.x / GM_GROUP) * GM_UNROLL;
    gm_pos start;
    start.b = start.r = start.kb = 0;
    if (first < p.items) start = gm_pos_of(p, first);
    gm_raw v[GM_UNROLL];
    gm_pos q = start;
#pragma unroll
    for (int u = 0; u < GM_UNROLL; ++u) {
        if (first + u < p.items) gm_load<VEC>(v[u], p, q, lane);
        else gm_zero(v[u]);
        gm_next(p, q);
    }
    float run = 0.0f;
    gm_divider d = gm_make_divider(1.0f);
    if (MODE == 1) d = gm_make_divider(gm_scale(p.scales[0]));
    q = start;
#pragma unroll
    for (int u = 0; u < GM_UNROLL; ++u) {
        const bool ok = first + u < p.items;
        if (MODE == 0) {
            run = gm_absmax(v[u], run);
            continue;
        }
        if (MODE == 2) {
            float m = gm_absmax(v[u], 0.0f);
#pragma unroll
            for (int o = GM_GROUP / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(GM_FULL, m, o));
            run = fmaxf(run, m);
            d = gm_make_divider(gm_scale(m));
            if (ok && lane == 0) p.scales[q.b * p.rows * p.blocks + q.kb * p.rows + q.r] = d.s;
        }
        if (ok) gm_store<VEC>(v[u], p, q, lane, d);
        gm_next(p, q);
    }
    // Tensor mode's quantize pass (MODE 1) leaves amax to its finalize kernel.
    if (MODE == 0 || (MODE == 2 && p.amax != nullptr)) {
        run = gm_block_max(run);
        if (threadIdx.x == 0) gm_atomic_max(MODE == 0 ? p.scales : p.amax, run);
    }
}

// outer_vector: one block per row (grid = B * R), scales (..., R). GM_UNROLL blocks of 128 per
// GM_GROUP-thread group are loaded per sweep; a row that fits in one sweep (C <= 128 * GM_UNROLL *
// blockDim.x / GM_GROUP) stays in registers between its max and its quantization. A longer row is read a
// second time, and that read comes from L2, which holds the rows of every resident block.
template <bool VEC>
static __device__ __forceinline__ void gm_rows(const gm_quantize& p) {
    const int lane = threadIdx.x % GM_GROUP;
    const int group = threadIdx.x / GM_GROUP;
    const int groups = blockDim.x / GM_GROUP;
    const long long span = static_cast<long long>(groups) * GM_UNROLL;
    const long long row = blockIdx.x;
    gm_pos q;
    q.b = gm_div(row, p.rows);
    q.r = row - q.b * p.rows;
    gm_raw v[GM_UNROLL];
    float m = 0.0f;
    for (long long k0 = 0; k0 < p.blocks; k0 += span) {
#pragma unroll
        for (int u = 0; u < GM_UNROLL; ++u) {
            q.kb = k0 + u * groups + group;
            if (q.kb < p.blocks) gm_load<VEC>(v[u], p, q, lane);
            else gm_zero(v[u]);
        }
#pragma unroll
        for (int u = 0; u < GM_UNROLL; ++u) m = gm_absmax(v[u], m);
    }
    const float amax = gm_block_max(m);
    const gm_divider d = gm_make_divider(gm_scale(amax));
    if (threadIdx.x == 0) {
        p.scales[row] = d.s;
        if (p.amax != nullptr) gm_atomic_max(p.amax, amax);
    }
    if (p.blocks <= span) {
#pragma unroll
        for (int u = 0; u < GM_UNROLL; ++u) {
            q.kb = u * groups + group;
            if (q.kb < p.blocks) gm_store<VEC>(v[u], p, q, lane, d);
        }
        return;
    }
    for (long long k0 = 0; k0 < p.blocks; k0 += span) {
#pragma unroll
        for (int u = 0; u < GM_UNROLL; ++u) {
            q.kb = k0 + u * groups + group;
            if (q.kb < p.blocks) gm_load<VEC>(v[u], p, q, lane);
        }
#pragma unroll
        for (int u = 0; u < GM_UNROLL; ++u) {
            q.kb = k0 + u * groups + group;
            if (q.kb < p.blocks) gm_store<VEC>(v[u], p, q, lane, d);
        }
    }
}

// block_128x128: one block of GM_THREADS threads per 128 x 128 tile (grid = B * ceil(R / 128) * L),
// the tile held in registers (GM_TILE_ROWS rows of GM_EPT elements per thread) between its max and
// its quantization.
// Scales (..., ceil(R / 128), L) in rows of L4; the tile of the last column also writes the row's
// padding (columns L .. L4 - 1) as 0.
template <bool VEC>
static __device__ __forceinline__ void gm_tiles(const gm_quantize& p) {
    const int lane = threadIdx.x % GM_GROUP;
    const int first_row = threadIdx.x / GM_GROUP;
    const long long tile_row = gm_div(blockIdx.x, p.blocks);
    gm_pos q;
    q.kb = blockIdx.x - tile_row * p.blocks;
    q.b = gm_div(tile_row, p.row_blocks);
    const long long r0 = (tile_row - q.b * p.row_blocks) * 128 + first_row;
    gm_raw v[GM_TILE_ROWS];
#pragma unroll
    for (int i = 0; i < GM_TILE_ROWS; ++i) {
        q.r = r0 + (GM_THREADS / GM_GROUP) * i;
        if (q.r < p.rows) gm_load<VEC>(v[i], p, q, lane);
        else gm_zero(v[i]);
    }
    float m = 0.0f;
#pragma unroll
    for (int i = 0; i < GM_TILE_ROWS; ++i) m = gm_absmax(v[i], m);
    const float amax = gm_block_max(m);
    const gm_divider d = gm_make_divider(gm_scale(amax));
    if (threadIdx.x == 0) {
        float* scales = p.scales + tile_row * p.blocks4;
        scales[q.kb] = d.s;
        if (q.kb == p.blocks - 1)
            for (long long k = p.blocks; k < p.blocks4; ++k) scales[k] = 0.0f;
        if (p.amax != nullptr) gm_atomic_max(p.amax, amax);
    }
#pragma unroll
    for (int i = 0; i < GM_TILE_ROWS; ++i) {
        q.r = r0 + (GM_THREADS / GM_GROUP) * i;
        if (q.r < p.rows) gm_store<VEC>(v[i], p, q, lane, d);
    }
}

extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_amax_v(gm_quantize p) { gm_blocks<0, true>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_amax_s(gm_quantize p) { gm_blocks<0, false>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_tensor_v(gm_quantize p) { gm_blocks<1, true>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_tensor_s(gm_quantize p) { gm_blocks<1, false>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_blocks_v(gm_quantize p) { gm_blocks<2, true>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_blocks_s(gm_quantize p) { gm_blocks<2, false>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_rows_v(gm_quantize p) { gm_rows<true>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_rows_s(gm_quantize p) { gm_rows<false>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_tiles_v(gm_quantize p) { gm_tiles<true>(p); }
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_quantize_tiles_s(gm_quantize p) { gm_tiles<false>(p); }

// Tensor mode, after both passes: scales[0] holds max |x|; it becomes the scale.
extern "C" __global__ void gm_finalize_tensor(gm_quantize p) {
    const float amax = p.scales[0];
    if (p.amax != nullptr) *p.amax = amax;
    p.scales[0] = gm_scale(amax);
}

// data (x here: FP8, strided rows) times its scale, into a dense row-major result (data here);
// items is the element count. mode: 0 tensor, 1 outer_vector, 2 block_1x128, 3 block_128x128.
extern "C" __global__ void __launch_bounds__(GM_THREADS) gm_dequantize(gm_quantize p, int mode) {
    const unsigned char* src = static_cast<const unsigned char*>(p.x);
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.items; i += step) {
        const long long row = gm_div(i, p.cols);
        const long long c = i - row * p.cols;
        const long long b = gm_div(row, p.rows);
        const long long r = row - b * p.rows;
        float s;
        if (mode == 0) s = p.scales[0];
        else if (mode == 1) s = p.scales[row];
        else if (mode == 2) s = p.scales[b * p.rows * p.blocks + (c / 128) * p.rows + r];
        else s = p.scales[(b * p.row_blocks + r / 128) * p.blocks4 + c / 128];
        const __half_raw h = __nv_cvt_fp8_to_halfraw(src[b * p.batch_stride + r * p.row_stride + c], GM_FP8_KIND);
        const float v = __half2float(__half(h)) * s;
#if GM_IN_KIND == 2
        static_cast<float*>(p.data)[i] = v;
#elif GM_IN_KIND == 1
        static_cast<__nv_bfloat16*>(p.data)[i] = __float2bfloat16_rn(v);
#else
        static_cast<__half*>(p.data)[i] = __float2half_rn(v);
#endif
    }
}
