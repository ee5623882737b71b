// SPDX-License-Identifier: Apache-2.0
// The grouped GEMM kernels: every group's product in one launch, each block finding its group and
// tile from the group sizes, with f32 accumulation. One program per variant, whose macros come from
// the program's options (src/matmul/grouped_kernel_source.cpp):
//   GM_IN_TYPE, GM_OUT_TYPE  the element types of A and B, and of D and the bias
//   GM_ACT                   the activation: 0 none, 1 relu, 2 gelu, 3 silu
//   GM_BIAS                  1: D gets a bias per group and column
//   GM_INLINE_SIZES          1: the sizes come in the kernel's last parameter (host sizes by value);
//                            0: through p.sizes (device memory)
//   GM_WGMMA or GM_WMMA      the kernel: Hopper's warpgroup MMA (grouped_gemm_wgmma.cuh) or WMMA
//                            (grouped_gemm_wmma.cuh) for f16 and bf16; neither: the SIMT kernel for
//                            f32 (grouped_gemm_simt.cuh)
// and the tile macros of the kernel chosen, described in its file. A program holds one extern "C"
// kernel: gm_grouped_wgmma with GM_WGMMA, gm_grouped_gemm otherwise.
#include "element_conversions.cuh"
#include "grouped_gemm_params.hpp"

typedef GM_IN_TYPE gm_in;
typedef GM_OUT_TYPE gm_out;
using gm_grouped = gpumath::kernels::GroupedKernelParams;

// Where the group sizes are: GM_SIZES_PARAM is the kernels' last parameter (host sizes by value, in
// the launch's parameters) and GM_SIZES what they read them through.
#if GM_INLINE_SIZES
#define GM_SIZES_PARAM , const __grid_constant__ gpumath::kernels::GroupedInlineSizes gm_inline
#define GM_SIZES gm_inline.v
#else
#define GM_SIZES_PARAM
#define GM_SIZES p.sizes
#endif

static __device__ __forceinline__ float gm_act(float x) {
#if GM_ACT == 1
    return x > 0.0f ? x : 0.0f;
#elif GM_ACT == 2
    // cuBLASLt's GELU: the tanh approximation.
    const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
#elif GM_ACT == 3
    return x / (1.0f + expf(-x));
#else
    return x;
#endif
}

// Where row tile `tile` (tiles of `tile_m` rows, numbered group after group) lies: its group g, the
// group's first row in A and D, the tile's first row within the group and its number of rows.
// False for a tile past the last group's rows (the launch covers the host-side bound); sizes below 0
// count as 0 and rows at or past the bound are never computed.
struct gm_tile {
    long long g, row0, r0, rows;
};
static __device__ __forceinline__ bool gm_find_tile(const gm_grouped& p, const int* sizes, long long tile,
                                                    long long tile_m, gm_tile& out) {
    long long first = 0, row0 = 0;  // the row tiles and rows of the groups before i
    for (long long i = 0; i < p.groups; ++i) {
        long long mi = sizes[i];
        if (mi < 0) mi = 0;
        if (mi > p.max_rows - row0) mi = p.max_rows - row0;
        const long long tiles = (mi + tile_m - 1) / tile_m;
        if (tile < first + tiles) {
            out.g = i;
            out.row0 = row0;
            out.r0 = (tile - first) * tile_m;
            out.rows = mi - out.r0 < tile_m ? mi - out.r0 : tile_m;
            return true;
        }
        first += tiles;
        row0 += mi;
    }
    return false;
}

#if defined(GM_WGMMA)
#include "grouped_gemm_wgmma.cuh"
#elif defined(GM_WMMA)
#include "grouped_gemm_wmma.cuh"
#else
#include "grouped_gemm_simt.cuh"
#endif
