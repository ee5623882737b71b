// SPDX-License-Identifier: Apache-2.0
// The launches of the quantization kernels, whose programs (quantize_source.cpp) the core kernel
// loader compiles and loads once per process and (device, element type, FP8 type).
#include "matmul/quantize_kernels.hpp"

#include <algorithm>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/program.hpp>
#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "matmul/quantize_source.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {
namespace {

/// The kernels of one call's program on the current device, from the core kernel loader (compiled
/// and loaded on first use, then a lookup). `vector` picks the 16-byte variant of a kernel.
class QuantizeKernels {
public:
    QuantizeKernels(DataType element, DataType fp8)
        : device_(current_device()), program_(quantize_program(element, fp8)) {}

    [[nodiscard]] core::Kernel get(const char* scalar, const char* vector, bool vectors) const {
        return device_kernel(device_, program_, vectors ? vector : scalar);
    }
    [[nodiscard]] core::Kernel get(const char* name) const { return device_kernel(device_, program_, name); }
    [[nodiscard]] std::int64_t multiprocessors() const { return core::Device(device_).multiprocessor_count(); }

private:
    int device_;
    const DeviceProgram& program_;
};

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
    const QuantizeKernels k(c.element, c.fp8);
    namespace n = quantize_kernel;
    const QuantizeGeometry& g = c.geometry;
    const bool v = vector_loads(c);
    QuantizeParams p = params_of(c);
    constexpr std::int64_t items_per_block = quantize_items_per_block;
    const std::int64_t items = g.batches * g.rows * g.blocks;
    if (c.mode == ScaleMode::tensor) {
        zero_float(c.scales, stream, "zeroing the running max |x| of a tensor-mode quantize_fp8");
        p.items = items;
        if (items > 0) {
            const core::LaunchConfig config{.grid = ceil_div(items, items_per_block), .block = quantize_block_threads};
            core::launch(stream, config, k.get(n::amax_s, n::amax_v, v), p);
            core::launch(stream, config, k.get(n::tensor_s, n::tensor_v, v), p);
        }
        core::launch(stream, {.grid = 1, .block = 1}, k.get(n::finalize), p);
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
            core::launch(stream, {.grid = rows, .block = groups * quantize_group}, k.get(n::rows_s, n::rows_v, v), p);
            return;
        }
        case ScaleMode::block_1x128:
            p.items = items;
            if (items > 0)
                core::launch(stream, {.grid = ceil_div(items, items_per_block), .block = quantize_block_threads},
                             k.get(n::blocks_s, n::blocks_v, v), p);
            return;
        case ScaleMode::block_128x128: {
            const std::int64_t tiles = g.batches * g.row_blocks * g.blocks;
            if (tiles > 0)
                core::launch(stream, {.grid = tiles, .block = quantize_block_threads}, k.get(n::tiles_s, n::tiles_v, v),
                             p);
            return;
        }
        case ScaleMode::tensor:
            return;
    }
}

void run_dequantize(const QuantizeCall& c, core::StreamRef stream) {
    const QuantizeKernels k(c.element, c.fp8);
    const QuantizeGeometry& g = c.geometry;
    QuantizeParams p = params_of(c);
    p.items = g.batches * g.rows * g.cols;
    if (p.items == 0) return;
    const std::int64_t grid = std::min(ceil_div(p.items, quantize_block_threads), k.multiprocessors() * 32);
    core::launch(stream, {.grid = grid, .block = quantize_block_threads}, k.get(quantize_kernel::dequantize), p,
                 static_cast<int>(c.mode));
}

}  // namespace gpumath::detail
