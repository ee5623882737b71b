// SPDX-License-Identifier: Apache-2.0
// The grouped kernels' host side: which kernel a call runs (the Hopper kernel where its operands
// allow it, the portable one otherwise), the Hopper kernel's tensor maps, and the launch. The
// kernels are kernels/grouped_gemm.cu; their programs (grouped_kernel_source.cpp) are compiled and
// loaded by the core kernel loader.
#include "matmul/grouped_kernel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <cuda.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/error.hpp>
#include "core/driver_api.hpp"
#include "core/jit.hpp"
#include "core/kernel_loader.hpp"
#include "detail/capture_mode.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"
#include "matmul/call.hpp"
#include "matmul/grouped_kernel_source.hpp"

namespace gpumath::detail {
namespace {

// The launch copies each map into the kernel's parameter at the offset the driver reports.
static_assert(sizeof(kernels::GroupedTensorMap) == sizeof(CUtensorMap) &&
                  alignof(CUtensorMap) % alignof(kernels::GroupedTensorMap) == 0,
              "the Hopper kernel takes the driver's tensor maps by value");

std::atomic<std::uint64_t> hopper_launches{0};

/// The Hopper kernel of `program` (`block_n` columns per block) on `device`, its shared memory
/// allowed, or nothing (and the portable kernel from then on for that device, with a warning) when
/// it cannot be compiled or loaded there: an NVRTC without sm_90a, a driver refusing the shared
/// memory (out of memory while loading: nothing for this call only). The kernel this thread last
/// found (a model's layers call the same few) is served without a lock, even after another program
/// was refused on that device.
std::optional<core::Kernel> hopper_kernel(int device, const DeviceProgram& program, int block_n) {
    struct Last {
        int device = -1;
        const DeviceProgram* program = nullptr;
        core::Kernel kernel;
    };
    thread_local Last last;
    if (last.program == &program && last.device == device) return last.kernel;
    static std::mutex mutex;
    static auto* refused = new std::set<int>();  // never destroyed, like every per-device state
    {
        std::lock_guard lock(mutex);
        if (refused->count(device) != 0) return std::nullopt;
    }
    try {
        // The first use may come while the caller's stream captures: nothing of it is recorded.
        const RelaxedCaptureMode relaxed("loading gpumath's grouped kernel");
        core::Kernel k = device_kernel(device, program, grouped_wgmma_kernel_name);
        k.set_max_dynamic_shared_memory(grouped_wgmma_shared_bytes(block_n));
        last = {.device = device, .program = &program, .kernel = k};
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
        return std::nullopt;
    }
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

int grouped_wgmma_columns(const GroupedKernelParams& p, int multiprocessors) noexcept {
    // 256 columns per block read A half as often but make half the blocks: only where the bound's
    // rows alone make at least two waves of them.
    const std::int64_t wide = ((p.max_rows + 127) / 128) * ((p.n + 255) / 256);
    return wide >= 2 * std::int64_t(multiprocessors) ? 256 : 128;
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
    core::Kernel kernel;  // empty: none
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
    // One handle serves every device: the device is part of what the count is for.
    thread_local CUkernel known = nullptr;
    thread_local int known_device = -1;
    thread_local int clusters = 0;
    if (known != k.handle() || known_device != device) {
        core::LaunchConfig one = config;
        one.grid = {config.cluster->x};
        clusters = std::max(1, k.max_active_clusters(one));
        known = k.handle();
        known_device = device;
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
    std::optional<core::Kernel> k = hopper_kernel(device, grouped_wgmma_program(v, layout, block_n, cluster), block_n);
    if (!k) return {};
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
    return {.kernel = std::move(*k), .config = config, .layout = layout, .block_n = block_n};
}

/// The portable kernel for `p` on `device`.
Chosen portable_choice(const GroupedKernelVariant& v, const GroupedKernelParams& p, int device) {
    const bool tc = uses_tensor_cores(v);
    const std::int64_t tile_m = tc ? grouped_tc_tile_m : grouped_tile, tile_n = tc ? grouped_tc_tile_n : grouped_tile;
    const std::int64_t row_tiles = grouped_row_tiles(p.max_rows, p.groups, tile_m);
    const std::int64_t col_tiles = (p.n + tile_n - 1) / tile_n;
    Chosen c{.kernel = device_kernel(device, grouped_kernel_program(v), grouped_kernel_name),
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
    if (const Chosen c = hopper_choice(v, p, device); c.kernel) {
        if (const HopperMaps* maps = hopper_maps(v, p, c.layout, c.block_n, c.cluster())) {
            if (v.inline_sizes) core::launch(stream, c.config, c.kernel, p, maps->a, maps->a_full, maps->b, *sizes);
            else core::launch(stream, c.config, c.kernel, p, maps->a, maps->a_full, maps->b);
            hopper_launches.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    const Chosen c = portable_choice(v, p, device);
    if (v.inline_sizes) core::launch(stream, c.config, c.kernel, p, *sizes);
    else core::launch(stream, c.config, c.kernel, p);
}

void load_grouped_kernel(const GroupedKernelVariant& v, const GroupedKernelParams& p, const char* api) {
    const int device = detail::current_device();
    if (p.max_rows != 0 && p.n != 0) refuse_older_devices(v, device, api);
    if (!hopper_choice(v, p, device).kernel) (void)portable_choice(v, p, device);
}

}  // namespace gpumath::detail
