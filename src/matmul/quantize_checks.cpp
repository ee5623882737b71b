// SPDX-License-Identifier: Apache-2.0
// quantize_fp8 and dequantize_fp8 on the host: the scale layouts of each mode, the geometry the
// kernels read, and every check of the operands. No CUDA calls.
#include "matmul/quantize_checks.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "matmul/checks.hpp"
#include "matmul/quantize_source.hpp"
#include "matmul/scales.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {
namespace {

constexpr std::int64_t max_grid = std::numeric_limits<std::int32_t>::max();

void check_rank(ScaleMode mode, const TensorLayout& x, const char* name, const char* api) {
    if (mode == ScaleMode::tensor) {
        if (x.rank() == 0) invalid(api, "{}: rank 0; quantize at least a vector: reshape a scalar to (1,)", name);
        return;
    }
    if (x.rank() < 2)
        invalid(api,
                "{}: rank {}; {} scales need a matrix (..., R, C) with blocks along C: reshape a vector of C "
                "elements to (1, C)",
                name, x.rank(), to_string(mode));
}

// What the scales of a call occupy, in f32 elements: for block_128x128 the padding of every row,
// the last one's included, which a view's span leaves out.
std::int64_t scale_storage(ScaleMode mode, const QuantizeGeometry& g) {
    switch (mode) {
        case ScaleMode::tensor:
            return 1;
        case ScaleMode::outer_vector:
            return g.batches * g.rows;
        case ScaleMode::block_1x128:
            return g.batches * g.rows * g.blocks;
        case ScaleMode::block_128x128:
            return g.batches * g.row_blocks * g.blocks4;
    }
    return 0;
}

QuantizeGeometry geometry_of(const TensorLayout& x, ScaleMode mode, const char* name, const char* api) {
    check_rank(mode, x, name, api);
    const int rank = x.rank();
    QuantizeGeometry g;
    g.cols = x.shape(-1);
    if (rank >= 2) {
        g.rows = x.shape(-2);
        g.row_stride = x.stride(-2);
    }
    g.blocks = ceil_div(g.cols, 128);
    g.blocks4 = ceil_div(g.blocks, 4) * 4;
    g.row_blocks = ceil_div(g.rows, 128);
    int inner = -1;  // the innermost batch dimension of extent > 1
    for (int i = 0; i + 2 < rank; ++i) {
        g.batches *= x.shape(i);
        if (x.shape(i) != 1) inner = i;
    }
    if (x.size() == 0) return g;  // nothing is read: strides do not matter
    if (g.cols > 1 && x.stride(-1) != 1)
        invalid(api,
                "{}: stride {} along its last dimension ({}); FP8 scale blocks run along rows read with unit "
                "stride: pass a view whose last dimension is contiguous (copy it to a row-major tensor first)",
                name, x.stride(-1), to_string(x));
    if (inner >= 0) {
        g.batch_stride = x.stride(inner);
        std::int64_t expected = g.batch_stride;
        bool past = false;  // expected is past int64 (one-byte data): no outer dimension can continue
        for (int i = inner; i >= 0; --i) {
            if (x.shape(i) != 1 && (past || x.stride(i) != expected))
                invalid(api,
                        "{}: its batch dimensions ({}) are not one strided sequence (each batch stride must be the "
                        "next one's times that one's extent); pass a tensor whose leading dimensions are dense over "
                        "each other (a contiguous copy), or quantize each batch on its own",
                        name, to_string(x));
            past = past || __builtin_mul_overflow(expected, x.shape(i), &expected);
        }
    }
    return g;
}

void check_fp8_type(DataType t, const char* field, const char* api) {
    check_enum(t, data_type_count, "a DataType", field, api);
    if (!is_fp8(t))
        invalid(api, "{}: {} is not an FP8 type; pass DataType::e4m3 or DataType::e5m2", field, to_string(t));
}

void check_grid(ScaleMode mode, const QuantizeGeometry& g, const char* api) {
    const char* what = nullptr;
    std::int64_t blocks = 0;
    switch (mode) {
        case ScaleMode::tensor:
        case ScaleMode::block_1x128:
            blocks = ceil_div(g.batches * g.rows * g.blocks, quantize_items_per_block);
            what = "thread blocks";
            break;
        case ScaleMode::outer_vector:
            blocks = g.batches * g.rows;
            what = "rows (one block each)";
            break;
        case ScaleMode::block_128x128:
            blocks = g.batches * g.row_blocks * g.blocks;
            what = "tiles of 128 x 128 (one block each)";
            break;
    }
    if (blocks > max_grid)
        unsupported(api, "x: {} {}; one launch takes at most 2^31 - 1 blocks: quantize the tensor in parts", blocks,
                    what);
}

void check_no_overlaps(const TensorView& x, const TensorView& data, const float* scales, std::int64_t scale_count,
                       const float* amax, const char* api) {
    const ByteRange rx = bytes_of(x);
    const ByteRange rd = bytes_of(data);
    const ByteRange rs = bytes_of(scales, scale_count * std::int64_t(sizeof(float)));
    const ByteRange ra = bytes_of(amax, amax != nullptr ? std::int64_t(sizeof(float)) : 0);
    if (meet(rd, rx)) invalid(api, "data: its memory overlaps x's; outputs must not alias the input");
    if (meet(rs, rx))
        invalid(api, "scales: the {} floats it occupies overlap x's memory; outputs must not alias the input",
                scale_count);
    if (meet(ra, rx)) invalid(api, "amax: it points into x's memory; outputs must not alias the input");
    if (meet(rs, rd))
        invalid(api, "scales: the {} floats it occupies overlap data's memory; pass separate memory", scale_count);
    if (meet(ra, rd)) invalid(api, "amax: it points into data's memory; pass separate memory");
    if (meet(ra, rs)) invalid(api, "amax: it points into the scales' memory; pass separate memory");
}

bool dense_row_major(const TensorLayout& l) {
    std::array<std::int64_t, max_rank> expected{};
    TensorLayout::row_major_strides(l.shape(), std::span<std::int64_t>(expected.data(), std::size_t(l.rank())));
    for (int i = 0; i < l.rank(); ++i)
        if (l.shape(i) > 1 && l.stride(i) != expected[std::size_t(i)]) return false;
    return true;
}

// The same dtype, shape and addressing (strides of extents above 1) as `want`.
bool same_layout(const TensorLayout& got, const TensorLayout& want) {
    if (got.dtype() != want.dtype() || got.rank() != want.rank()) return false;
    for (int i = 0; i < got.rank(); ++i)
        if (got.shape(i) != want.shape(i) || (got.shape(i) > 1 && got.stride(i) != want.stride(i))) return false;
    return true;
}

void check_scales(const TensorView& scales, ScaleMode mode, const TensorLayout& x, const char* x_name,
                  std::size_t alignment, const char* api) {
    const TensorLayout want = quantize_scale_layout(mode, x, x_name, api);
    if (!same_layout(scales, want))
        invalid(
            api,
            "scales: {} is not the layout of {} scales for {} {}: expected {} (what fp8_scale_layout(ScaleMode::{}, "
            "{}) gives)",
            to_string(scales), to_string(mode), x_name, to_string(x.shape()), to_string(want), to_string(mode), x_name);
    check_view_memory(scales, "scales", api);
    if (reinterpret_cast<std::uintptr_t>(scales.data()) % alignment != 0) {
        if (alignment == 16)
            invalid(api,
                    "scales: pointer {} is not 16-byte aligned; cuBLASLt reads {} scales only from 16-byte aligned "
                    "memory: allocate them with Tensor::empty (256-byte aligned) or at a multiple of 16 bytes",
                    scales.data(), to_string(mode));
        invalid(api, "scales: pointer {} is not aligned to 4 bytes (one f32)", scales.data());
    }
}

void check_element_aligned(const TensorView& v, const char* name, const char* api) {
    check_view_memory(v, name, api);
    const std::size_t elem = size_of(v.dtype());
    if (reinterpret_cast<std::uintptr_t>(v.data()) % elem != 0)
        invalid(api,
                "{}: data pointer {} is not aligned to the {}-byte size of a {} element; pass a pointer aligned to "
                "its element size (16 bytes lets the kernels load 16 bytes at a time)",
                name, v.data(), elem, to_string(v.dtype()));
}

void check_input(const TensorView& x, const char* api) {
    check_enum(x.dtype(), data_type_count, "a DataType", "x.dtype()", api);
    if (x.dtype() != DataType::bf16 && x.dtype() != DataType::f16 && x.dtype() != DataType::f32)
        invalid(api, "x: {} cannot be quantized to FP8; pass a bf16, f16 or f32 tensor", to_string(x.dtype()));
    check_element_aligned(x, "x", api);
}

}  // namespace

void check_scale_mode(ScaleMode mode, const char* api) {
    check_enum(mode, int(ScaleMode::block_128x128) + 1, "a ScaleMode", "mode", api);
}

TensorLayout quantize_scale_layout(ScaleMode mode, const TensorLayout& x, const char* name, const char* api) {
    check_rank(mode, x, name, api);
    if (mode == ScaleMode::tensor) return scale_layout(mode, {}, 1, 1);
    try {
        return scale_layout(mode, x.shape().first(std::size_t(x.rank() - 2)), x.shape(-2), x.shape(-1));
    } catch (const InvalidArgument&) {
        // The only way a layout of these scales is refused: it needs more bytes than fit in int64.
        invalid(api,
                "{}: shape {} needs {} scales of more bytes than fit in int64 (f32 per row or block, padding "
                "included); split the tensor into parts",
                name, to_string(x.shape()), to_string(mode));
    }
}

TensorLayout scale_storage_layout(ScaleMode mode, const TensorLayout& x) {
    const TensorLayout view = quantize_scale_layout(mode, x, "x", "quantize_fp8");
    if (mode != ScaleMode::block_1x128 && mode != ScaleMode::block_128x128) return view;
    std::array<std::int64_t, max_rank> shape{};
    std::copy(view.shape().begin(), view.shape().end(), shape.begin());
    const std::size_t rows = std::size_t(view.rank()) - 2;
    if (mode == ScaleMode::block_1x128) std::swap(shape[rows], shape[rows + 1]);
    else shape[rows + 1] = view.stride(-2);  // L4
    return TensorLayout(DataType::f32, std::span<const std::int64_t>(shape.data(), std::size_t(view.rank())));
}

QuantizeCall quantize_call(const TensorView& x, ScaleMode mode, DataType fp8, const char* api) {
    check_scale_mode(mode, api);
    check_input(x, api);
    QuantizeCall c;
    c.geometry = geometry_of(x, mode, "x", api);
    check_fp8_type(fp8, "options.dtype", api);
    check_grid(mode, c.geometry, api);
    c.element = x.dtype();
    c.fp8 = fp8;
    c.mode = mode;
    c.in = x.data();
    return c;
}

QuantizeCall quantize_call(const TensorView& x, ScaleMode mode, const TensorView& data, const TensorView& scales,
                           float* amax, const char* api) {
    check_scale_mode(mode, api);
    check_input(x, api);
    QuantizeCall c;
    c.geometry = geometry_of(x, mode, "x", api);
    // Before the outputs: a launchable grid also bounds the scales' storage (padding included), so
    // that their bytes fit in int64.
    check_grid(mode, c.geometry, api);
    check_enum(data.dtype(), data_type_count, "a DataType", "data.dtype()", api);
    if (!is_fp8(data.dtype()))
        invalid(api, "data: {}; the quantized data must be an e4m3 or e5m2 tensor of x's shape, dense row-major",
                to_string(data.dtype()));
    if (data.rank() != x.rank() || !std::equal(x.shape().begin(), x.shape().end(), data.shape().begin()))
        invalid(api, "data: shape {} differs from x's {}; pass an FP8 tensor of x's shape, dense row-major",
                to_string(data.shape()), to_string(x.shape()));
    if (!dense_row_major(data))
        invalid(api, "data: strides {} are not dense row-major for shape {}; pass a contiguous FP8 tensor",
                to_string(data.strides()), to_string(data.shape()));
    check_view_memory(data, "data", api);
    check_scales(scales, mode, x, "x", mode == ScaleMode::tensor ? alignof(float) : 16, api);
    if (reinterpret_cast<std::uintptr_t>(amax) % alignof(float) != 0)
        invalid(api, "amax: pointer {} is not aligned to 4 bytes (one f32)", static_cast<const void*>(amax));
    if (amax != nullptr) check_memory(amax, std::int64_t(sizeof(float)), "amax", api);
    // The scales' storage (block_128x128's padding included) as the overlap checks take it.
    const std::int64_t storage = scale_storage(mode, c.geometry);
    check_memory(scales.data(), storage * std::int64_t(sizeof(float)), "scales", api);
    check_no_overlaps(x, data, static_cast<const float*>(scales.data()), storage, amax, api);
    c.element = x.dtype();
    c.fp8 = data.dtype();
    c.mode = mode;
    c.in = x.data();
    c.out = data.data();
    c.scales = static_cast<float*>(scales.data());
    c.amax = amax;
    return c;
}

QuantizeCall dequantize_call(const TensorView& data, const TensorView& scales, ScaleMode mode, DataType result_type,
                             const char* api) {
    check_scale_mode(mode, api);
    check_enum(data.dtype(), data_type_count, "a DataType", "data.dtype()", api);
    if (!is_fp8(data.dtype()))
        invalid(api, "data: {} is not FP8; pass the e4m3 or e5m2 data that quantize_fp8 produced",
                to_string(data.dtype()));
    QuantizeCall c;
    c.geometry = geometry_of(data, mode, "data", api);
    check_scales(scales, mode, data, "data", alignof(float), api);
    check_enum(result_type, data_type_count, "a DataType", "result_type", api);
    if (result_type != DataType::bf16 && result_type != DataType::f16 && result_type != DataType::f32)
        invalid(api, "result_type: {}; dequantize_fp8 produces bf16, f16 or f32", to_string(result_type));
    c.element = result_type;
    c.fp8 = data.dtype();
    c.mode = mode;
    c.in = data.data();
    c.scales = static_cast<float*>(scales.data());
    return c;
}

}  // namespace gpumath::detail
