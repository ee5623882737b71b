// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: gpumath's grouped kernels (kernels/grouped_gemm.cu, compiled at run time),
// for grouped products whose group sizes live in device memory or, for the `kernel` backend, in the
// launch's parameters: what a call runs with and its launch. Their programs, one per variant, are
// in grouped_kernel_source.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <gpumath/core/device.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/matmul/options.hpp>
#include <gpumath/types.hpp>

#include "matmul/kernels/grouped_gemm_params.hpp"

namespace gpumath::detail {

/// What a grouped-kernel program is specialized for.
struct GroupedKernelVariant {
    DataType input = DataType::bf16;   // of A and B
    DataType result = DataType::bf16;  // of D (and the bias)
    Epilog epilog = Epilog::none;      // none, relu, gelu, silu or their _bias forms
    /// The group sizes come in a GroupedInlineSizes parameter (host sizes) rather than through
    /// GroupedKernelParams::sizes (device memory).
    bool inline_sizes = false;
};

/// Groups whose sizes a launch can carry in its parameters (the `kernel` backend's limit).
inline constexpr std::int64_t grouped_inline_groups = kernels::grouped_inline_groups;

/// Groups a device-sizes call may have: every tile finds its group by reading the sizes before it
/// (G / 32 steps of a warp), so the kernel's work grows as G times its tiles; past this a hostile
/// G (a million 8 x 8 products) would keep the GPU busy for minutes.
inline constexpr std::int64_t grouped_device_groups = 16384;

/// The kernels' last argument in a variant with inline_sizes, and their first (strides in
/// elements, `sizes` in device memory): kernels/grouped_gemm_params.hpp, shared with NVRTC.
using kernels::GroupedInlineSizes;
using kernels::GroupedKernelParams;
static_assert(std::is_standard_layout_v<GroupedKernelParams> && std::is_trivially_copyable_v<GroupedKernelParams> &&
                  std::is_trivially_copyable_v<GroupedInlineSizes>,
              "the grouped kernels' arguments are copied into the launch byte for byte");
static_assert(sizeof(long long) == sizeof(std::int64_t) && sizeof(int) == sizeof(std::int32_t),
              "the host fills the kernels' long long and int fields with int64 and int32 values");

/// Rows and columns of D one block computes (a 16 x 16 thread block, 4 x 4 outputs per thread).
inline constexpr std::int64_t grouped_tile = 64;
/// K per shared-memory stage.
inline constexpr std::int64_t grouped_tile_k = 16;
/// The kernel's extern "C" name.
inline constexpr const char* grouped_kernel_name = "gm_grouped_gemm";

/// The tiles (rows, columns, K step) of the tensor-core kernel, for f16 and bf16 inputs (blocks of
/// 256 threads).
inline constexpr std::int64_t grouped_tc_tile_m = 128;
inline constexpr std::int64_t grouped_tc_tile_n = 128;
inline constexpr std::int64_t grouped_tc_tile_k = 32;

/// True when the variant runs the tensor-core kernel (f16 and bf16 inputs).
[[nodiscard]] constexpr bool uses_tensor_cores(const GroupedKernelVariant& v) noexcept {
    return v.input == DataType::f16 || v.input == DataType::bf16;
}

/// Which weight layout the Hopper kernel (warpgroup MMA, compute capability 9.0) runs a call with:
/// none when it cannot (f32 inputs; A not contiguous along K; weights contiguous along neither N nor
/// K; K, A's row stride, the weights' group stride or their stride along their other dimension, or
/// A's or the weights' address not a multiple of 16 bytes; N not a multiple of 8 for weights
/// contiguous along N; extents past the tensor memory accelerator's 32-bit coordinates or strides
/// past its 2^40 bytes); the portable kernel runs those. D may have any strides.
enum class GroupedWgmmaLayout { none, b_rows, b_cols };
[[nodiscard]] GroupedWgmmaLayout grouped_wgmma_layout(const GroupedKernelVariant& v,
                                                      const GroupedKernelParams& p) noexcept;

/// Columns of D per block of the Hopper kernel (blocks compute 128 rows; one warpgroup MMA of that
/// width per warpgroup and 16 of K): 128 or 256.
/// The stages of K (64 wide; 16 KiB of A plus 128 bytes per column of B each) its blocks pipeline,
/// and their dynamic shared memory (the stages, 1 KiB for their alignment and 128 bytes for their
/// mbarriers).
[[nodiscard]] constexpr int grouped_wgmma_stages(int block_n) noexcept { return block_n > 128 ? 4 : 6; }
[[nodiscard]] constexpr std::size_t grouped_wgmma_shared_bytes(int block_n) noexcept {
    return std::size_t(grouped_wgmma_stages(block_n)) * (16384 + std::size_t(block_n) * 128) + 1024 + 128;
}

/// Row tiles per band of the Hopper kernel's block order: consecutive blocks take a band's row
/// tiles of one column tile, then of the next, so that a wave of blocks shares A's rows through L2.
inline constexpr int grouped_wgmma_band = 8;

/// Waves of tiles (by the host-side bound) from which the Hopper kernel runs one persistent block
/// per SM instead of a block per tile. Measured on the H200 (docs/benchmarks.md): persistent blocks
/// gained 3-6 % at 5 and 30 waves and lost 11 % at 1.5 waves, where a block per tile lets the
/// hardware balance the last wave.
inline constexpr std::int64_t grouped_wgmma_persistent_waves = 3;

/// The columns per block a call runs with on a device of `multiprocessors` SMs: 256 where the
/// bound's rows give at least two waves of such blocks (one block per SM at a time), 128 otherwise.
[[nodiscard]] int grouped_wgmma_columns(const GroupedKernelParams& p, int multiprocessors) noexcept;

/// The Hopper kernel's extern "C" name.
inline constexpr const char* grouped_wgmma_kernel_name = "gm_grouped_wgmma";

/// The blocks per thread-block cluster a call of the Hopper kernel runs with at `block_n` columns
/// per block: 2 (a cluster takes two adjacent column tiles of one row tile and loads A once for
/// both, multicast) where the column tiles pair up (an even number of them), 1 otherwise.
[[nodiscard]] constexpr int grouped_wgmma_cluster(const GroupedKernelParams& p, int block_n) noexcept {
    return ((p.n + block_n - 1) / block_n) % 2 == 0 ? 2 : 1;
}

/// Blocks along the rows of the launch: enough for any sizes summing to at most `max_rows` over
/// `groups` groups in tiles of `tile` rows (a group's last tile may be partial), so tiles past the
/// groups' rows exit at once.
[[nodiscard]] constexpr std::int64_t grouped_row_tiles(std::int64_t max_rows, std::int64_t groups,
                                                       std::int64_t tile = grouped_tile) noexcept {
    return (max_rows + tile - 1) / tile + groups;
}

/// How many calls have launched the Hopper kernel in this process (tests check that eligible calls
/// on compute capability 9.0 run it rather than the portable kernel's fallback).
[[nodiscard]] std::uint64_t grouped_hopper_launches() noexcept;

/// What the grouped kernels' choice needs of a device, looked up once per thread and device (the
/// calls of `automatic` and of the kernel paths ask on every call).
struct GroupedDeviceTraits {
    core::ComputeCapability cc;
    int multiprocessors = 0;
};
[[nodiscard]] const GroupedDeviceTraits& grouped_device_traits(int device);

/// The weight layout the Hopper kernel runs `p` with on `device` (grouped_wgmma_layout on compute
/// capability 9.0, none elsewhere): none means the portable kernel.
[[nodiscard]] GroupedWgmmaLayout grouped_kernel_layout(const GroupedKernelVariant& v, const GroupedKernelParams& p,
                                                       int device);

/// Why the grouped kernel cannot run `input` on a device of compute capability `cc` (empty when it
/// can): its f16 and bf16 kernels use cp.async and bf16 MMA fragments, from compute capability 8.0.
[[nodiscard]] std::string grouped_kernel_device_refusal(DataType input, core::ComputeCapability cc);

/// Enqueues the kernel of `v` on `stream` (current device; compiled and loaded on first use, then
/// kept): the Hopper kernel where grouped_kernel_layout allows it (its tensor maps encoded on the
/// host, once per thread for a run of calls on the same operands), the portable one otherwise or
/// where the driver cannot encode the maps. `sizes` is read when `v.inline_sizes` (and must then
/// be given). Allocates nothing and reads device sizes on the device only, so it may be captured.
/// A call with rows and columns on a device grouped_kernel_device_refusal names is NotSupported
/// naming `api`, before anything is compiled.
void run_grouped_kernel(const GroupedKernelVariant& v, const GroupedKernelParams& p, core::StreamRef stream,
                        const char* api, const GroupedInlineSizes* sizes = nullptr);

/// Compiles and loads on the current device the kernel run_grouped_kernel would launch for `v` and
/// `p` (no launch; the pointers in `p` only choose the kernel); refuses devices as it does.
void load_grouped_kernel(const GroupedKernelVariant& v, const GroupedKernelParams& p, const char* api);

}  // namespace gpumath::detail
