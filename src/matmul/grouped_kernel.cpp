// SPDX-License-Identifier: Apache-2.0
// The grouped kernels: every group's product in one launch, each block finding its group and tile
// from the sizes in device memory, with f32 accumulation: on Hopper, warpgroup MMA for f16 and bf16
// operands contiguous and aligned enough for it; elsewhere and for any strides, tensor cores (WMMA)
// for f16 and bf16 inputs and a plain shared-memory tiled GEMM for f32.
#include "matmul/grouped_kernel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <tuple>

#include <cuda.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/error.hpp>
#include "detail/log.hpp"
#include "core/driver_api.hpp"
#include "core/jit.hpp"
#include "detail/capture_mode.hpp"
#include "detail/status.hpp"
#include "matmul/call.hpp"
#include "matmul/types.hpp"

namespace gpumath::detail {
namespace {

std::atomic<std::uint64_t> hopper_launches{0};

// After the per-variant macros: gm_in, gm_out, GM_ACT (0 none, 1 relu, 2 gelu, 3 silu), GM_BIAS,
// GM_INLINE_SIZES (the capacity of the sizes parameter; 0: sizes in device memory), the tile sizes,
// and the element conversions gm_load and gm_store (cuda_element_conversions).
constexpr std::string_view prelude = R"(
struct gm_grouped {
    const void* a;
    const void* b;
    void* d;
    const void* bias;
    const int* sizes;
    long long groups;
    long long max_rows;
    long long n;
    long long k;
    long long a_row, a_col;
    long long b_group, b_row, b_col;
    long long d_row, d_col;
    long long bias_group, bias_col;
    float alpha;
    int reserved;
};
static_assert(sizeof(gm_grouped) == 152, "gm_grouped must match gpumath::detail::GroupedKernelParams");

// Where the group sizes are: GM_SIZES_PARAM is the kernels' last parameter (host sizes by value, in
// the launch's parameters) and GM_SIZES what they read them through.
#if GM_INLINE_SIZES
struct gm_sizes {
    int v[GM_INLINE_SIZES];
};
#define GM_SIZES_PARAM , const __grid_constant__ gm_sizes gm_inline
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
)";

// The kernel for f32 inputs (after the prelude).
constexpr std::string_view simt_body = R"(
// Block (x: a tile of GM_TILE rows of some group, y: a tile of GM_TILE columns) of 16 x 16 threads,
// each computing 4 x 4 elements of D. Row tiles are numbered group after group; a block past the
// last group's last tile returns at once (the launch covers the host-side bound).
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
            bs[kk][c] = (k0 + kk < p.k && c0 + c < p.n) ? gm_load(b[(k0 + kk) * p.b_row + (c0 + c) * p.b_col])
                                                        : 0.0f;
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
)";

// The 16-byte asynchronous copy of both tensor-core kernels (after the prelude).
constexpr std::string_view cp_async = R"(
// 16 bytes global -> shared (`smem` a shared-space address) without passing through registers;
// zeros when `in` is false (nothing is read then).
static __device__ __forceinline__ void gm_cp16(unsigned smem, const void* gmem, bool in) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(in ? 16 : 0));
}
)";

// The tensor-core kernel for f16 and bf16 inputs (after the same macros and gm_act, with GM_TC_M,
// GM_TC_N, GM_TC_K): blocks of 256 threads (8 warps, 2 x 4) computing GM_TC_M x GM_TC_N tiles of D
// with WMMA (16 x 16 x 16, f32 accumulation), K in steps of GM_TC_K through two shared-memory stages
// (the next step's tiles copied with cp.async while this one computes). Tiles of A and B copy 16
// bytes per thread where the operand is contiguous along the tile's inner dimension (and aligned),
// element by element otherwise (any strides); the epilog runs per 16 x 16 fragment, staged through
// shared memory.
constexpr std::string_view tc_body = R"(
#include <mma.h>
#define GM_LDA (GM_TC_K + 8)
#define GM_LDB (GM_TC_N + 8)
#define GM_LDS 20

static __device__ __forceinline__ bool gm_aligned16(const void* q) {
    return (reinterpret_cast<unsigned long long>(q) & 15ull) == 0;
}

static __device__ __forceinline__ unsigned gm_smem(const void* q) {
    return static_cast<unsigned>(__cvta_generic_to_shared(q));
}

extern "C" __global__ void __launch_bounds__(256) gm_grouped_gemm(const gm_grouped p GM_SIZES_PARAM) {
    using namespace nvcuda;
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

    auto load = [&](int st, long long k0) {
        if (a_vec) {
            for (int e = t * 8; e < GM_TC_M * GM_TC_K; e += 256 * 8) {
                const int r = e / GM_TC_K, kk = e % GM_TC_K;
                const bool in = r < rows && k0 + kk < p.k;
                gm_cp16(gm_smem(&as[st][r][kk]), in ? a + r * p.a_row + (k0 + kk) : a, in);
            }
        } else if (p.a_row == 1) {  // column-major A: consecutive threads along M
            for (int e = t; e < GM_TC_M * GM_TC_K; e += 256) {
                const int r = e % GM_TC_M, kk = e / GM_TC_M;
                as[st][r][kk] = (r < rows && k0 + kk < p.k) ? a[r + (k0 + kk) * p.a_col] : gm_in(0.0f);
            }
        } else {
            for (int e = t; e < GM_TC_M * GM_TC_K; e += 256) {
                const int r = e / GM_TC_K, kk = e % GM_TC_K;
                as[st][r][kk] = (r < rows && k0 + kk < p.k) ? a[r * p.a_row + (k0 + kk) * p.a_col] : gm_in(0.0f);
            }
        }
        if (b_vec) {
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
                bs[st][kk][c] =
                    (k0 + kk < p.k && c0 + c < p.n) ? b[(k0 + kk) * p.b_row + c * p.b_col] : gm_in(0.0f);
            }
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    const long long steps = (p.k + GM_TC_K - 1) / GM_TC_K;
    load(0, 0);
    for (long long s = 0; s < steps; ++s) {
        const int st = int(s & 1);
        if (s + 1 < steps) {
            load(st ^ 1, (s + 1) * GM_TC_K);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads();
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
        __syncthreads();  // the next step's load overwrites this stage
    }

    gm_out* d = static_cast<gm_out*>(p.d) + (row0 + r0) * p.d_row;
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
)";

// The Hopper kernel for f16 and bf16 inputs (after the prelude, the macros GM_WG_B_ROWS, GM_WG_BN,
// GM_WG_STAGES, GM_WG_MN_LBO and GM_WG_MN_SBO, and gm_wgmma for m64 n GM_WG_BN k16 of the input
// type; compiled for sm_90a), for A contiguous along K and weights contiguous along N
// (GM_WG_B_ROWS 1) or along K (0), 16-byte aligned (grouped_wgmma_layout). Blocks of 384 threads
// compute 128 x GM_WG_BN tiles of D: two consumer warpgroups, 64 rows each, run warpgroup MMAs
// (wgmma.mma_async, f32 accumulation, one m64 n GM_WG_BN k16 product per 16 of K) from shared
// memory; one thread of the third, producer warpgroup fills K in steps of 64 through GM_WG_STAGES
// 128-byte-swizzled stages with the tensor memory accelerator (cp.async.bulk.tensor: the swizzle
// applied by the copy, zeros outside the tensors). Stages are handed over through mbarriers, `full`
// (the stage's bytes have landed) and `empty` (every consumer thread's MMAs reading it have
// completed); the producer runs up to GM_WG_STAGES steps ahead and the K loop has no block-wide
// barrier. A block may take several tiles, one after another (persistent blocks, one per SM, for
// launches of many waves): its producer then fills the next tile's stages while the consumers store
// D of the last. The consumers' loop has no branch between an MMA and the wait that retires it (ptxas
// would serialize the MMAs otherwise), hence the dedicated producer and setmaxnreg to give the
// consumers its registers. With GM_WG_CLUSTER 2, clusters of two blocks take pairs of adjacent column
// tiles of one row tile: each block's producer loads half of the pair's A and multicasts it to both
// (cp.async.bulk.tensor .multicast::cluster), which halves A's reads from L2; a stage is refilled
// only once both blocks' consumers released it (their warps arrive on both blocks' `empty`
// barriers), and a producer waits for every stage to be released before it exits, so that no
// arrival reaches a block that has gone.
constexpr std::string_view wgmma_body = R"(
#define GM_WG_B_BYTES (GM_WG_BN * 128)
#define GM_WG_STAGE_BYTES (16384 + GM_WG_B_BYTES)
static_assert(GM_WG_STAGES >= 2, "a stage is refilled one step after its MMAs were issued");

// Keeps the compiler from moving accesses to the accumulators across the wgmma fences and waits
// (the asm statements of those do not name them).
#define GM_WG_PIN(acc)                                                  \
    _Pragma("unroll") for (int gm_i = 0; gm_i < GM_WG_BN / 2; ++gm_i) \
        asm volatile("" : "+f"(acc[gm_i])::"memory")

// A shared-memory matrix descriptor with 128-byte swizzle: start address, leading and stride byte
// offsets.
static __device__ __forceinline__ unsigned long long gm_desc(unsigned addr, unsigned leading, unsigned stride) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(leading >> 4) << 16) |
           ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

// A CUtensorMap, passed by value as a __grid_constant__ parameter (its address is what TMA takes).
struct __align__(64) gm_tmap {
    unsigned long long v[16];
};

#ifndef GM_WG_CLUSTER
#define GM_WG_CLUSTER 1
#endif
static_assert(GM_WG_CLUSTER == 1 || GM_WG_CLUSTER == 2, "clusters of one or two blocks");

static __device__ __forceinline__ void gm_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void gm_mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void gm_mbar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Spins until the phase of parity `parity` of the barrier has completed.
static __device__ __forceinline__ void gm_mbar_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (done == 0);
}
static __device__ __forceinline__ void gm_tma2(unsigned smem, const gm_tmap& map, int x, int y, unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
        "[%4];\n" ::"r"(smem),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x), "r"(y), "r"(bar)
        : "memory");
}
static __device__ __forceinline__ void gm_tma3(unsigned smem, const gm_tmap& map, int x, int y, int z,
                                               unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
        "%4}], [%5];\n" ::"r"(smem),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x), "r"(y), "r"(z), "r"(bar)
        : "memory");
}

#if GM_WG_CLUSTER > 1
static __device__ __forceinline__ unsigned gm_cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
// `bar` of this block's shared memory as the address of the same barrier in block `rank` of the
// cluster.
static __device__ __forceinline__ unsigned gm_mapa(unsigned bar, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(bar), "r"(rank));
    return r;
}
// An arrival on a barrier of any block of the cluster (the default semantics: what it orders is
// the MMAs' reads of the stage, which the warpgroup's wait_group has completed before it).
static __device__ __forceinline__ void gm_mbar_arrive_cluster(unsigned cluster_bar) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}
// gm_tma2 into the same shared-memory offset of every block of the cluster in `mask`, signalling
// the barrier at `bar`'s offset in each.
static __device__ __forceinline__ void gm_tma2_multicast(unsigned smem, const gm_tmap& map, int x, int y,
                                                         unsigned bar, unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem),
        "l"(reinterpret_cast<unsigned long long>(&map)), "r"(x), "r"(y), "r"(bar), "h"(mask)
        : "memory");
}
static __device__ __forceinline__ void gm_cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
#endif

// A warp's inclusive sum over its lanes.
static __device__ __forceinline__ long long gm_warp_scan(long long v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const long long u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    return v;
}

// gm_find_tile for tiles of 128 rows by a whole warp (every lane calls it, with the same `tile`):
// the lanes take 32 groups at a time, their sizes read at once and their rows and row tiles summed
// by warp scans, which keeps a search through many groups short. A group's rows clamped to the bound
// are min(S + m, max_rows) - min(S, max_rows), with S the rows before it, as gm_find_tile counts
// them. Returns the row tiles before `tile`'s group when it finds it (filling `out`), and the row
// tiles of all the groups otherwise: with `tile` -1 it counts them.
static __device__ __forceinline__ long long gm_warp_find_tile(const gm_grouped& p, const int* sizes, long long tile,
                                                              gm_tile& out) {
    const int lane = threadIdx.x & 31;
    long long rows_before = 0, tiles_before = 0;  // rows unclamped
    for (long long first = 0; first < p.groups; first += 32) {
        long long m = first + lane < p.groups ? sizes[first + lane] : 0;
        if (m < 0) m = 0;
        const long long through = rows_before + gm_warp_scan(m, lane);  // rows up to and including this group
        const long long lo = min(through - m, p.max_rows), hi = min(through, p.max_rows);
        const long long t = (hi - lo + 127) / 128;
        const long long t_through = tiles_before + gm_warp_scan(t, lane);
        const unsigned holder = __ballot_sync(0xffffffffu, tile >= t_through - t && tile < t_through);
        if (holder != 0) {
            const int src = __ffs(holder) - 1;
            const long long g_lo = __shfl_sync(0xffffffffu, lo, src), g_hi = __shfl_sync(0xffffffffu, hi, src);
            const long long g_first = __shfl_sync(0xffffffffu, t_through - t, src);
            out.g = first + src;
            out.row0 = g_lo;
            out.r0 = (tile - g_first) * 128;
            out.rows = g_hi - g_lo - out.r0 < 128 ? g_hi - g_lo - out.r0 : 128;
            return g_first;
        }
        rows_before = __shfl_sync(0xffffffffu, through, 31);
        tiles_before = __shfl_sync(0xffffffffu, t_through, 31);
    }
    return tiles_before;
}

// Tile `v` of the block order: tiles come in bands of GM_WG_BAND row tiles, a band's row tiles of
// one column tile consecutive, then the next column tile's. The blocks working at one time then
// cover a few row tiles (mostly of one group, whose weights' columns they read once) across many
// column tiles (the band's rows of A read from L2), rather than every row tile of one or two column
// tiles (all of A read again from memory for each column tile).
static __device__ __forceinline__ void gm_band_tile(long long v, long long row_tiles, long long col_tiles,
                                                    long long& row_tile, long long& col_tile) {
    const long long band_first = v / (GM_WG_BAND * col_tiles) * GM_WG_BAND;
    const long long band_rows = row_tiles - band_first < GM_WG_BAND ? row_tiles - band_first : GM_WG_BAND;
    const long long in_band = v - band_first * col_tiles;
    row_tile = band_first + in_band % band_rows;
    col_tile = in_band / band_rows;
}

// Two adjacent elements of an f16 or bf16 D in the 32 bits of one store, x in the low half (not
// used for f32).
static __device__ __forceinline__ unsigned gm_pack2(float x, float y) {
    gm_out w[2];
    gm_store(w[0], x);
    gm_store(w[1], y);
    unsigned u = 0;
    memcpy(&u, w, sizeof(u));  // w's 4 bytes for f16 and bf16
    return u;
}

// ta: A as (K, rows) in boxes of (64, 16); ta_full: the same in boxes of (64, 128 / GM_WG_CLUSTER),
// a whole tile's or a block's share of it; tb: the weights as (N, K, G) with box (64, 64, 1)
// (GM_WG_B_ROWS) or (K, N, G) with box (64, GM_WG_BN, 1); all 128-byte swizzled (so that a 128-row
// box lands as eight 16-row ones do). Persistent: cluster c computes units c, c + clusters, ... of
// the band order, its producers running into the next unit's first stages while the consumers store
// the last one's D.
extern "C" __global__ void __launch_bounds__(384, 1)
    gm_grouped_wgmma(const gm_grouped p, const __grid_constant__ gm_tmap ta, const __grid_constant__ gm_tmap ta_full,
                     const __grid_constant__ gm_tmap tb
                         GM_SIZES_PARAM) {
    extern __shared__ __align__(1024) unsigned char gm_smem[];
    gm_tile none{};
    const long long row_tiles = gm_warp_find_tile(p, GM_SIZES, -1, none);
    const long long col_tiles = (p.n + GM_WG_BN - 1) / GM_WG_BN;
    // The band order's units: tiles, or with clusters pairs of column tiles (the host launches
    // clusters only where the column tiles pair up). Cluster c takes units c, c + clusters, ...
    const long long col_units = (col_tiles + GM_WG_CLUSTER - 1) / GM_WG_CLUSTER;
    const long long units = row_tiles * col_units;
    const long long cluster = blockIdx.x / GM_WG_CLUSTER, clusters = gridDim.x / GM_WG_CLUSTER;
    if (cluster >= units) return;  // both blocks of a cluster alike
#if GM_WG_CLUSTER > 1
    const unsigned rank = gm_cluster_rank();
#else
    const unsigned rank = 0;
#endif
    // Stages from the first 1024-byte boundary (the launch asks for 1024 bytes more), then the
    // barriers: full[st] at bars + 8 st, empty[st] at bars + 8 (GM_WG_STAGES + st).
    const unsigned base = (static_cast<unsigned>(__cvta_generic_to_shared(gm_smem)) + 1023u) & ~1023u;
    const unsigned bars = base + GM_WG_STAGES * GM_WG_STAGE_BYTES;
    const int steps = int((p.k + 63) / 64);
    if (threadIdx.x == 0) {
        for (int st = 0; st < GM_WG_STAGES; ++st) {
            gm_mbar_init(bars + 8 * st, 1);
            // Every consumer thread arrives, or with clusters one thread per consumer warp of each block.
            gm_mbar_init(bars + 8 * (GM_WG_STAGES + st), GM_WG_CLUSTER > 1 ? 8 * GM_WG_CLUSTER : 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
#if GM_WG_CLUSTER > 1
    gm_cluster_sync();  // the other block's barriers are initialized before any arrival or multicast
#else
    __syncthreads();
#endif
    // Producer and consumers walk the same tiles and count the same steps across them: step i of
    // the block uses stage i % GM_WG_STAGES in barrier phase (i / GM_WG_STAGES) % 2.
    if (threadIdx.x >= 256) {
        // The producer warpgroup: one thread issues every step's loads.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x != 256) return;
        int st = 0;
        unsigned phase = 0;
        bool filled = false;  // every stage has been used once: wait for its release before refilling
        long long issued = 0;  // steps
        for (long long v = cluster; v < units; v += clusters) {
            long long row_tile, col_unit;
            gm_band_tile(v, row_tiles, col_units, row_tile, col_unit);
            const long long col_tile = col_unit * GM_WG_CLUSTER + rank;
            gm_tile where;
            (void)gm_find_tile(p, GM_SIZES, row_tile, 128, where);  // row_tile < row_tiles: found
            const int a_y = int(where.row0 + where.r0), b_z = p.b_group == 0 ? 0 : int(where.g);
            const int n0 = int(col_tile * GM_WG_BN);
            // A tile of 128 rows in one load, a partial one in boxes of 16 rows, only as many as it
            // has rows: the rows past them keep stale values, which reach only rows of D that are
            // not stored.
            const bool a_full = where.rows == 128;
            const int a_boxes = a_full ? 8 : int((where.rows + 15) / 16);
            for (int s = 0; s < steps; ++s) {
                if (filled) gm_mbar_wait(bars + 8 * (GM_WG_STAGES + st), phase ^ 1u);
                const unsigned sa = base + st * GM_WG_STAGE_BYTES, sb = sa + 16384, full = bars + 8 * st;
                const int k0 = s * 64;
                gm_mbar_expect(full, a_boxes * 2048 + GM_WG_B_BYTES);
#if GM_WG_CLUSTER > 1
                // Each block loads its share of A's boxes (ta_full's box is 64 rows here) into both.
                if (a_full) gm_tma2_multicast(sa + rank * 8192, ta_full, k0, a_y + 64 * int(rank), full, 3);
                else
                    for (int j = int(rank); j < a_boxes; j += 2)
                        gm_tma2_multicast(sa + j * 2048, ta, k0, a_y + 16 * j, full, 3);
#else
                if (a_full) gm_tma2(sa, ta_full, k0, a_y, full);
                else
                    for (int j = 0; j < a_boxes; ++j) gm_tma2(sa + j * 2048, ta, k0, a_y + 16 * j, full);
#endif
#if GM_WG_B_ROWS
#pragma unroll
                for (int j = 0; j < GM_WG_BN / 64; ++j) gm_tma3(sb + j * 8192, tb, n0 + 64 * j, k0, b_z, full);
#else
                gm_tma3(sb, tb, k0, n0, b_z, full);
#endif
                ++issued;
                if (++st == GM_WG_STAGES) {
                    st = 0;
                    phase ^= 1u;
                    filled = true;
                }
            }
        }
#if GM_WG_CLUSTER > 1
        // Every stage filled released by both blocks' consumers: the other block's last arrivals on
        // this block's barriers have landed, and this block may exit.
        for (int i = 0; i < GM_WG_STAGES; ++i) {
            if (issued + i >= GM_WG_STAGES) gm_mbar_wait(bars + 8 * (GM_WG_STAGES + st), phase ^ 1u);
            if (++st == GM_WG_STAGES) {
                st = 0;
                phase ^= 1u;
            }
        }
#else
        (void)issued;
#endif
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int t = threadIdx.x, wg = t >> 7;
    const int warp = (t & 127) >> 5, lane = t & 31;
    // f16 or bf16 D with its rows contiguous and every row's first element 4-byte aligned: a
    // thread's two adjacent columns go out in one store; with 16-byte aligned rows and N % 8 == 0, a block of 8 columns.
    const unsigned long long d_at = reinterpret_cast<unsigned long long>(p.d);
    const bool pairs = sizeof(gm_out) == 2 && p.d_col == 1 && p.d_row % 2 == 0 && d_at % 4 == 0;
    const bool wide = pairs && p.d_row % 8 == 0 && p.n % 8 == 0 && d_at % 16 == 0;
    int st = 0;
    unsigned phase = 0;
#if GM_WG_CLUSTER > 1
    // A warp's release of a stage: its first lane arrives on the stage's `empty` in both blocks (the
    // warpgroup's wait_group before it has retired every lane's MMAs reading the stage).
    const unsigned empty_here = gm_mapa(bars + 8 * GM_WG_STAGES, rank),
                   empty_there = gm_mapa(bars + 8 * GM_WG_STAGES, rank ^ 1u);
    // The order matters: this block's own arrival goes first. A block that multicasts no A into
    // the other for a step (a tile of at most 16 rows: rank 1 loads nothing) leaves no other edge
    // ordering its release of a stage before the other block's release of the stage's next use.
    auto release = [&](int stage) {
        if (lane == 0) {
            gm_mbar_arrive_cluster(empty_here + 8 * stage);
            gm_mbar_arrive_cluster(empty_there + 8 * stage);
        }
    };
#else
    auto release = [&](int stage) { gm_mbar_arrive(bars + 8 * (GM_WG_STAGES + stage)); };
#endif
    for (long long v = cluster; v < units; v += clusters) {
        long long row_tile, col_unit;
        gm_band_tile(v, row_tiles, col_units, row_tile, col_unit);
        const long long col_tile = col_unit * GM_WG_CLUSTER + rank;
        gm_tile where;
        (void)gm_warp_find_tile(p, GM_SIZES, row_tile, where);  // row_tile < row_tiles: found
        const long long rows = where.rows, c0 = col_tile * GM_WG_BN;
        float acc[GM_WG_BN / 2];
#pragma unroll
        for (int i = 0; i < GM_WG_BN / 2; ++i) acc[i] = 0.0f;
        // The MMAs of the step in stage st (barrier parity phase).
        auto mma = [&](int st, unsigned phase) {
            gm_mbar_wait(bars + 8 * st, phase);
            const unsigned sa = base + st * GM_WG_STAGE_BYTES, sb = sa + 16384;
            GM_WG_PIN(acc);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                // A: this warpgroup's 64 rows, 16 of K 32 bytes into the swizzled rows; groups of 8
                // rows 1024 bytes apart (the leading offset is unused).
                const unsigned long long da = gm_desc(sa + wg * 8192 + kk * 32, 16, 1024);
#if GM_WG_B_ROWS
                // B contiguous along N: 16 k-rows (2048 bytes) per step; 64-column blocks 8192 bytes
                // apart, groups of 8 k-rows 1024 bytes apart.
                const unsigned long long db = gm_desc(sb + kk * 2048, GM_WG_MN_LBO, GM_WG_MN_SBO);
#else
                const unsigned long long db = gm_desc(sb + kk * 32, 16, 1024);
#endif
                gm_wgmma(acc, da, db);
            }
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            GM_WG_PIN(acc);
        };
        int pst = st;  // the stage of the step before (its MMAs complete one step later)
        if (steps > 0) {
            mma(st, phase);
            if (++st == GM_WG_STAGES) {
                st = 0;
                phase ^= 1u;
            }
        }
        for (int s = 1; s < steps; ++s) {
            mma(st, phase);
            // Step s - 1's MMAs have completed (wait_group 1): its stage may be refilled.
            release(pst);
            pst = st;
            if (++st == GM_WG_STAGES) {
                st = 0;
                phase ^= 1u;
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        GM_WG_PIN(acc);
        if (steps > 0) release(pst);  // the last step's stage

        // The accumulator of an m64nWk16 product: thread (warp w, lane l) of a warpgroup holds rows
        // 16 w + l / 4 and 16 w + l / 4 + 8, columns 8 q + 2 (l % 4) and the next, of each
        // 8-column block q.
        gm_out* d = static_cast<gm_out*>(p.d) + (where.row0 + where.r0) * p.d_row;
#if GM_BIAS
        const gm_out* bias = static_cast<const gm_out*>(p.bias) + where.g * p.bias_group;
#endif
        // D's element (row r, column c) from the accumulator's pair e of 8-column block q.
        auto value = [&](int q, int i, int e, long long c) {
            float v = p.alpha * acc[q * 4 + i * 2 + e];
#if GM_BIAS
            v += gm_load(bias[c * p.bias_col]);
#endif
            return gm_act(v);
        };
        if (wide) {
            // The four threads of a row exchange their pairs (a 4 x 4 transpose through shuffles) so
            // that each stores one 8-column block in one 16-byte store: thread x % 4 of the row takes
            // block 4 j + x % 4 of each four. The warp skips 8-row halves without rows; within one, every
            // lane shuffles and only the stores test the rows.
            const int x = lane & 3;
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                if (wg * 64 + warp * 16 + 8 * i >= rows) break;  // the warp's rows from here on: none
                const long long r = wg * 64 + warp * 16 + (lane >> 2) + 8 * i;
#pragma unroll
                for (int j = 0; j < GM_WG_BN / 32; ++j) {
                    unsigned u[4];
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int q = 4 * j + e;
                        const long long c = c0 + q * 8 + x * 2;
                        // Columns come in whole blocks of 8 (N % 8 == 0): one test for the pair.
                        u[e] = c < p.n ? gm_pack2(value(q, i, 0, c), value(q, i, 1, c + 1)) : 0u;
                    }
                    // Round k: the thread sends its pair of block 4 j + (x ^ k) to thread x ^ k and
                    // receives that thread's pair of block 4 j + x, which is the block's pair x ^ k.
                    unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        const int other = x ^ k;
                        const unsigned send = other == 0 ? u[0] : other == 1 ? u[1] : other == 2 ? u[2] : u[3];
                        const unsigned got = k == 0 ? send : __shfl_xor_sync(0xffffffffu, send, k);
#pragma unroll
                        for (int e = 0; e < 4; ++e) w[e] = other == e ? got : w[e];
                    }
                    const long long c = c0 + (4 * j + x) * 8;
                    if (r < rows && c < p.n)
                        *reinterpret_cast<uint4*>(d + r * p.d_row + c) = make_uint4(w[0], w[1], w[2], w[3]);
                }
            }
            continue;
        }
#pragma unroll
        for (int q = 0; q < GM_WG_BN / 8; ++q)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const long long r = wg * 64 + warp * 16 + (lane >> 2) + 8 * i;
                if (r >= rows) continue;
                const long long c = c0 + q * 8 + (lane & 3) * 2;
                if (pairs && c + 1 < p.n) {
                    *reinterpret_cast<unsigned*>(d + r * p.d_row + c) =
                        gm_pack2(value(q, i, 0, c), value(q, i, 1, c + 1));
                } else {
                    if (c < p.n) gm_store(d[r * p.d_row + c * p.d_col], value(q, i, 0, c));
                    if (c + 1 < p.n) gm_store(d[r * p.d_row + (c + 1) * p.d_col], value(q, i, 1, c + 1));
                }
            }
    }
}
)";

/// gm_wgmma for m64 n`wn` k16: d (wn / 2 f32 per thread) += A (descriptor da, K-major) * B
/// (descriptor db), with B transposed (contiguous along N) when `trans_b`.
std::string wgmma_instruction(int wn, const char* type, bool trans_b) {
    std::string regs, outs;
    for (int i = 0; i < wn / 2; ++i) {
        regs += fmt::format("{}%{}", i == 0 ? "" : ", ", i);
        outs += fmt::format("{}\"+f\"(d[{}])", i == 0 ? "" : ", ", i);
    }
    return fmt::format(
        "static __device__ __forceinline__ void gm_wgmma(float (&d)[{0}], unsigned long long da, unsigned long "
        "long db) {{\n"
        "    asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{1}, 0;\\n\"\n"
        "                 \"wgmma.mma_async.sync.aligned.m64n{2}k16.f32.{3}.{3} {{{4}}}, %{5}, %{6}, p, 1, 1, 0, "
        "{7};\\n}}\\n\"\n"
        "                 : {8}\n"
        "                 : \"l\"(da), \"l\"(db), \"r\"(1));\n"
        "}}\n",
        wn / 2, wn / 2 + 2, wn, type, regs, wn / 2, wn / 2 + 1, trans_b ? 1 : 0, outs);
}

const char* type_name(DataType t) {
    const char* name = cuda_element_type(t);
    if (name == nullptr)
        throw_invalid(fmt::format("{}: the grouped kernel takes f16, bf16 and f32", gpumath::to_string(t)),
                      "grouped_kernel_source");
    return name;
}

int activation(Epilog e) {
    switch (e) {
        case Epilog::none:
        case Epilog::bias:
            return 0;
        case Epilog::relu:
        case Epilog::relu_bias:
            return 1;
        case Epilog::gelu:
        case Epilog::gelu_bias:
            return 2;
        case Epilog::silu:
        case Epilog::silu_bias:
            return 3;
        default:
            throw_invalid(fmt::format("epilog: {} has no grouped-kernel form", gpumath::to_string(e)),
                          "grouped_kernel_source");
    }
}

/// Which program of a variant: the portable kernel (layout none), or the Hopper kernel for one
/// weight layout and block width.
struct Program {
    GroupedWgmmaLayout layout = GroupedWgmmaLayout::none;
    int block_n = 0;
    int cluster = 1;
    friend bool operator<(const Program& x, const Program& y) noexcept {
        return std::tuple(x.layout, x.block_n, x.cluster) < std::tuple(y.layout, y.block_n, y.cluster);
    }
};

const core::Kernel& grouped_kernel(int device, const GroupedKernelVariant& v, const Program& which) {
    using Key = std::tuple<int, DataType, DataType, Epilog, bool, Program>;
    static std::mutex mutex;
    // Never destroyed, like every per-device state: no static destructor may run after the CUDA
    // runtime has shut down.
    static auto* cache = new std::map<Key, std::unique_ptr<const core::Kernel>>();
    const Key key{device, v.input, v.result, v.epilog, v.inline_sizes, which};
    {
        std::lock_guard lock(mutex);
        if (auto it = cache->find(key); it != cache->end()) return *it->second;
    }
    // Compiled outside the lock; two threads that miss at once both compile (the compile cache
    // serves the second) and the first one stored wins.
    const core::Device dev(device);
    std::unique_ptr<core::Kernel> k;
    const RelaxedCaptureMode relaxed("loading gpumath's grouped kernel");  // the first call may be in a capture
    if (which.layout == GroupedWgmmaLayout::none) {
        const core::Module module(compile_grouped_kernel(v, dev.arch()));
        k = std::make_unique<core::Kernel>(module.kernel(grouped_kernel_name, device));
    } else {
        const core::Module module(
            compile_grouped_wgmma_kernel(v, which.layout, which.block_n, dev.arch() + "a", which.cluster));
        k = std::make_unique<core::Kernel>(module.kernel(grouped_wgmma_kernel_name, device));
        k->set_max_dynamic_shared_memory(grouped_wgmma_shared_bytes(which.block_n));
    }
    std::lock_guard lock(mutex);
    return *cache->emplace(key, std::move(k)).first->second;
}

/// The Hopper kernel of `which` for `device`, or null (and the portable kernel from then on for that
/// device, with a warning) when it cannot be compiled or loaded there: an NVRTC without sm_90a, a
/// driver refusing the shared memory (out of memory while loading: null for this call only). A
/// kernel that did load keeps serving the thread that last looked it up (it stays valid), even
/// after another program was refused on that device.
const core::Kernel* hopper_kernel(int device, const GroupedKernelVariant& v, const Program& which) {
    // The last kernel this thread found (a model's layers call the same few): no lock on the way.
    struct Last {
        int device = -1;
        GroupedKernelVariant variant;
        Program which;
        const core::Kernel* kernel = nullptr;
    };
    thread_local Last last;
    if (last.kernel != nullptr && last.device == device && last.variant.input == v.input &&
        last.variant.result == v.result && last.variant.epilog == v.epilog &&
        last.variant.inline_sizes == v.inline_sizes && last.which.layout == which.layout &&
        last.which.block_n == which.block_n && last.which.cluster == which.cluster)
        return last.kernel;
    static std::mutex mutex;
    static auto* refused = new std::set<int>();  // never destroyed (see grouped_kernel)
    {
        std::lock_guard lock(mutex);
        if (refused->count(device) != 0) return nullptr;
    }
    try {
        const core::Kernel* k = &grouped_kernel(device, v, which);  // never destroyed (see there)
        last = {.device = device, .variant = v, .which = which, .kernel = k};
        return k;
    } catch (const Error& e) {
        // Running out of memory while loading passes (the next call tries again); anything else
        // (an NVRTC without sm_90a, a driver refusing the shared memory) holds for the device.
        const bool transient = dynamic_cast<const CudaError*>(&e) != nullptr && e.status() == CUDA_ERROR_OUT_OF_MEMORY;
        log(LogLevel::warn,
            "grouped matmul: the Hopper grouped kernel is unavailable on device {} ({}); the portable "
            "kernel runs {} there",
            device, e.what(), transient ? "this call" : "its calls");
        if (!transient) {
            std::lock_guard lock(mutex);
            refused->insert(device);
        }
        return nullptr;
    }
}

std::string variant_header(const GroupedKernelVariant& v) {
    return fmt::format(
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\ntypedef {} gm_in;\ntypedef {} gm_out;\n#define GM_ACT {}\n"
        "#define GM_BIAS {}\n#define GM_INLINE_SIZES {}\n",
        type_name(v.input), type_name(v.result), activation(v.epilog), epilog_takes_bias(v.epilog) ? 1 : 0,
        v.inline_sizes ? grouped_inline_groups : 0);
}

/// The tensor maps of the Hopper kernel's TMA loads: A as (K, max_rows) in boxes of 64 x 16 and of
/// 64 x (128 / cluster) (a tile of 128 rows, or each block's share of it in a cluster), the
/// weights as (N, K, G) in boxes of 64 x 64 x 1 (contiguous along N) or (K, N, G) in boxes of
/// 64 x block_n x 1, all 128-byte swizzled (the layout the MMAs' descriptors read).
struct HopperMaps {
    CUtensorMap a, a_full, b;
};

/// Operand sets whose maps each thread keeps (a model's layers call with buffers of their own).
constexpr std::size_t kept_maps = 8;

/// The maps of one call, encoded once per thread for each of the last kept_maps operand sets (the
/// encoding is host work only, so a capture records the same maps; the pointer is valid until the
/// thread's next call). Null where the driver lacks cuTensorMapEncodeTiled, or refuses the operands
/// (with a warning, once for a run of such calls).
const HopperMaps* hopper_maps(const GroupedKernelVariant& v, const GroupedKernelParams& p, GroupedWgmmaLayout layout,
                              int block_n, int cluster) {
    struct Key {
        const void* a = nullptr;
        const void* b = nullptr;
        std::int64_t max_rows = 0, n = 0, k = 0, groups = 0, a_row = 0, b_group = 0, b_row = 0, b_col = 0;
        DataType input = DataType::f32;
        GroupedWgmmaLayout layout = GroupedWgmmaLayout::none;
        int block_n = 0, cluster = 0;
        bool operator==(const Key&) const = default;
    };
    struct Kept {
        Key key;
        HopperMaps maps{};
    };
    thread_local std::array<Kept, kept_maps> kept{};  // an unused slot (layout none) matches no call
    thread_local std::size_t next = 0;                // the slot the next encoding replaces
    thread_local Key refused;
    const Key key{p.a,       p.b,     p.max_rows, p.n,     p.k,    p.groups, p.a_row,
                  p.b_group, p.b_row, p.b_col,    v.input, layout, block_n,  cluster};
    for (Kept& k : kept)
        if (k.key == key) return &k.maps;
    if (key == refused) return nullptr;
    ensure_context();  // the driver encodes in the current context, which a new thread lacks
    const DriverApi& d = driver();
    if (d.cuTensorMapEncodeTiled == nullptr) return nullptr;
    const CUtensorMapDataType type =
        v.input == DataType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    auto encode = [&](CUtensorMap& map, const void* base, cuuint32_t rank, const cuuint64_t* dims,
                      const cuuint64_t* strides, const cuuint32_t* box) {
        const cuuint32_t unit[3] = {1, 1, 1};
        return d.cuTensorMapEncodeTiled(&map, type, rank, const_cast<void*>(base), dims, strides, box, unit,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    };
    const cuuint64_t a_dims[2] = {cuuint64_t(p.k), cuuint64_t(p.max_rows)};
    const cuuint64_t a_strides[1] = {cuuint64_t(p.a_row) * 2};
    const cuuint32_t a_box[2] = {64, 16};
    // Weights shared by every group (a group stride of 0) are one group at coordinate 0.
    const cuuint64_t groups = p.b_group == 0 ? 1 : cuuint64_t(p.groups);
    const cuuint64_t group_bytes = p.b_group == 0 ? 16 : cuuint64_t(p.b_group) * 2;
    const bool rows = layout == GroupedWgmmaLayout::b_rows;
    const cuuint64_t b_dims[3] = {cuuint64_t(rows ? p.n : p.k), cuuint64_t(rows ? p.k : p.n), groups};
    const cuuint64_t b_strides[2] = {cuuint64_t(rows ? p.b_row : p.b_col) * 2, group_bytes};
    const cuuint32_t b_box[3] = {64, rows ? 64u : cuuint32_t(block_n), 1};
    HopperMaps fresh{};
    const cuuint32_t a_full_box[2] = {64, cuuint32_t(128 / cluster)};  // a tile, or a block's share of it
    CUresult ra = encode(fresh.a, p.a, 2, a_dims, a_strides, a_box);
    if (ra == CUDA_SUCCESS) ra = encode(fresh.a_full, p.a, 2, a_dims, a_strides, a_full_box);
    const CUresult rb = ra == CUDA_SUCCESS ? encode(fresh.b, p.b, 3, b_dims, b_strides, b_box) : ra;
    if (rb != CUDA_SUCCESS) {
        refused = key;
        log(LogLevel::warn,
            "grouped matmul: cuTensorMapEncodeTiled refused the operands (CUresult {}); the portable "
            "kernel runs this call and those after it on the same operands",
            int(rb));
        return nullptr;
    }
    Kept& slot = kept[next];
    next = (next + 1) % kept_maps;
    slot.maps = fresh;
    slot.key = key;
    return &slot.maps;
}

}  // namespace

std::string grouped_kernel_source(const GroupedKernelVariant& v) {
    std::string s = variant_header(v);
    s += fmt::format(
        "#define GM_TILE {}\n#define GM_TILE_K {}\n#define GM_TC_M {}\n#define GM_TC_N {}\n#define GM_TC_K {}\n",
        grouped_tile, grouped_tile_k, grouped_tc_tile_m, grouped_tc_tile_n, grouped_tc_tile_k);
    s += cuda_element_conversions;
    s += "#line 1 \"gpumath_grouped\"";
    s += prelude;
    if (uses_tensor_cores(v)) {
        s += cp_async;
        s += tc_body;
    } else {
        s += simt_body;
    }
    return s;
}

std::string grouped_wgmma_source(const GroupedKernelVariant& v, GroupedWgmmaLayout layout, int block_n, int cluster) {
    if (!uses_tensor_cores(v))
        throw_invalid(fmt::format("{}: the Hopper grouped kernel takes f16 and bf16", gpumath::to_string(v.input)),
                      "grouped_wgmma_source");
    if (layout == GroupedWgmmaLayout::none)
        throw_invalid("layout: none has no Hopper grouped kernel", "grouped_wgmma_source");
    if (block_n != 128 && block_n != 256)
        throw_invalid(fmt::format("block_n: {} columns per block; the kernel has 128 or 256", block_n),
                      "grouped_wgmma_source");
    if (cluster != 1 && cluster != 2)
        throw_invalid(fmt::format("cluster: {} blocks per cluster; the kernel has 1 or 2", cluster),
                      "grouped_wgmma_source");
    const bool b_rows = layout == GroupedWgmmaLayout::b_rows;
    const char* type = v.input == DataType::bf16 ? "bf16" : "f16";
    std::string s = variant_header(v);
    // Weights contiguous along N: the leading byte offset steps between 64-column blocks (8192
    // bytes apart), the stride byte offset between groups of 8 k-rows (1024 bytes apart). Measured
    // on the H200: the two exchanged give wrong products once an MMA spans two blocks.
    s += fmt::format(
        "#define GM_WG_B_ROWS {}\n#define GM_WG_BN {}\n#define GM_WG_STAGES {}\n#define GM_WG_BAND {}\n"
        "#define GM_WG_MN_LBO {}\n#define GM_WG_MN_SBO {}\n#define GM_WG_CLUSTER {}\n",
        b_rows ? 1 : 0, block_n, grouped_wgmma_stages(block_n), grouped_wgmma_band, 8192, 1024, cluster);
    s += cuda_element_conversions;
    s += wgmma_instruction(block_n, type, b_rows);
    s += "#line 1 \"gpumath_grouped_wgmma\"";
    s += prelude;
    s += wgmma_body;
    return s;
}

GroupedWgmmaLayout grouped_wgmma_layout(const GroupedKernelVariant& v, const GroupedKernelParams& p) noexcept {
    if (!uses_tensor_cores(v) || p.k % 8 != 0) return GroupedWgmmaLayout::none;
    // TMA coordinates are 32-bit and its strides below 2^40 bytes.
    constexpr std::int64_t coord = std::numeric_limits<std::int32_t>::max(), stride = (std::int64_t(1) << 39) - 1;
    if (p.max_rows > coord - 128 || p.n > coord || p.k > coord || p.groups > coord) return GroupedWgmmaLayout::none;
    if (p.a_row > stride || p.b_group > stride || p.b_row > stride || p.b_col > stride) return GroupedWgmmaLayout::none;
    if (p.a_col != 1 || p.a_row % 8 != 0 || alignment_class(p.a) < 16) return GroupedWgmmaLayout::none;
    if (p.b_group % 8 != 0 || alignment_class(p.b) < 16) return GroupedWgmmaLayout::none;
    if (p.b_col == 1 && p.b_row % 8 == 0 && p.n % 8 == 0) return GroupedWgmmaLayout::b_rows;
    if (p.b_row == 1 && p.b_col % 8 == 0) return GroupedWgmmaLayout::b_cols;
    return GroupedWgmmaLayout::none;
}

core::ObjectCode compile_grouped_wgmma_kernel(const GroupedKernelVariant& v, GroupedWgmmaLayout layout, int block_n,
                                              const std::string& arch, int cluster) {
    core::ProgramOptions options;
    options.name = fmt::format("gpumath_grouped_wgmma_{}_{}_{}_{}_n{}{}{}", gpumath::to_string(v.input),
                               gpumath::to_string(v.result), gpumath::to_string(v.epilog),
                               layout == GroupedWgmmaLayout::b_rows ? "b_rows" : "b_cols", block_n,
                               cluster > 1 ? "_pair" : "", v.inline_sizes ? "_host_sizes" : "");
    options.arch = arch;
    options.std = "c++17";
    return core::Program(grouped_wgmma_source(v, layout, block_n, cluster), std::move(options))
        .compile(core::CodeType::cubin);
}

int grouped_wgmma_columns(const GroupedKernelParams& p, int multiprocessors) noexcept {
    // 256 columns per block read A half as often but make half the blocks: only where the bound's
    // rows alone make at least two waves of them.
    const std::int64_t wide = ((p.max_rows + 127) / 128) * ((p.n + 255) / 256);
    return wide >= 2 * std::int64_t(multiprocessors) ? 256 : 128;
}

core::ObjectCode compile_grouped_kernel(const GroupedKernelVariant& v, const std::string& arch) {
    core::ProgramOptions options;
    options.name = fmt::format("gpumath_grouped_{}_{}_{}{}", gpumath::to_string(v.input), gpumath::to_string(v.result),
                               gpumath::to_string(v.epilog), v.inline_sizes ? "_host_sizes" : "");
    options.arch = arch;
    options.std = "c++17";
    return core::Program(grouped_kernel_source(v), std::move(options)).compile(core::CodeType::cubin);
}

std::uint64_t grouped_hopper_launches() noexcept { return hopper_launches.load(std::memory_order_relaxed); }

const GroupedDeviceTraits& grouped_device_traits(int device) {
    thread_local int known = -1;
    thread_local GroupedDeviceTraits traits;
    if (known != device) {
        const core::Device dev(device);
        traits = {.cc = dev.compute_capability(), .multiprocessors = dev.multiprocessor_count()};
        known = device;
    }
    return traits;
}

std::string grouped_kernel_device_refusal(DataType input, core::ComputeCapability cc) {
    if (input == DataType::f32 || cc.major >= 8) return {};
    return fmt::format(
        "{} inputs on a device of compute capability {}.{}; gpumath's grouped kernel runs f16 and "
        "bf16 from compute capability 8.0 (cp.async, bf16 MMA) and f32 on any",
        to_string(input), cc.major, cc.minor);
}

GroupedWgmmaLayout grouped_kernel_layout(const GroupedKernelVariant& v, const GroupedKernelParams& p, int device) {
    const core::ComputeCapability cc = grouped_device_traits(device).cc;
    return cc.major == 9 && cc.minor == 0 ? grouped_wgmma_layout(v, p) : GroupedWgmmaLayout::none;
}

namespace {

/// A kernel and its launch shape for one call.
struct Chosen {
    const core::Kernel* kernel = nullptr;
    core::LaunchConfig config;
    GroupedWgmmaLayout layout = GroupedWgmmaLayout::none;  // none: the portable kernel
    int block_n = 0;
    [[nodiscard]] int cluster() const noexcept { return config.cluster ? int(config.cluster->x) : 1; }
};

/// How many clusters of `config` (one block each without clusters) the Hopper kernel `k` can run at
/// once on `device`: the multiprocessors without clusters, cuOccupancyMaxActiveClusters with them
/// (an SM left over in a GPC takes no pair). Looked up once per thread and kernel.
int hopper_resident_clusters(const core::Kernel& k, const core::LaunchConfig& config, int device) {
    if (!config.cluster) return grouped_device_traits(device).multiprocessors;
    thread_local const core::Kernel* known = nullptr;
    thread_local int clusters = 0;
    if (known != &k) {
        core::LaunchConfig one = config;
        one.grid = {config.cluster->x};
        clusters = std::max(1, k.max_active_clusters(one));
        known = &k;
    }
    return clusters;
}

/// The Hopper kernel for `p` on `device`, or no kernel where grouped_kernel_layout says none or it
/// is unavailable there.
Chosen hopper_choice(const GroupedKernelVariant& v, const GroupedKernelParams& p, int device) {
    const GroupedWgmmaLayout layout = grouped_kernel_layout(v, p, device);
    if (layout == GroupedWgmmaLayout::none) return {};
    const int multiprocessors = grouped_device_traits(device).multiprocessors;
    const int block_n = grouped_wgmma_columns(p, multiprocessors);
    const int cluster = grouped_wgmma_cluster(p, block_n);
    const core::Kernel* k = hopper_kernel(device, v, Program{.layout = layout, .block_n = block_n, .cluster = cluster});
    if (k == nullptr) return {};
    // A block (cluster) per tile (pair of tiles) where the bound's tiles make few waves (one block per
    // SM at a time: the kernel's shared memory allows one), so that the hardware hands the last
    // wave's tiles to the SMs that finish first; persistent blocks, as many as can run at once, from
    // grouped_wgmma_persistent_waves waves on, where hiding each tile's first loads and its stores
    // behind the next tile gains more.
    const std::int64_t tiles = grouped_row_tiles(p.max_rows, p.groups, 128) * ((p.n + block_n - 1) / block_n);
    core::LaunchConfig config{.grid = {tiles}, .block = {384}, .shared_memory = grouped_wgmma_shared_bytes(block_n)};
    if (cluster > 1) config.cluster = core::Dim3{cluster};
    if (tiles >= grouped_wgmma_persistent_waves * std::int64_t(multiprocessors))
        config.grid = {std::min(tiles, std::int64_t(hopper_resident_clusters(*k, config, device)) * cluster)};
    return {.kernel = k, .config = config, .layout = layout, .block_n = block_n};
}

/// The portable kernel for `p` on `device`.
Chosen portable_choice(const GroupedKernelVariant& v, const GroupedKernelParams& p, int device) {
    const bool tc = uses_tensor_cores(v);
    const std::int64_t tile_m = tc ? grouped_tc_tile_m : grouped_tile, tile_n = tc ? grouped_tc_tile_n : grouped_tile;
    const std::int64_t row_tiles = grouped_row_tiles(p.max_rows, p.groups, tile_m);
    const std::int64_t col_tiles = (p.n + tile_n - 1) / tile_n;
    Chosen c{.kernel = &grouped_kernel(device, v, Program{}),
             .config = {},
             .layout = GroupedWgmmaLayout::none,
             .block_n = 0};
    if (tc) c.config = {.grid = {row_tiles, col_tiles}, .block = {256}};
    else c.config = {.grid = {row_tiles, col_tiles}, .block = {16, 16}};
    return c;
}

// NotSupported naming `api` where `device` cannot run the kernel of `v`.
void refuse_older_devices(const GroupedKernelVariant& v, int device, const char* api) {
    if (std::string why = grouped_kernel_device_refusal(v.input, grouped_device_traits(device).cc); !why.empty())
        throw_not_supported(
            fmt::format("a: {} (device {}); pass the group sizes on the host and use loop, streams or automatic", why,
                        device),
            api);
}

}  // namespace

void run_grouped_kernel(const GroupedKernelVariant& v, const GroupedKernelParams& p, core::StreamRef stream,
                        const char* api, const GroupedInlineSizes* sizes) {
    if (v.inline_sizes && sizes == nullptr)
        throw_invalid("sizes: a variant with inline sizes launched without them", "run_grouped_kernel");
    if (p.max_rows == 0 || p.n == 0) return;  // no row or no column: no tile
    const int device = detail::current_device();
    refuse_older_devices(v, device, api);
    if (const Chosen c = hopper_choice(v, p, device); c.kernel != nullptr) {
        if (const HopperMaps* maps = hopper_maps(v, p, c.layout, c.block_n, c.cluster())) {
            if (v.inline_sizes) core::launch(stream, c.config, *c.kernel, p, maps->a, maps->a_full, maps->b, *sizes);
            else core::launch(stream, c.config, *c.kernel, p, maps->a, maps->a_full, maps->b);
            hopper_launches.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    const Chosen c = portable_choice(v, p, device);
    if (v.inline_sizes) core::launch(stream, c.config, *c.kernel, p, *sizes);
    else core::launch(stream, c.config, *c.kernel, p);
}

void load_grouped_kernel(const GroupedKernelVariant& v, const GroupedKernelParams& p, const char* api) {
    const int device = detail::current_device();
    if (p.max_rows != 0 && p.n != 0) refuse_older_devices(v, device, api);
    if (hopper_choice(v, p, device).kernel == nullptr) (void)portable_choice(v, p, device);
}

}  // namespace gpumath::detail
