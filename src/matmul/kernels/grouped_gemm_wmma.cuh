// SPDX-License-Identifier: Apache-2.0
// The tensor-core grouped kernel for f16 and bf16 inputs (included by grouped_gemm.cu after its
// common part), with GM_TC_M, GM_TC_N and GM_TC_K: blocks of 256 threads (8 warps, 2 x 4) computing
// GM_TC_M x GM_TC_N tiles of D with WMMA (16 x 16 x 16, f32 accumulation), K in steps of GM_TC_K
// through two shared-memory stages (the next step's tiles copied with cp.async while this one
// computes). Tiles of A and B copy 16 bytes per thread where the operand is contiguous along the
// tile's inner dimension (and aligned), element by element otherwise (any strides); the epilog runs
// per 16 x 16 fragment, staged through shared memory.
#pragma once

#include <mma.h>

#define GM_LDA (GM_TC_K + 8)
#define GM_LDB (GM_TC_N + 8)
#define GM_LDS 20

typedef nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> gm_tc_acc;

// 16 bytes global -> shared (`smem` a shared-space address) without passing through registers;
// zeros when `in` is false (nothing is read then).
static __device__ __forceinline__ void gm_cp16(unsigned smem, const void* gmem, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(in ? 16 : 0));
}

static __device__ __forceinline__ bool gm_aligned16(const void* q) {
    return (reinterpret_cast<unsigned long long>(q) & 15ull) == 0;
}

static __device__ __forceinline__ unsigned gm_smem(const void* q) {
    return static_cast<unsigned>(__cvta_generic_to_shared(q));
}

// A block's operands as its loads read them: A from the tile's first row, the group's weights from
// the tile's first column, the tile's rows and first column, and whether each operand copies 16
// bytes at a time.
struct gm_tc_operands {
    const gm_in* a;
    const gm_in* b;
    long long rows, c0;
    bool a_vec, b_vec;
};

// Stage st's GM_TC_M x GM_TC_K tile of A from K = k0 (zeros past the rows and K).
static __device__ __forceinline__ void gm_tc_load_a(gm_in (&as)[2][GM_TC_M][GM_LDA], int st, const gm_grouped& p,
                                                    const gm_tc_operands& o, long long k0, int t) {
    const gm_in* a = o.a;
    if (o.a_vec) {
        for (int e = t * 8; e < GM_TC_M * GM_TC_K; e += 256 * 8) {
            const int r = e / GM_TC_K, kk = e % GM_TC_K;
            const bool in = r < o.rows && k0 + kk < p.k;
            gm_cp16(gm_smem(&as[st][r][kk]), in ? a + r * p.a_row + (k0 + kk) : a, in);
        }
    } else if (p.a_row == 1) {  // column-major A: consecutive threads along M
        for (int e = t; e < GM_TC_M * GM_TC_K; e += 256) {
            const int r = e % GM_TC_M, kk = e / GM_TC_M;
            as[st][r][kk] = (r < o.rows && k0 + kk < p.k) ? a[r + (k0 + kk) * p.a_col] : gm_in(0.0f);
        }
    } else {
        for (int e = t; e < GM_TC_M * GM_TC_K; e += 256) {
            const int r = e / GM_TC_K, kk = e % GM_TC_K;
            as[st][r][kk] = (r < o.rows && k0 + kk < p.k) ? a[r * p.a_row + (k0 + kk) * p.a_col] : gm_in(0.0f);
        }
    }
}

// Stage st's GM_TC_K x GM_TC_N tile of the weights from K = k0 (zeros past K and N).
static __device__ __forceinline__ void gm_tc_load_b(gm_in (&bs)[2][GM_TC_K][GM_LDB], int st, const gm_grouped& p,
                                                    const gm_tc_operands& o, long long k0, int t) {
    const gm_in* b = o.b;
    const long long c0 = o.c0;
    if (o.b_vec) {
        for (int e = t * 8; e < GM_TC_K * GM_TC_N; e += 256 * 8) {
            const int kk = e / GM_TC_N, c = e % GM_TC_N;
            const bool in = k0 + kk < p.k && c0 + c < p.n;  // N % 8 == 0: all 8 or none
            gm_cp16(gm_smem(&bs[st][kk][c]), in ? b + (k0 + kk) * p.b_row + c : b, in);
        }
    } else if (p.b_row == 1) {  // column-major B: consecutive threads along K
        for (int e = t; e < GM_TC_K * GM_TC_N; e += 256) {
            const int kk = e % GM_TC_K, c = e / GM_TC_K;
            bs[st][kk][c] = (k0 + kk < p.k && c0 + c < p.n) ? b[(k0 + kk) + c * p.b_col] : gm_in(0.0f);
        }
    } else {
        for (int e = t; e < GM_TC_K * GM_TC_N; e += 256) {
            const int kk = e / GM_TC_N, c = e % GM_TC_N;
            bs[st][kk][c] = (k0 + kk < p.k && c0 + c < p.n) ? b[(k0 + kk) * p.b_row + c * p.b_col] : gm_in(0.0f);
        }
    }
}

// Both tiles of stage st, as one group of asynchronous copies.
static __device__ __forceinline__ void gm_tc_load(gm_in (&as)[2][GM_TC_M][GM_LDA], gm_in (&bs)[2][GM_TC_K][GM_LDB],
                                                  int st, const gm_grouped& p, const gm_tc_operands& o, long long k0,
                                                  int t) {
    gm_tc_load_a(as, st, p, o, k0, t);
    gm_tc_load_b(bs, st, p, o, k0, t);
    asm volatile("cp.async.commit_group;\n" ::);
}

// The MMAs of stage st: warp (wr, wc) accumulates its 64 x 32 part of the tile.
static __device__ __forceinline__ void gm_tc_mma(gm_tc_acc (&acc)[4][2], const gm_in (&as)[2][GM_TC_M][GM_LDA],
                                                 const gm_in (&bs)[2][GM_TC_K][GM_LDB], int st, int wr, int wc) {
    using namespace nvcuda;
#pragma unroll
    for (int ks = 0; ks < GM_TC_K; ks += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, gm_in, wmma::row_major> af[4];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, gm_in, wmma::row_major> bf[2];
#pragma unroll
        for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(af[i], &as[st][wr * 64 + i * 16][ks], GM_LDA);
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(bf[j], &bs[st][ks][wc * 32 + j * 16], GM_LDB);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
    }
}

// The epilog of warp `warp` (wr, wc): each accumulator fragment through the warp's stage into D
// (from the tile's first row), scaled, with the group's bias and the activation.
static __device__ __forceinline__ void gm_tc_store(const gm_grouped& p, gm_tc_acc (&acc)[4][2],
                                                   float (&stage)[8][16][GM_LDS], gm_out* d, long long g,
                                                   long long rows, long long c0, int warp, int lane) {
    const int wr = warp / 4, wc = warp % 4;
    using namespace nvcuda;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) {
            wmma::store_matrix_sync(&stage[warp][0][0], acc[i][j], GM_LDS, wmma::mem_row_major);
            __syncwarp();
            for (int e = lane; e < 256; e += 32) {
                const long long r = wr * 64 + i * 16 + e / 16;
                const long long c = c0 + wc * 32 + j * 16 + e % 16;
                if (r >= rows || c >= p.n) continue;
                float v = p.alpha * stage[warp][e / 16][e % 16];
#if GM_BIAS
                v += gm_load(static_cast<const gm_out*>(p.bias)[g * p.bias_group + c * p.bias_col]);
#endif
                gm_store(d[r * p.d_row + c * p.d_col], gm_act(v));
            }
            __syncwarp();
        }
}

extern "C" __global__ void __launch_bounds__(256) gm_grouped_gemm(const gm_grouped p GM_SIZES_PARAM) {
    // Two stages: the next K step loads (cp.async) while this one computes.
    __shared__ __align__(16) gm_in as[2][GM_TC_M][GM_LDA];
    __shared__ __align__(16) gm_in bs[2][GM_TC_K][GM_LDB];
    __shared__ __align__(16) float stage[8][16][GM_LDS];
    gm_tile where;
    if (!gm_find_tile(p, GM_SIZES, blockIdx.x, GM_TC_M, where)) return;
    const long long g = where.g, row0 = where.row0, r0 = where.r0, rows = where.rows;
    const long long c0 = (long long)blockIdx.y * GM_TC_N;
    if (c0 >= p.n) return;
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wr = warp / 4, wc = warp % 4;  // the warp's 64 x 32 part of the tile
    const gm_in* a = static_cast<const gm_in*>(p.a) + (row0 + r0) * p.a_row;
    const gm_in* b = static_cast<const gm_in*>(p.b) + g * p.b_group + c0 * p.b_col;
    // 16-byte copies: A contiguous along K, B contiguous along N, every row start 16-byte aligned.
    const bool a_vec = p.a_col == 1 && p.k % 8 == 0 && p.a_row % 8 == 0 && gm_aligned16(a);
    const bool b_vec = p.b_col == 1 && p.n % 8 == 0 && p.b_row % 8 == 0 && gm_aligned16(b);
    const gm_tc_operands o = {a, b, rows, c0, a_vec, b_vec};

    gm_tc_acc acc[4][2];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) nvcuda::wmma::fill_fragment(acc[i][j], 0.0f);

    const long long steps = (p.k + GM_TC_K - 1) / GM_TC_K;
    gm_tc_load(as, bs, 0, p, o, 0, t);
    for (long long s = 0; s < steps; ++s) {
        const int st = int(s & 1);
        if (s + 1 < steps) {
            gm_tc_load(as, bs, st ^ 1, p, o, (s + 1) * GM_TC_K, t);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads();
        gm_tc_mma(acc, as, bs, st, wr, wc);
        __syncthreads();  // the next step's load overwrites this stage
    }
    gm_tc_store(p, acc, stage, static_cast<gm_out*>(p.d) + (row0 + r0) * p.d_row, g, rows, c0, warp, lane);
}
