// SPDX-License-Identifier: Apache-2.0
// The quantization kernels of each device (compiled once per process and (device, element type,
// FP8 type)) and their launches.
#include "matmul/quantize_kernels.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <cuda_runtime_api.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/program.hpp>
#include "detail/status.hpp"
#include "matmul/quantize_source.hpp"
#include "matmul/shapes.hpp"
#include "detail/capture_mode.hpp"

namespace gpumath::detail {
namespace {

/// One program's kernels on one device; [0] loads element by element, [1] 16 bytes at a time.
struct QuantizeKernels {
    core::Kernel amax[2];
    core::Kernel tensor[2];
    core::Kernel rows[2];
    core::Kernel blocks[2];
    core::Kernel tiles[2];
    core::Kernel finalize;
    core::Kernel dequantize;
    std::int64_t multiprocessors = 1;
};

const QuantizeKernels& quantize_kernels(int device, DataType element, DataType fp8) {
    using Key = std::tuple<int, DataType, DataType>;
    static std::mutex mutex;
    // Never destroyed, like every per-device state: no static destructor may run after the CUDA
    // runtime has shut down.
    static auto* cache = new std::map<Key, std::unique_ptr<const QuantizeKernels>>();
    const Key key{device, element, fp8};
    {
        std::lock_guard lock(mutex);
        if (auto it = cache->find(key); it != cache->end()) return *it->second;
    }
    // Compiled outside the lock; two threads that miss at once both compile (the compile cache
    // serves the second) and the first one stored wins.
    const core::Device dev(device);
    const RelaxedCaptureMode relaxed("loading the FP8 quantize kernels");  // the first call may be in a capture
    const core::Module module(compile_quantize_kernels(element, fp8, dev.arch()));
    auto k = std::make_unique<QuantizeKernels>();
    namespace n = quantize_kernel;
    k->amax[0] = module.kernel(n::amax_s, device);
    k->amax[1] = module.kernel(n::amax_v, device);
    k->tensor[0] = module.kernel(n::tensor_s, device);
    k->tensor[1] = module.kernel(n::tensor_v, device);
    k->rows[0] = module.kernel(n::rows_s, device);
    k->rows[1] = module.kernel(n::rows_v, device);
    k->blocks[0] = module.kernel(n::blocks_s, device);
    k->blocks[1] = module.kernel(n::blocks_v, device);
    k->tiles[0] = module.kernel(n::tiles_s, device);
    k->tiles[1] = module.kernel(n::tiles_v, device);
    k->finalize = module.kernel(n::finalize, device);
    k->dequantize = module.kernel(n::dequantize, device);
    k->multiprocessors = dev.multiprocessor_count();
    std::lock_guard lock(mutex);
    return *cache->emplace(key, std::move(k)).first->second;
}

QuantizeParams params_of(const QuantizeCall& c) {
    const QuantizeGeometry& g = c.geometry;
    QuantizeParams p;
    p.x = c.in;
    p.data = c.out;
    p.scales = c.scales;
    p.amax = c.amax;
    p.rows = g.rows;
    p.cols = g.cols;
    p.blocks = g.blocks;
    p.blocks4 = g.blocks4;
    p.row_blocks = g.row_blocks;
    p.batches = g.batches;
    p.row_stride = g.row_stride;
    p.batch_stride = g.batch_stride;
    return p;
}

// The 16-byte kernels apply when every vector of 16 / element-size elements they load is 16-byte
// aligned and every group of that many FP8 bytes they store is aligned to its size.
bool vector_loads(const QuantizeCall& c) {
    const QuantizeGeometry& g = c.geometry;
    const auto es = std::int64_t(size_of(c.element));
    const std::int64_t per_vector = 16 / es;
    const auto in = reinterpret_cast<std::uintptr_t>(c.in);
    const auto out = reinterpret_cast<std::uintptr_t>(c.out);
    return in % 16 == 0 && out % std::uintptr_t(per_vector) == 0 && g.cols % per_vector == 0 &&
           (g.rows <= 1 || (g.row_stride * es) % 16 == 0) && (g.batches <= 1 || (g.batch_stride * es) % 16 == 0);
}

void zero_float(float* p, core::StreamRef stream, const char* what) {
    check(cudaMemsetAsync(p, 0, sizeof(float), stream.handle()), "cudaMemsetAsync", what);
}

}  // namespace

void run_quantize(const QuantizeCall& c, core::StreamRef stream) {
    const QuantizeKernels& k = quantize_kernels(detail::current_device(), c.element, c.fp8);
    const QuantizeGeometry& g = c.geometry;
    const int v = vector_loads(c) ? 1 : 0;
    QuantizeParams p = params_of(c);
    constexpr std::int64_t items_per_block = quantize_items_per_block;
    const std::int64_t items = g.batches * g.rows * g.blocks;
    if (c.mode == ScaleMode::tensor) {
        zero_float(c.scales, stream, "zeroing the running max |x| of a tensor-mode quantize_fp8");
        p.items = items;
        if (items > 0) {
            const core::LaunchConfig config{.grid = ceil_div(items, items_per_block), .block = quantize_block_threads};
            core::launch(stream, config, k.amax[v], p);
            core::launch(stream, config, k.tensor[v], p);
        }
        core::launch(stream, {.grid = 1, .block = 1}, k.finalize, p);
        return;
    }
    if (c.amax != nullptr) zero_float(c.amax, stream, "zeroing the amax of quantize_fp8");
    switch (c.mode) {
        case ScaleMode::outer_vector: {
            const std::int64_t rows = g.batches * g.rows;
            if (rows == 0) return;
            // Enough groups that one sweep covers a row of up to (threads / group) * quantize_unroll
            // blocks of 128, which then stays in registers; whole warps (the block's max needs them).
            constexpr std::int64_t warp_groups = 32 / quantize_group;
            const std::int64_t groups =
                std::clamp<std::int64_t>(ceil_div(ceil_div(g.blocks, quantize_unroll), warp_groups) * warp_groups,
                                         warp_groups, quantize_block_threads / quantize_group);
            core::launch(stream, {.grid = rows, .block = groups * quantize_group}, k.rows[v], p);
            return;
        }
        case ScaleMode::block_1x128:
            p.items = items;
            if (items > 0)
                core::launch(stream, {.grid = ceil_div(items, items_per_block), .block = quantize_block_threads},
                             k.blocks[v], p);
            return;
        case ScaleMode::block_128x128: {
            const std::int64_t tiles = g.batches * g.row_blocks * g.blocks;
            if (tiles > 0) core::launch(stream, {.grid = tiles, .block = quantize_block_threads}, k.tiles[v], p);
            return;
        }
        case ScaleMode::tensor:
            return;
    }
}

void run_dequantize(const QuantizeCall& c, core::StreamRef stream) {
    const QuantizeKernels& k = quantize_kernels(detail::current_device(), c.element, c.fp8);
    const QuantizeGeometry& g = c.geometry;
    QuantizeParams p = params_of(c);
    p.items = g.batches * g.rows * g.cols;
    if (p.items == 0) return;
    const std::int64_t grid = std::min(ceil_div(p.items, quantize_block_threads), k.multiprocessors * 32);
    core::launch(stream, {.grid = grid, .block = quantize_block_threads}, k.dequantize, p, static_cast<int>(c.mode));
}

}  // namespace gpumath::detail
