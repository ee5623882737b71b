// SPDX-License-Identifier: Apache-2.0
// The elementwise pass over D after cuBLASLt's product: a bias along D's strided dimension, SiLU,
// and the user's epilog function, for what cuBLASLt's epilogues cannot do. One program per
// configuration, whose macros come from the program's options (src/matmul/epilog_pass.cpp):
//   GM_D_TYPE, GM_BIAS_TYPE   element types of D and of the bias
//   GM_ACT                    0 none, 1 ReLU, 2 GELU (tanh), 3 SiLU, after the bias
//   GM_BIAS, GM_BIAS_INNER    a bias, and whether it runs along D's unit-stride dimension
//   GM_FUNCTION, GM_SYMBOL    the user's function (in the in-memory header epilog_function.cuh)
//   GM_SWAP                   1 when D's unit-stride dimension is the user's column index
// Each thread reads and writes 16 bytes of D where D's layout and pointer allow (gm_epilog_pass_v),
// else one element (gm_epilog_pass_s).
#include "element_conversions.cuh"
#include "epilog_pass_params.hpp"
#if GM_FUNCTION
#include "epilog_function.cuh"
#endif

typedef long long gm_i64;
typedef GM_D_TYPE gm_d;
typedef GM_BIAS_TYPE gm_bias;
using gm_pass_params = gpumath::kernels::EpilogPassParams;

// Element (i, o) of product b of D as cuBLASLt wrote it: i along the unit-stride dimension.
__device__ __forceinline__ float gm_apply(float x, gm_i64 b, gm_i64 i, gm_i64 o, const gm_pass_params& p) {
#if GM_BIAS
    const gm_bias* bias = static_cast<const gm_bias*>(p.bias);
    x += gm_load(bias[b * p.bias_batch_stride + (GM_BIAS_INNER ? i : o) * p.bias_stride]);
#endif
#if GM_ACT == 1
    x = fmaxf(x, 0.0f);
#elif GM_ACT == 2
    x = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
#elif GM_ACT == 3
    x = x / (1.0f + __expf(-x));
#endif
#if GM_FUNCTION
    x = GM_SYMBOL(x, b, GM_SWAP ? o : i, GM_SWAP ? i : o, p.user_info);
#endif
    return x;
}

template <int V>
__device__ __forceinline__ void gm_pass(const gm_pass_params& p) {
#if __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent of the product: wait until D is written.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const gm_i64 v = gm_i64(blockIdx.x) * blockDim.x + threadIdx.x;
    if (v * V >= p.inner) return;
    const gm_i64 columns = p.batch * p.outer;
    for (gm_i64 y = blockIdx.y; y < columns; y += gridDim.y) {
        const gm_i64 b = y / p.outer, o = y - b * p.outer;
        gm_d* at = static_cast<gm_d*>(p.d) + b * p.batch_stride + o * p.ld + v * V;
        if (V == 1) {
            gm_store(*at, gm_apply(gm_load(*at), b, v, o, p));
        } else {
            uint4 raw = *reinterpret_cast<const uint4*>(at);
            gm_d* e = reinterpret_cast<gm_d*>(&raw);
#pragma unroll
            for (int j = 0; j < V; ++j) gm_store(e[j], gm_apply(gm_load(e[j]), b, v * V + j, o, p));
            *reinterpret_cast<uint4*>(at) = raw;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) gm_epilog_pass_v(gm_pass_params p) {
    gm_pass<int(16 / sizeof(gm_d))>(p);
}
extern "C" __global__ void __launch_bounds__(256) gm_epilog_pass_s(gm_pass_params p) { gm_pass<1>(p); }
