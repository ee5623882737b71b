// SPDX-License-Identifier: Apache-2.0
// The Hopper instructions of the warpgroup-MMA grouped kernel (grouped_gemm_wgmma.cuh, which
// includes this with its macros GM_WG_BN, GM_WG_TYPE, GM_WG_B_ROWS and GM_WG_CLUSTER): mbarriers,
// tensor-memory-accelerator loads, cluster addressing and the warpgroup MMA, each one inline PTX
// statement. Compiled for sm_90a.
#pragma once

#define GM_STR2(x) #x
#define GM_STR(x) GM_STR2(x)

// A shared-memory matrix descriptor with 128-byte swizzle: start address, leading and stride byte
// offsets.
static __device__ __forceinline__ unsigned long long gm_desc(unsigned addr, unsigned leading, unsigned stride) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(leading >> 4) << 16) |
           ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}

// A CUtensorMap, passed by value as a __grid_constant__ parameter (its address is what TMA takes).
typedef gpumath::kernels::GroupedTensorMap gm_tmap;

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
static __device__ __forceinline__ void gm_tma3(unsigned smem, const gm_tmap& map, int x, int y, int z, unsigned bar) {
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
static __device__ __forceinline__ void gm_tma2_multicast(unsigned smem, const gm_tmap& map, int x, int y, unsigned bar,
                                                         unsigned short mask) {
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

// The operands of one warpgroup MMA of width GM_WG_BN: its GM_WG_BN / 2 accumulator registers
// (%0 onwards), then the descriptors of A and B, then the register that sets scale-d.
#define GM_WG_D_LO                                                                     \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GM_WG_D_HI                                                                                 \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "             \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define GM_WG_F8(i)                                                                                             \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define GM_WG_F64(i)                                                                                      \
    GM_WG_F8(i), GM_WG_F8(i + 8), GM_WG_F8(i + 16), GM_WG_F8(i + 24), GM_WG_F8(i + 32), GM_WG_F8(i + 40), \
        GM_WG_F8(i + 48), GM_WG_F8(i + 56)
#if GM_WG_BN == 128
#define GM_WG_D "{" GM_WG_D_LO "}"
#define GM_WG_AB "%64, %65"
#define GM_WG_SCALE_D "%66"
#define GM_WG_D_OUT GM_WG_F64(0)
#elif GM_WG_BN == 256
#define GM_WG_D "{" GM_WG_D_LO ", " GM_WG_D_HI "}"
#define GM_WG_AB "%128, %129"
#define GM_WG_SCALE_D "%130"
#define GM_WG_D_OUT GM_WG_F64(0), GM_WG_F64(64)
#else
#error "GM_WG_BN: 128 or 256 columns per block"
#endif

// The instruction: an m64 n GM_WG_BN k16 product of GM_WG_TYPE (f16 or bf16) inputs, f32 accumulation.
#define GM_WG_MMA \
    "wgmma.mma_async.sync.aligned.m64n" GM_STR(GM_WG_BN) "k16.f32." GM_STR(GM_WG_TYPE) "." GM_STR(GM_WG_TYPE)

// d (GM_WG_BN / 2 f32 per thread) += A (descriptor da, K-major) * B (descriptor db), B transposed
// (contiguous along N) with GM_WG_B_ROWS.
static __device__ __forceinline__ void gm_wgmma(float (&d)[GM_WG_BN / 2], unsigned long long da,
                                                unsigned long long db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " GM_WG_SCALE_D ", 0;\n" GM_WG_MMA " " GM_WG_D ", " GM_WG_AB
                 ", p, 1, 1, 0, " GM_STR(GM_WG_B_ROWS) ";\n}\n"
                 : GM_WG_D_OUT
                 : "l"(da), "l"(db), "r"(1));
}
