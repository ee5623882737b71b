// SPDX-License-Identifier: Apache-2.0
// The grouped kernel for f32 inputs (included by grouped_gemm.cu after its common part), with
// GM_TILE and GM_TILE_K: blocks (x: a tile of GM_TILE rows of some group, y: a tile of GM_TILE
// columns) of 16 x 16 threads, each computing 4 x 4 elements of D, K in steps of GM_TILE_K through
// shared memory. Row tiles are numbered group after group; a block past the last group's last tile
// returns at once (the launch covers the host-side bound).
#pragma once

extern "C" __global__ void __launch_bounds__(256) gm_grouped_gemm(const gm_grouped p GM_SIZES_PARAM) {
    __shared__ float as[GM_TILE_K][GM_TILE + 4];
    __shared__ float bs[GM_TILE_K][GM_TILE + 4];
    gm_tile where;
    if (!gm_find_tile(p, GM_SIZES, blockIdx.x, GM_TILE, where)) return;
    const long long g = where.g, row0 = where.row0, r0 = where.r0, rows = where.rows;
    const long long c0 = (long long)blockIdx.y * GM_TILE;
    if (c0 >= p.n) return;
    const int tx = threadIdx.x, ty = threadIdx.y, t = ty * 16 + tx;
    const gm_in* a = static_cast<const gm_in*>(p.a) + (row0 + r0) * p.a_row;
    const gm_in* b = static_cast<const gm_in*>(p.b) + g * p.b_group;
    float acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    for (long long k0 = 0; k0 < p.k; k0 += GM_TILE_K) {
        for (int e = t; e < GM_TILE * GM_TILE_K; e += 256) {
            const int r = e / GM_TILE_K, kk = e % GM_TILE_K;
            as[kk][r] = (r < rows && k0 + kk < p.k) ? gm_load(a[r * p.a_row + (k0 + kk) * p.a_col]) : 0.0f;
        }
        for (int e = t; e < GM_TILE * GM_TILE_K; e += 256) {
            const int kk = e / GM_TILE, c = e % GM_TILE;
            bs[kk][c] = (k0 + kk < p.k && c0 + c < p.n) ? gm_load(b[(k0 + kk) * p.b_row + (c0 + c) * p.b_col]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < GM_TILE_K; ++kk) {
            float x[4], y[4];
            for (int i = 0; i < 4; ++i) x[i] = as[kk][ty * 4 + i];
            for (int j = 0; j < 4; ++j) y[j] = bs[kk][tx * 4 + j];
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += x[i] * y[j];
        }
        __syncthreads();
    }
    gm_out* d = static_cast<gm_out*>(p.d) + (row0 + r0) * p.d_row;
    for (int i = 0; i < 4; ++i) {
        const int r = ty * 4 + i;
        if (r >= rows) continue;
        for (int j = 0; j < 4; ++j) {
            const long long c = c0 + tx * 4 + j;
            if (c >= p.n) continue;
            float v = p.alpha * acc[i][j];
#if GM_BIAS
            v += gm_load(static_cast<const gm_out*>(p.bias)[g * p.bias_group + c * p.bias_col]);
#endif
            gm_store(d[r * p.d_row + c * p.d_col], gm_act(v));
        }
    }
}
