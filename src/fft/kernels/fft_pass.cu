// SPDX-License-Identifier: Apache-2.0
// The elementwise pass around cuFFT: every element of an index space (fft_pass_params.hpp) read at
// the source's strides, multiplied by a scale and written at the destination's, through the user's
// load or store callback where one runs as a separate pass. One program per variant, whose macros
// come from its options (src/fft/sources.cpp):
//   GM_FFT_VALUE           the element type (float, double, float2, double2, __half, __half2,
//                          __nv_bfloat16, __nv_bfloat162: pairs for f16/bf16 complex data)
//   GM_FFT_SCALAR          the scale's type: double for f64/c64, float otherwise
//   GM_FFT_FP16/_BF16      the element is a half-precision type (its header is included)
//   GM_FFT_LOAD_CALLBACK   the user's load function (gather passes), or
//   GM_FFT_STORE_CALLBACK  the user's store function (scatter passes); either comes, with its
//                          source or declaration, in the in-memory header gpumath_fft_callback.cuh
#include "fft_pass_params.hpp"

#ifdef GM_FFT_FP16
#include <cuda_fp16.h>
#endif
#ifdef GM_FFT_BF16
#include <cuda_bf16.h>
#endif
#if defined(GM_FFT_LOAD_CALLBACK) || defined(GM_FFT_STORE_CALLBACK)
#include <cufftXt.h>

#include "gpumath_fft_callback.cuh"
#endif

typedef GM_FFT_VALUE gm_t;
typedef GM_FFT_SCALAR gm_s;
typedef gpumath::kernels::FftPassParams gm_fft_pass;

// v times s for each element type; half-precision values are scaled in float.
static __device__ __forceinline__ float gm_scale(float v, float s) { return v * s; }
static __device__ __forceinline__ double gm_scale(double v, double s) { return v * s; }
static __device__ __forceinline__ float2 gm_scale(float2 v, float s) { return make_float2(v.x * s, v.y * s); }
static __device__ __forceinline__ double2 gm_scale(double2 v, double s) { return make_double2(v.x * s, v.y * s); }
#ifdef GM_FFT_FP16
static __device__ __forceinline__ __half gm_scale(__half v, float s) { return __float2half_rn(__half2float(v) * s); }
static __device__ __forceinline__ __half2 gm_scale(__half2 v, float s) {
    return __floats2half2_rn(__low2float(v) * s, __high2float(v) * s);
}
#endif
#ifdef GM_FFT_BF16
static __device__ __forceinline__ __nv_bfloat16 gm_scale(__nv_bfloat16 v, float s) {
    return __float2bfloat16_rn(__bfloat162float(v) * s);
}
static __device__ __forceinline__ __nv_bfloat162 gm_scale(__nv_bfloat162 v, float s) {
    return __floats2bfloat162_rn(__low2float(v) * s, __high2float(v) * s);
}
#endif

static __device__ __forceinline__ gm_t gm_load(const void* base, long long o, void* info) {
#ifdef GM_FFT_LOAD_CALLBACK
    return GM_FFT_LOAD_CALLBACK(const_cast<void*>(base), static_cast<unsigned long long>(o), info, nullptr);
#else
    return static_cast<const gm_t*>(base)[o];
#endif
}

static __device__ __forceinline__ void gm_store(void* base, long long o, gm_t v, void* info) {
#ifdef GM_FFT_STORE_CALLBACK
    GM_FFT_STORE_CALLBACK(base, static_cast<unsigned long long>(o), v, info, nullptr);
#else
    static_cast<gm_t*>(base)[o] = v;
#endif
}

extern "C" __global__ void __launch_bounds__(256)
    gpumath_fft_pass(const void* src, void* dst, gm_fft_pass g, gm_s scale, void* info) {
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    if (g.rank == 1) {
        const long long ss = g.src_stride[0], ds = g.dst_stride[0];
        for (; i < g.total; i += step) gm_store(dst, i * ds, gm_scale(gm_load(src, i * ss, info), scale), info);
        return;
    }
    for (; i < g.total; i += step) {
        long long rem = i, so = 0, dof = 0;
#pragma unroll
        for (int d = gpumath::kernels::fft_pass_max_rank - 1; d >= 0; --d) {
            if (d < g.rank) {
                const long long e = g.extent[d];
                const long long q = rem / e;
                const long long k = rem - q * e;
                rem = q;
                so += k * g.src_stride[d];
                dof += k * g.dst_stride[d];
            }
        }
        gm_store(dst, dof, gm_scale(gm_load(src, so, info), scale), info);
    }
}
