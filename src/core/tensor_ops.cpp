// SPDX-License-Identifier: Apache-2.0
// fill, cast and copy: the checks (before any CUDA call), the index space each call runs over, and
// the choice among the kernels of kernels/tensor_ops.cu (a device copy, flat, transposing or
// strided), loaded once per device and instantiation.
#include <gpumath/tensor_ops.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>

#include "core/driver_api.hpp"
#include "core/jit.hpp"
#include "core/kernel_loader.hpp"
#include "core/kernels/tensor_ops.cu.inc"
#include "core/kernels/tensor_ops_params.hpp"
#include "core/kernels/tensor_ops_params.hpp.inc"
#include "core/stream_workspace.hpp"
#include "core/tensor_ops_internal.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

namespace {

using kernels::ElementwiseParams;
using kernels::max_rank;
using kernels::TransposeParams;

std::string_view kernel_type(DataType t) {
    switch (t) {
        case DataType::f16:
            return "__half";
        case DataType::bf16:
            return "__nv_bfloat16";
        case DataType::f32:
            return "float";
        case DataType::f64:
            return "double";
        case DataType::c32:
            return "gpumath::kernels::c32";
        case DataType::c64:
            return "gpumath::kernels::c64";
        case DataType::e4m3:
            return "__nv_fp8_e4m3";
        case DataType::e5m2:
            return "__nv_fp8_e5m2";
        case DataType::i8:
            return "signed char";
        case DataType::i32:
            return "int";
        case DataType::i64:
            return "long long";
    }
    return "float";
}

using Op = TensorKernel;

}  // namespace

std::string tensor_kernel_name(TensorKernel op, DataType in, DataType out, int vector) {
    switch (op) {
        case Op::fill_flat:
            return fmt::format("gpumath::kernels::fill_flat<{}, {}>", kernel_type(out), vector);
        case Op::fill_strided:
            return fmt::format("gpumath::kernels::fill_strided<{}>", kernel_type(out));
        case Op::convert_flat:
            return fmt::format("gpumath::kernels::convert_flat<{}, {}, {}>", kernel_type(in), kernel_type(out), vector);
        case Op::convert_strided:
            return fmt::format("gpumath::kernels::convert_strided<{}, {}>", kernel_type(in), kernel_type(out));
        case Op::transpose:
            return fmt::format("gpumath::kernels::transpose<{}, {}>", kernel_type(in), kernel_type(out));
        case Op::random_flat:
            return fmt::format("gpumath::kernels::random_flat<{}, {}>", kernel_type(out), vector);
    }
    return {};
}

core::ProgramOptions tensor_kernels_options() {
    core::ProgramOptions options;
    options.name = "gpumath_tensor_ops";
    options.std = "c++17";
    options.headers["tensor_ops_params.hpp"] = std::string(embedded::core_kernels_tensor_ops_params_hpp);
    return options;
}

std::string_view tensor_kernels_source() { return embedded::core_kernels_tensor_ops_cu; }

namespace {

/// A kernel of this file's program and the device's multiprocessor count, looked up once per
/// (device, kernel, types, vector width).
struct LoadedKernel {
    core::Kernel kernel;
    std::int64_t multiprocessors = 1;
};

const LoadedKernel& kernel_for(int device, Op op, DataType in, DataType out, int vector) {
    using Key = std::tuple<int, Op, DataType, DataType, int>;
    static std::mutex mutex;
    static auto* kernels = new std::map<Key, LoadedKernel>();  // never destroyed: see kernel_loader.hpp
    const Key key{device, op, in, out, vector};
    {
        std::lock_guard lock(mutex);
        if (auto it = kernels->find(key); it != kernels->end()) return it->second;
    }
    // One program per instantiation: a call compiles only the kernel it runs.
    const std::string name = tensor_kernel_name(op, in, out, vector);
    const DeviceProgram program(tensor_kernels_source(), tensor_kernels_options(), {name});
    LoadedKernel loaded{device_kernel(device, program, name), core::Device(device).multiprocessor_count()};
    std::lock_guard lock(mutex);
    return kernels->emplace(key, std::move(loaded)).first->second;
}

/// A grid-stride launch over `work` items: enough blocks to fill the device a few times over.
core::LaunchConfig flat_config(std::int64_t work, std::int64_t multiprocessors) {
    constexpr std::int64_t block = 256;
    const std::int64_t blocks = std::clamp<std::int64_t>((work + block - 1) / block, 1, multiprocessors * 8);
    return {.grid = blocks, .block = block};
}

/// The index space of a call: the extents of `out` (and `in`) without dimensions of extent 1, and
/// adjacent dimensions merged where both operands step through them as one.
struct IndexSpace {
    int rank = 0;
    std::array<std::int64_t, max_rank> shape{}, in{}, out{};
};

IndexSpace index_space(const TensorLayout& out, const TensorLayout* in) {
    IndexSpace s;
    for (int d = 0; d < out.rank(); ++d) {
        if (out.shape(d) == 1) continue;
        const std::int64_t in_stride = in != nullptr ? in->stride(d) : 0;
        if (s.rank > 0) {
            const auto last = std::size_t(s.rank - 1);
            if (s.out[last] == out.stride(d) * out.shape(d) && s.in[last] == in_stride * out.shape(d)) {
                s.shape[last] *= out.shape(d);
                s.out[last] = out.stride(d);
                s.in[last] = in_stride;
                continue;
            }
        }
        const auto k = std::size_t(s.rank++);
        s.shape[k] = out.shape(d);
        s.out[k] = out.stride(d);
        s.in[k] = in_stride;
    }
    return s;
}

ElementwiseParams params_of(const IndexSpace& s, const void* in, void* out, std::int64_t count) {
    ElementwiseParams p{};
    p.in = in;
    p.out = out;
    p.count = count;
    p.rank = s.rank;
    for (std::size_t d = 0; d < std::size_t(s.rank); ++d) {
        p.shape[d] = s.shape[d];
        p.in_strides[d] = s.in[d];
        p.out_strides[d] = s.out[d];
    }
    return p;
}

/// Elements per 16-byte vector of the wider of the two types, when both pointers allow it; else 1.
int vector_width(const void* in, std::size_t in_size, const void* out, std::size_t out_size) {
    const std::size_t widest = std::max(in_size, out_size);
    const int v = widest >= 16 ? 1 : int(16 / widest);
    const auto aligned = [&](const void* p, std::size_t size) {
        return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % (std::size_t(v) * size) == 0;
    };
    return v > 1 && aligned(in, in_size) && aligned(out, out_size) ? v : 1;
}

bool unit_strides(const IndexSpace& s) { return s.rank == 0 || (s.rank == 1 && s.in[0] == 1 && s.out[0] == 1); }

void launch_convert(const TensorView& in, const TensorView& out, core::StreamRef stream) {
    const IndexSpace s = index_space(out, &in);
    const int device = current_device();
    const std::int64_t count = out.size();
    if (unit_strides(s)) {
        if (in.dtype() == out.dtype()) {
            check(cudaMemcpyAsync(out.data(), in.data(), std::size_t(out.span_bytes()), cudaMemcpyDeviceToDevice,
                                  stream.handle()),
                  "cudaMemcpyAsync", "copying a tensor");
            return;
        }
        const int v = vector_width(in.data(), size_of(in.dtype()), out.data(), size_of(out.dtype()));
        const LoadedKernel& k = kernel_for(device, Op::convert_flat, in.dtype(), out.dtype(), v);
        core::launch(stream, flat_config(count / v + 1, k.multiprocessors), k.kernel,
                     params_of(s, in.data(), out.data(), count));
        return;
    }
    // The output's unit stride on the last dimension and the input's on the one before: a batch of
    // transposes, which tiles read and write along whole lines.
    const auto r = std::size_t(s.rank);
    if ((s.rank == 2 || s.rank == 3) && s.out[r - 1] == 1 && s.in[r - 2] == 1 && s.in[r - 1] != 1) {
        TransposeParams t{};
        t.in = in.data();
        t.out = out.data();
        t.batches = s.rank == 3 ? s.shape[0] : 1;
        t.rows = s.shape[r - 2];
        t.cols = s.shape[r - 1];
        t.in_batch_stride = s.rank == 3 ? s.in[0] : 0;
        t.in_col_stride = s.in[r - 1];
        t.out_batch_stride = s.rank == 3 ? s.out[0] : 0;
        t.out_row_stride = s.out[r - 2];
        const LoadedKernel& k = kernel_for(device, Op::transpose, in.dtype(), out.dtype(), 1);
        const std::int64_t side =
            size_of(in.dtype()) >= 16 ? kernels::transpose_tile_side_16 : kernels::transpose_tile_side;
        const std::int64_t col_tiles = (t.cols + side - 1) / side, row_tiles = (t.rows + side - 1) / side;
        const core::LaunchConfig config{
            .grid = {std::min<std::int64_t>(col_tiles, 65535), std::min<std::int64_t>(row_tiles, 65535),
                     std::min<std::int64_t>(t.batches, 65535)},
            .block = {32, 8}};
        core::launch(stream, config, k.kernel, t);
        return;
    }
    const LoadedKernel& k = kernel_for(device, Op::convert_strided, in.dtype(), out.dtype(), 1);
    core::launch(stream, flat_config(count, k.multiprocessors), k.kernel, params_of(s, in.data(), out.data(), count));
}

}  // namespace

std::string self_overlap(const TensorLayout& layout) {
    // Dimensions by stride: each must step past everything the smaller ones reach.
    std::array<std::pair<std::int64_t, std::int64_t>, max_rank> dims{};  // (stride, extent)
    int n = 0;
    for (int d = 0; d < layout.rank(); ++d)
        if (layout.shape(d) > 1) dims[std::size_t(n++)] = {layout.stride(d), layout.shape(d)};
    // Insertion sort: at most eight dimensions.
    for (int k = 1; k < n; ++k)
        for (int j = k; j > 0 && dims[std::size_t(j)] < dims[std::size_t(j - 1)]; --j)
            std::swap(dims[std::size_t(j)], dims[std::size_t(j - 1)]);
    std::int64_t reach = 1;  // elements the smaller dimensions span
    for (int k = 0; k < n; ++k) {
        const auto [stride, extent] = dims[std::size_t(k)];
        if (stride < reach)
            return fmt::format(
                "strides {} make several of its elements share one address (a stride of {} over "
                "an extent of {} steps inside what the smaller strides reach)",
                to_string(layout.strides()), stride, extent);
        reach = stride * (extent - 1) + reach;
    }
    return {};
}

void check_written(const TensorView& out, const char* name, const char* api) {
    if (const std::string overlap = self_overlap(out); !overlap.empty())
        throw_invalid(fmt::format("{}: {}; each element must have its own address to be written", name, overlap), api);
}

void check_pair(const TensorView& in, const TensorView& out, const char* api) {
    check_written(out, "out", api);
    if (!std::equal(in.shape().begin(), in.shape().end(), out.shape().begin(), out.shape().end()))
        throw_invalid(fmt::format("out: shape {} differs from in's {}; give both one shape", to_string(out.shape()),
                                  to_string(in.shape())),
                      api);
    if (in.size() == 0) return;
    const auto* a = static_cast<const char*>(in.data());
    const auto* b = static_cast<const char*>(out.data());
    if (a < b + out.span_bytes() && b < a + in.span_bytes())
        throw_invalid(fmt::format("out: its memory ({} bytes at {}) overlaps in's ({} bytes at {}); write to "
                                  "memory of its own",
                                  out.span_bytes(), out.data(), in.span_bytes(), in.data()),
                      api);
}

namespace {

/// The bits of `value` as one element of `type`, for the types of 1, 2 or 4 bytes, by the rules the
/// kernels convert with (the toolkit's host conversions round as its device ones do). NaN is left to
/// the kernels, whose NaN bits the host conversions need not share.
std::optional<std::uint32_t> element_bits(DataType type, std::complex<double> value) {
    const double x = value.real();
    const auto bits16 = [](auto h) { return std::uint32_t(std::bit_cast<std::uint16_t>(h)); };
    if (std::isnan(x)) return std::nullopt;
    const auto integer = [&](double lo, double hi) { return std::clamp(std::trunc(x), lo, hi); };
    switch (type) {
        case DataType::f16:
            return bits16(__double2half(x));
        case DataType::bf16:
            return bits16(__double2bfloat16(x));
        case DataType::f32:
            return std::bit_cast<std::uint32_t>(static_cast<float>(x));
        case DataType::e4m3:
            return std::uint32_t(__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
        case DataType::e5m2:
            return std::uint32_t(__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
        case DataType::i8:
            return std::uint32_t(std::uint8_t(std::int8_t(integer(-128.0, 127.0))));
        case DataType::i32:
            return std::bit_cast<std::uint32_t>(std::int32_t(integer(-2147483648.0, 2147483647.0)));
        case DataType::f64:
        case DataType::c32:
        case DataType::c64:
        case DataType::i64:
            break;
    }
    return std::nullopt;
}

/// A fill of a contiguous tensor of 1-, 2- or 4-byte elements as the driver's memset (which writes
/// at the memory's full bandwidth); false where that does not apply (other sizes, NaN).
bool fill_by_memset(const TensorView& out, std::complex<double> value, core::StreamRef stream) {
    const std::optional<std::uint32_t> bits = element_bits(out.dtype(), value);
    if (!bits) return false;
    const std::size_t size = size_of(out.dtype());
    if (reinterpret_cast<std::uintptr_t>(out.data()) % size != 0) return false;
    ensure_context();
    const DriverApi& d = driver();
    const auto where = reinterpret_cast<CUdeviceptr>(out.data());
    const auto count = std::size_t(out.size());
    const auto s = reinterpret_cast<CUstream>(stream.handle());
    if (size == 4) check(d.cuMemsetD32Async(where, *bits, count, s), "cuMemsetD32Async", "filling a tensor");
    else if (size == 2)
        check(d.cuMemsetD16Async(where, static_cast<unsigned short>(*bits), count, s), "cuMemsetD16Async",
              "filling a tensor");
    else
        check(d.cuMemsetD8Async(where, static_cast<unsigned char>(*bits), count, s), "cuMemsetD8Async",
              "filling a tensor");
    return true;
}

}  // namespace

namespace {

// A fill has no input: its index space is flat when the output's alone is one run of unit stride.
bool flat_fill(const IndexSpace& s) { return s.rank == 0 || (s.rank == 1 && s.out[0] == 1); }

}  // namespace

namespace {

/// The exponent of the lowest set bit of a nonzero f32 value.
int lowest_bit(double x) {
    int e = 0;
    const double m = std::frexp(std::fabs(x), &e);  // x = m 2^e, m of 24 bits
    return e - 24 + std::countr_zero(std::uint64_t(std::ldexp(m, 24)));
}

}  // namespace

bool uniform_exact_in_f32(double low, double high) {
    const double width = high - low;
    const auto is_f32 = [](double x) { return double(float(x)) == x; };
    if (!is_f32(low) || !is_f32(high) || !is_f32(width)) return false;
    if (width == 0 || low == 0) return true;  // low alone, or width * u: 24 bits times 24 bits
    // low + width * u (u = m 2^-24, m of 24 bits) lies below 2^(max exponent + 2), and its lowest
    // bit is that of low or of width * u: exact in f64 when that spans at most 53 bits.
    const int top = std::max(std::ilogb(low), std::ilogb(width)) + 2;
    return top - std::min(lowest_bit(low), lowest_bit(width) - 24) <= 53;
}

bool fills_flat(const TensorLayout& out) { return flat_fill(index_space(out, nullptr)); }

void fill_view(const TensorView& out, std::complex<double> value, core::StreamRef stream) {
    if (out.size() == 0) return;
    const IndexSpace s = index_space(out, nullptr);
    const int device = current_device();
    const bool flat = flat_fill(s);
    if (flat && fill_by_memset(out, value, stream)) return;
    ElementwiseParams p = params_of(s, nullptr, out.data(), out.size());
    p.value_re = value.real();
    p.value_im = value.imag();
    if (flat) {
        const std::size_t size = size_of(out.dtype());
        const int v = vector_width(nullptr, size, out.data(), size);
        const LoadedKernel& k = kernel_for(device, Op::fill_flat, out.dtype(), out.dtype(), v);
        core::launch(stream, flat_config(out.size() / v + 1, k.multiprocessors), k.kernel, p);
        return;
    }
    const LoadedKernel& k = kernel_for(device, Op::fill_strided, out.dtype(), out.dtype(), 1);
    core::launch(stream, flat_config(out.size(), k.multiprocessors), k.kernel, p);
}

void convert_view(const TensorView& in, const TensorView& out, core::StreamRef stream) {
    if (out.size() > 0) launch_convert(in, out, stream);
}

void random_flat(void* out, DataType type, std::int64_t count, kernels::RandomDistribution distribution,
                 std::uint64_t seed, std::uint64_t offset, double a, double b, core::StreamRef stream) {
    if (count == 0) return;
    if (distribution == kernels::random_uniform && type != DataType::f64 && uniform_exact_in_f32(a, b))
        distribution = kernels::random_uniform_f32;
    const LoadedKernel& k = kernel_for(current_device(), Op::random_flat, type, type, int(distribution));
    // One thread per Philox block: four values of 32 bits or two of 64.
    const std::uint64_t per = type == DataType::f64 ? 2 : 4;
    const std::uint64_t blocks = (offset + std::uint64_t(count) + per - 1) / per - offset / per;
    const kernels::RandomParams p{out, count, seed, offset, a, b};
    core::launch(stream, flat_config(std::int64_t(blocks), k.multiprocessors), k.kernel, p);
}

}  // namespace gpumath::detail

namespace gpumath {

void fill(const TensorView& out, std::complex<double> value, core::StreamRef stream) {
    constexpr const char* api = "gpumath::fill";
    detail::check_written(out, "out", api);
    detail::fill_view(out, value, stream);
}

Tensor full(DataType dtype, std::span<const std::int64_t> shape, std::complex<double> value, core::StreamRef stream,
            std::shared_ptr<core::MemoryResource> resource) {
    constexpr const char* api = "gpumath::full";
    detail::check_enum(dtype, data_type_count, "a DataType", "dtype", api);
    const TensorLayout layout(dtype, shape);
    detail::reject_capture(stream, api, "gpumath allocates no results during a capture: fill a tensor made before");
    Tensor t = Tensor::empty(layout, stream, std::move(resource));
    detail::fill_view(t.view(), value, stream);
    return t;
}

void cast(const TensorView& in, const TensorView& out, core::StreamRef stream) {
    detail::check_pair(in, out, "gpumath::cast");
    detail::convert_view(in, out, stream);
}

Tensor cast(const TensorView& in, DataType to, core::StreamRef stream, std::shared_ptr<core::MemoryResource> resource) {
    constexpr const char* api = "gpumath::cast";
    detail::check_enum(to, data_type_count, "a DataType", "to", api);
    detail::reject_capture(stream, api,
                           "gpumath allocates no results during a capture: cast into a tensor made before");
    Tensor t = Tensor::empty(TensorLayout(to, in.shape()), stream, std::move(resource));
    detail::convert_view(in, t.view(), stream);
    return t;
}

void copy(const TensorView& in, const TensorView& out, core::StreamRef stream) {
    constexpr const char* api = "gpumath::copy";
    detail::check_pair(in, out, api);
    if (in.dtype() != out.dtype())
        detail::throw_invalid(fmt::format("out: holds {} elements and in {}; copy keeps the type, cast converts it",
                                          to_string(out.dtype()), to_string(in.dtype())),
                              api);
    detail::convert_view(in, out, stream);
}

Tensor contiguous(const TensorView& in, core::StreamRef stream, std::shared_ptr<core::MemoryResource> resource) {
    constexpr const char* api = "gpumath::contiguous";
    detail::reject_capture(stream, api,
                           "gpumath allocates no results during a capture: copy into a tensor made before");
    Tensor t = Tensor::empty(TensorLayout(in.dtype(), in.shape()), stream, std::move(resource));
    detail::convert_view(in, t.view(), stream);
    return t;
}

Tensor transpose(const TensorView& in, int axis0, int axis1, core::StreamRef stream,
                 std::shared_ptr<core::MemoryResource> resource) {
    return contiguous(in.transposed(axis0, axis1), stream, std::move(resource));
}

}  // namespace gpumath
