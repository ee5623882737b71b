// SPDX-License-Identifier: Apache-2.0
// The Hopper grouped kernel for f16 and bf16 inputs (included by grouped_gemm.cu after its common
// part; compiled for sm_90a), with GM_WG_TYPE (f16 or bf16), GM_WG_B_ROWS, GM_WG_BN, GM_WG_STAGES,
// GM_WG_BAND, GM_WG_MN_LBO, GM_WG_MN_SBO and GM_WG_CLUSTER, for A contiguous along K and weights
// contiguous along N (GM_WG_B_ROWS 1) or along K (0), 16-byte aligned (grouped_wgmma_layout).
// Blocks of 384 threads compute 128 x GM_WG_BN tiles of D: two consumer warpgroups, 64 rows each,
// run warpgroup MMAs (wgmma.mma_async, f32 accumulation, one m64 n GM_WG_BN k16 product per 16 of
// K) from shared memory; one thread of the third, producer warpgroup fills K in steps of 64 through
// GM_WG_STAGES 128-byte-swizzled stages with the tensor memory accelerator (cp.async.bulk.tensor:
// the swizzle applied by the copy, zeros outside the tensors). Stages are handed over through
// mbarriers, `full` (the stage's bytes have landed) and `empty` (every consumer thread's MMAs reading
// it have completed); the producer runs up to GM_WG_STAGES steps ahead and the K loop has no
// block-wide barrier. A block may take several tiles, one after another (persistent blocks, one per
// SM, for launches of many waves): its producer then fills the next tile's stages while the
// consumers store D of the last. The consumers' loop has no branch between an MMA and the wait that
// retires it (ptxas would serialize the MMAs otherwise), hence the dedicated producer and setmaxnreg
// to give the consumers its registers. With GM_WG_CLUSTER 2, clusters of two blocks take pairs of
// adjacent column tiles of one row tile: each block's producer loads half of the pair's A and
// multicasts it to both (cp.async.bulk.tensor .multicast::cluster), which halves A's reads from L2;
// a stage is refilled only once both blocks' consumers released it (their warps arrive on both
// blocks' `empty` barriers), and a producer waits for every stage to be released before it exits,
// so that no arrival reaches a block that has gone.
#pragma once

#define GM_WG_B_BYTES (GM_WG_BN * 128)
#define GM_WG_STAGE_BYTES (16384 + GM_WG_B_BYTES)
static_assert(GM_WG_STAGES >= 2, "a stage is refilled one step after its MMAs were issued");
static_assert(GM_WG_CLUSTER == 1 || GM_WG_CLUSTER == 2, "clusters of one or two blocks");

#include "grouped_gemm_sm90.cuh"

// Keeps the compiler from moving accesses to the accumulators across the wgmma fences and waits
// (the asm statements of those do not name them).
#define GM_WG_PIN(acc) \
    _Pragma("unroll") for (int gm_i = 0; gm_i < GM_WG_BN / 2; ++gm_i) asm volatile("" : "+f"(acc[gm_i])::"memory")

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

// What every thread of a block knows of its work. Units are the band order's tiles, or with
// clusters pairs of column tiles (the host launches clusters only where the column tiles pair up);
// cluster c takes units c, c + clusters, ... Producer and consumers walk the same units and count
// the same K steps across them: step i of the block uses stage i % GM_WG_STAGES in barrier phase
// (i / GM_WG_STAGES) % 2.
struct gm_wg_block {
    long long row_tiles, col_units, units;
    long long cluster, clusters;  // this block's cluster and the launch's
    unsigned rank;                // the block's rank in its cluster
    unsigned base;                // the stages' shared-space address (a 1024-byte boundary)
    unsigned bars;  // the barriers after the stages: full[st] at bars + 8 st, empty[st] at bars + 8 (GM_WG_STAGES + st)
    int steps;      // K steps of 64 per tile
};

// The stage after `st`; true when that wraps around to the first (and the barrier phase flips).
static __device__ __forceinline__ bool gm_wg_next(int& st, unsigned& phase) {
    if (++st == GM_WG_STAGES) {
        st = 0;
        phase ^= 1u;
        return true;
    }
    return false;
}

// Thread 0 initializes the stages' barriers; no thread (with clusters, of either block) arrives on
// one or copies into a stage before that.
static __device__ __forceinline__ void gm_wg_init_barriers(unsigned bars) {
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
}

// Where the producer's loads of one unit read: A's first row (a_y), the weights' group (b_z) and
// first column (n0), and A's boxes: a tile of 128 rows in one load (a_full), a partial one in
// a_boxes boxes of 16 rows, only as many as it has rows: the rows past them keep stale values,
// which reach only rows of D that are not stored.
struct gm_wg_source {
    int a_y, b_z, n0;
    bool a_full;
    int a_boxes;
};

static __device__ __forceinline__ gm_wg_source gm_wg_source_of(const gm_grouped& p, const int* sizes,
                                                               const gm_wg_block& blk, long long v) {
    long long row_tile, col_unit;
    gm_band_tile(v, blk.row_tiles, blk.col_units, row_tile, col_unit);
    const long long col_tile = col_unit * GM_WG_CLUSTER + blk.rank;
    gm_tile where;
    (void)gm_find_tile(p, sizes, row_tile, 128, where);  // row_tile < row_tiles: found
    gm_wg_source s;
    s.a_y = int(where.row0 + where.r0);
    s.b_z = p.b_group == 0 ? 0 : int(where.g);
    s.n0 = int(col_tile * GM_WG_BN);
    s.a_full = where.rows == 128;
    s.a_boxes = s.a_full ? 8 : int((where.rows + 15) / 16);
    return s;
}

// One K step's loads (from K = k0) into stage st, all completing on the stage's `full` barrier.
static __device__ __forceinline__ void gm_wg_load_step(const gm_wg_block& blk, const gm_tmap& ta,
                                                       const gm_tmap& ta_full, const gm_tmap& tb,
                                                       const gm_wg_source& src, int st, int k0) {
    const unsigned sa = blk.base + st * GM_WG_STAGE_BYTES, sb = sa + 16384, full = blk.bars + 8 * st;
    gm_mbar_expect(full, src.a_boxes * 2048 + GM_WG_B_BYTES);
#if GM_WG_CLUSTER > 1
    // Each block loads its share of A's boxes (ta_full's box is 64 rows here) into both.
    const unsigned rank = blk.rank;
    if (src.a_full) gm_tma2_multicast(sa + rank * 8192, ta_full, k0, src.a_y + 64 * int(rank), full, 3);
    else
        for (int j = int(rank); j < src.a_boxes; j += 2)
            gm_tma2_multicast(sa + j * 2048, ta, k0, src.a_y + 16 * j, full, 3);
#else
    if (src.a_full) gm_tma2(sa, ta_full, k0, src.a_y, full);
    else
        for (int j = 0; j < src.a_boxes; ++j) gm_tma2(sa + j * 2048, ta, k0, src.a_y + 16 * j, full);
#endif
#if GM_WG_B_ROWS
#pragma unroll
    for (int j = 0; j < GM_WG_BN / 64; ++j) gm_tma3(sb + j * 8192, tb, src.n0 + 64 * j, k0, src.b_z, full);
#else
    gm_tma3(sb, tb, k0, src.n0, src.b_z, full);
#endif
}

// The producer: one thread issues every step's loads of the block's units, each stage refilled
// once its consumers released it.
static __device__ __forceinline__ void gm_wg_produce(const gm_grouped& p, const int* sizes, const gm_wg_block& blk,
                                                     const gm_tmap& ta, const gm_tmap& ta_full, const gm_tmap& tb) {
    int st = 0;
    unsigned phase = 0;
    bool filled = false;   // every stage has been used once: wait for its release before refilling
    long long issued = 0;  // steps
    for (long long v = blk.cluster; v < blk.units; v += blk.clusters) {
        const gm_wg_source src = gm_wg_source_of(p, sizes, blk, v);
        for (int s = 0; s < blk.steps; ++s) {
            if (filled) gm_mbar_wait(blk.bars + 8 * (GM_WG_STAGES + st), phase ^ 1u);
            gm_wg_load_step(blk, ta, ta_full, tb, src, st, s * 64);
            ++issued;
            if (gm_wg_next(st, phase)) filled = true;
        }
    }
#if GM_WG_CLUSTER > 1
    // Every stage filled released by both blocks' consumers: the other block's last arrivals on
    // this block's barriers have landed, and this block may exit.
    for (int i = 0; i < GM_WG_STAGES; ++i) {
        if (issued + i >= GM_WG_STAGES) gm_mbar_wait(blk.bars + 8 * (GM_WG_STAGES + st), phase ^ 1u);
        (void)gm_wg_next(st, phase);
    }
#else
    (void)issued;
#endif
}

// A consumer thread's release of a stage once the MMAs reading it have completed.
struct gm_wg_release {
#if GM_WG_CLUSTER > 1
    // A warp's release: its first lane arrives on the stage's `empty` in both blocks (the
    // warpgroup's wait_group before it has retired every lane's MMAs reading the stage). The order
    // matters: this block's own arrival goes first. A block that multicasts no A into the other
    // for a step (a tile of at most 16 rows: rank 1 loads nothing) leaves no other edge ordering
    // its release of a stage before the other block's release of the stage's next use.
    unsigned empty_here, empty_there;  // `empty` of stage 0 in this block and the other
    int lane;
    __device__ __forceinline__ void operator()(int stage) const {
        if (lane == 0) {
            gm_mbar_arrive_cluster(empty_here + 8 * stage);
            gm_mbar_arrive_cluster(empty_there + 8 * stage);
        }
    }
#else
    unsigned bars;
    __device__ __forceinline__ void operator()(int stage) const { gm_mbar_arrive(bars + 8 * (GM_WG_STAGES + stage)); }
#endif
};

static __device__ __forceinline__ gm_wg_release gm_wg_release_of(const gm_wg_block& blk, int lane) {
#if GM_WG_CLUSTER > 1
    return {gm_mapa(blk.bars + 8 * GM_WG_STAGES, blk.rank), gm_mapa(blk.bars + 8 * GM_WG_STAGES, blk.rank ^ 1u), lane};
#else
    (void)lane;
    return {blk.bars};
#endif
}

// The MMAs of the step in stage st (barrier parity phase) for warpgroup wg's 64 rows.
static __device__ __forceinline__ void gm_wg_mma(float (&acc)[GM_WG_BN / 2], const gm_wg_block& blk, int st,
                                                 unsigned phase, int wg) {
    gm_mbar_wait(blk.bars + 8 * st, phase);
    const unsigned sa = blk.base + st * GM_WG_STAGE_BYTES, sb = sa + 16384;
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
}

// A unit's K loop from stage st (phase), which it leaves at the next unit's first stage: `acc`
// zeroed, then every step's MMAs, each step's stage released once the next step's MMAs are issued
// (wait_group 1 has completed the step's own).
static __device__ __forceinline__ void gm_wg_mainloop(float (&acc)[GM_WG_BN / 2], const gm_wg_block& blk,
                                                      const gm_wg_release& release, int& st, unsigned& phase, int wg) {
#pragma unroll
    for (int i = 0; i < GM_WG_BN / 2; ++i) acc[i] = 0.0f;
    int pst = st;  // the stage of the step before (its MMAs complete one step later)
    if (blk.steps > 0) {
        gm_wg_mma(acc, blk, st, phase, wg);
        (void)gm_wg_next(st, phase);
    }
    for (int s = 1; s < blk.steps; ++s) {
        gm_wg_mma(acc, blk, st, phase, wg);
        // Step s - 1's MMAs have completed (wait_group 1): its stage may be refilled.
        release(pst);
        pst = st;
        (void)gm_wg_next(st, phase);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    GM_WG_PIN(acc);
    if (blk.steps > 0) release(pst);  // the last step's stage
}

// Where a unit's accumulators go: D from the tile's first row, the group's bias (GM_BIAS), the
// tile's rows and first column. The accumulator of an m64nWk16 product: thread (warp w, lane l) of
// a warpgroup holds rows 16 w + l / 4 and 16 w + l / 4 + 8, columns 8 q + 2 (l % 4) and the next,
// of each 8-column block q.
struct gm_wg_out {
    gm_out* d;
#if GM_BIAS
    const gm_out* bias;
#endif
    long long rows, c0;
};

// D's element (row r, column c) from the accumulator's pair e of 8-column block q.
static __device__ __forceinline__ float gm_wg_value(const gm_grouped& p, const float (&acc)[GM_WG_BN / 2],
                                                    const gm_wg_out& o, int q, int i, int e, long long c) {
    float v = p.alpha * acc[q * 4 + i * 2 + e];
#if GM_BIAS
    v += gm_load(o.bias[c * p.bias_col]);
#endif
    return gm_act(v);
}

// The store for an f16 or bf16 D with 16-byte aligned rows and N % 8 == 0: the four threads of a
// row exchange their pairs (a 4 x 4 transpose through shuffles) so that each stores one 8-column
// block in one 16-byte store: thread x % 4 of the row takes block 4 j + x % 4 of each four. The warp
// skips 8-row halves without rows; within one, every lane shuffles and only the stores test the rows.
static __device__ __forceinline__ void gm_wg_store_wide(const gm_grouped& p, const float (&acc)[GM_WG_BN / 2],
                                                        const gm_wg_out& o, int wg, int warp, int lane) {
    const int x = lane & 3;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        if (wg * 64 + warp * 16 + 8 * i >= o.rows) break;  // the warp's rows from here on: none
        const long long r = wg * 64 + warp * 16 + (lane >> 2) + 8 * i;
#pragma unroll
        for (int j = 0; j < GM_WG_BN / 32; ++j) {
            unsigned u[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int q = 4 * j + e;
                const long long c = o.c0 + q * 8 + x * 2;
                // Columns come in whole blocks of 8 (N % 8 == 0): one test for the pair.
                u[e] =
                    c < p.n ? gm_pack2(gm_wg_value(p, acc, o, q, i, 0, c), gm_wg_value(p, acc, o, q, i, 1, c + 1)) : 0u;
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
            const long long c = o.c0 + (4 * j + x) * 8;
            if (r < o.rows && c < p.n)
                *reinterpret_cast<uint4*>(o.d + r * p.d_row + c) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

// The store for any other D: with `pairs` (an f16 or bf16 D with its rows contiguous and every
// row's first element 4-byte aligned), a thread's two adjacent columns in one store.
static __device__ __forceinline__ void gm_wg_store(const gm_grouped& p, const float (&acc)[GM_WG_BN / 2],
                                                   const gm_wg_out& o, bool pairs, int wg, int warp, int lane) {
#pragma unroll
    for (int q = 0; q < GM_WG_BN / 8; ++q)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const long long r = wg * 64 + warp * 16 + (lane >> 2) + 8 * i;
            if (r >= o.rows) continue;
            const long long c = o.c0 + q * 8 + (lane & 3) * 2;
            gm_out* d = o.d;
            if (pairs && c + 1 < p.n) {
                *reinterpret_cast<unsigned*>(d + r * p.d_row + c) =
                    gm_pack2(gm_wg_value(p, acc, o, q, i, 0, c), gm_wg_value(p, acc, o, q, i, 1, c + 1));
            } else {
                if (c < p.n) gm_store(d[r * p.d_row + c * p.d_col], gm_wg_value(p, acc, o, q, i, 0, c));
                if (c + 1 < p.n) gm_store(d[r * p.d_row + (c + 1) * p.d_col], gm_wg_value(p, acc, o, q, i, 1, c + 1));
            }
        }
}

// The consumer warpgroups: each unit's MMAs, then its D, 64 rows per warpgroup.
static __device__ __forceinline__ void gm_wg_consume(const gm_grouped& p, const int* sizes, const gm_wg_block& blk) {
    const int t = threadIdx.x, wg = t >> 7;
    const int warp = (t & 127) >> 5, lane = t & 31;
    // f16 or bf16 D with its rows contiguous and every row's first element 4-byte aligned: a
    // thread's two adjacent columns go out in one store; with 16-byte aligned rows and N % 8 == 0, a block of 8
    // columns.
    const unsigned long long d_at = reinterpret_cast<unsigned long long>(p.d);
    const bool pairs = sizeof(gm_out) == 2 && p.d_col == 1 && p.d_row % 2 == 0 && d_at % 4 == 0;
    const bool wide = pairs && p.d_row % 8 == 0 && p.n % 8 == 0 && d_at % 16 == 0;
    int st = 0;
    unsigned phase = 0;
    const gm_wg_release release = gm_wg_release_of(blk, lane);
    for (long long v = blk.cluster; v < blk.units; v += blk.clusters) {
        long long row_tile, col_unit;
        gm_band_tile(v, blk.row_tiles, blk.col_units, row_tile, col_unit);
        const long long col_tile = col_unit * GM_WG_CLUSTER + blk.rank;
        gm_tile where;
        (void)gm_warp_find_tile(p, sizes, row_tile, where);  // row_tile < row_tiles: found
        float acc[GM_WG_BN / 2];
        gm_wg_mainloop(acc, blk, release, st, phase, wg);
        gm_wg_out o;
        o.d = static_cast<gm_out*>(p.d) + (where.row0 + where.r0) * p.d_row;
#if GM_BIAS
        o.bias = static_cast<const gm_out*>(p.bias) + where.g * p.bias_group;
#endif
        o.rows = where.rows;
        o.c0 = col_tile * GM_WG_BN;
        if (wide) gm_wg_store_wide(p, acc, o, wg, warp, lane);
        else gm_wg_store(p, acc, o, pairs, wg, warp, lane);
    }
}

// ta: A as (K, rows) in boxes of (64, 16); ta_full: the same in boxes of (64, 128 / GM_WG_CLUSTER),
// a whole tile's or a block's share of it; tb: the weights as (N, K, G) with box (64, 64, 1)
// (GM_WG_B_ROWS) or (K, N, G) with box (64, GM_WG_BN, 1); all 128-byte swizzled (so that a 128-row
// box lands as eight 16-row ones do). Persistent: cluster c computes units c, c + clusters, ... of
// the band order, its producers running into the next unit's first stages while the consumers store
// the last one's D.
extern "C" __global__ void __launch_bounds__(384, 1)
    gm_grouped_wgmma(const gm_grouped p, const __grid_constant__ gm_tmap ta, const __grid_constant__ gm_tmap ta_full,
                     const __grid_constant__ gm_tmap tb GM_SIZES_PARAM) {
    extern __shared__ __align__(1024) unsigned char gm_smem[];
    gm_wg_block blk;
    gm_tile none{};
    blk.row_tiles = gm_warp_find_tile(p, GM_SIZES, -1, none);
    const long long col_tiles = (p.n + GM_WG_BN - 1) / GM_WG_BN;
    blk.col_units = (col_tiles + GM_WG_CLUSTER - 1) / GM_WG_CLUSTER;
    blk.units = blk.row_tiles * blk.col_units;
    blk.cluster = blockIdx.x / GM_WG_CLUSTER;
    blk.clusters = gridDim.x / GM_WG_CLUSTER;
    if (blk.cluster >= blk.units) return;  // both blocks of a cluster alike
#if GM_WG_CLUSTER > 1
    blk.rank = gm_cluster_rank();
#else
    blk.rank = 0;
#endif
    // Stages from the first 1024-byte boundary (the launch asks for 1024 bytes more), then the
    // barriers.
    blk.base = (static_cast<unsigned>(__cvta_generic_to_shared(gm_smem)) + 1023u) & ~1023u;
    blk.bars = blk.base + GM_WG_STAGES * GM_WG_STAGE_BYTES;
    blk.steps = int((p.k + 63) / 64);
    gm_wg_init_barriers(blk.bars);
    if (threadIdx.x >= 256) {
        // The producer warpgroup: one thread issues every step's loads.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x != 256) return;
        gm_wg_produce(p, GM_SIZES, blk, ta, ta_full, tb);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    gm_wg_consume(p, GM_SIZES, blk);
}
