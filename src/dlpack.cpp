// SPDX-License-Identifier: Apache-2.0
// DLPack interop: DLTensor validation into TensorView, adoption of managed tensors into Tensor
// (with the producer's deleter called exactly once, an exception from it logged and dropped), and
// export of a Tensor as a managed tensor.
// Built only when <dlpack/dlpack.h> was found (GPUMATH_HAS_DLPACK).
#include <gpumath/dlpack.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>

#include "detail/layout_check.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"

namespace gpumath {

namespace detail {

namespace {

// The one place a producer's deleter is called (through DLPackSource::release). It runs when the
// last owner of an adopted tensor goes, or while from_dlpack's InvalidArgument is on its way out:
// an exception from it has no one to reach, and letting it leave a destructor would end the process
// (std::terminate). So it is logged and dropped; the deleter is not called again.
void release_foreign(void* managed, void (*release)(void*)) noexcept {
    if (release == nullptr) return;
    try {
        release(managed);
    } catch (const std::exception& e) {
        log(LogLevel::error,
            "DLPack: the producer's deleter of an adopted tensor threw an exception ({}); gpumath dropped it, "
            "since the deleter runs when the tensor goes, and will not call it again",
            e.what());
    } catch (...) {
        log(LogLevel::error,
            "DLPack: the producer's deleter of an adopted tensor threw an exception that is not a std::exception; "
            "gpumath dropped it, since the deleter runs when the tensor goes, and will not call it again");
    }
}

}  // namespace

struct ForeignMemory {
    void* managed = nullptr;
    void (*release)(void* managed) = nullptr;
    DLDevice device{};

    ForeignMemory(void* m, void (*r)(void*)) noexcept : managed(m), release(r) {}
    ~ForeignMemory() { release_foreign(managed, release); }
    ForeignMemory(const ForeignMemory&) = delete;
    ForeignMemory& operator=(const ForeignMemory&) = delete;
    ForeignMemory(ForeignMemory&&) = delete;
    ForeignMemory& operator=(ForeignMemory&&) = delete;
};

namespace {

// Type codes that Debian 12's DLPack 0.6 header does not name (values of DLPack 1.1's DLDataTypeCode).
constexpr std::uint8_t code_bool = 6;
constexpr std::uint8_t code_float8_e4m3fn = 10;
constexpr std::uint8_t code_float8_e5m2 = 12;
// The DLPack major version whose DLManagedTensorVersioned layout gpumath reads, and its READ_ONLY flag.
constexpr std::uint32_t versioned_major = 1;
constexpr std::uint64_t flag_read_only = 1;

std::string_view device_type_name(int type) {
    switch (type) {
        case kDLCPU:
            return "kDLCPU";
        case kDLCUDA:
            return "kDLCUDA";
        case kDLCUDAHost:
            return "kDLCUDAHost";
        case kDLOpenCL:
            return "kDLOpenCL";
        case kDLVulkan:
            return "kDLVulkan";
        case kDLMetal:
            return "kDLMetal";
        case kDLROCM:
            return "kDLROCM";
        case kDLROCMHost:
            return "kDLROCMHost";
        case kDLCUDAManaged:
            return "kDLCUDAManaged";
        default:
            return "a device type gpumath does not know";
    }
}

std::string_view type_code_name(std::uint8_t code) {
    switch (code) {
        case kDLInt:
            return "kDLInt";
        case kDLUInt:
            return "kDLUInt";
        case kDLFloat:
            return "kDLFloat";
        case kDLOpaqueHandle:
            return "kDLOpaqueHandle";
        case kDLBfloat:
            return "kDLBfloat";
        case kDLComplex:
            return "kDLComplex";
        case code_bool:
            return "kDLBool";
        case code_float8_e4m3fn:
            return "kDLFloat8_e4m3fn";
        case code_float8_e5m2:
            return "kDLFloat8_e5m2";
        default:
            return "an unknown code";
    }
}

// The DataType of (code, bits), or false.
bool lookup_data_type(std::uint8_t code, std::uint8_t bits, DataType& out) {
    constexpr std::array<std::pair<DataType, DLDataType>, data_type_count> table{{
        {DataType::f16, {kDLFloat, 16, 1}},
        {DataType::bf16, {kDLBfloat, 16, 1}},
        {DataType::f32, {kDLFloat, 32, 1}},
        {DataType::f64, {kDLFloat, 64, 1}},
        {DataType::c32, {kDLComplex, 64, 1}},
        {DataType::c64, {kDLComplex, 128, 1}},
        {DataType::e4m3, {code_float8_e4m3fn, 8, 1}},
        {DataType::e5m2, {code_float8_e5m2, 8, 1}},
        {DataType::i8, {kDLInt, 8, 1}},
        {DataType::i32, {kDLInt, 32, 1}},
        {DataType::i64, {kDLInt, 64, 1}},
    }};
    for (const auto& [type, dl] : table)
        if (dl.code == code && dl.bits == bits) {
            out = type;
            return true;
        }
    return false;
}

// The device type as the producer wrote it. DLPack before 1.0 declares DLDeviceType without a fixed
// underlying type, so reading a value past its enumerators (1000, -1) through the enum is undefined.
std::int32_t device_type_of(const DLDevice& device) noexcept {
    static_assert(sizeof(device.device_type) == sizeof(std::int32_t), "DLPack's device_type is 32 bits");
    std::int32_t type = 0;
    std::memcpy(&type, &device.device_type, sizeof type);
    return type;
}

void check_device(const DLDevice& device, const char* api) {
    const int type = device_type_of(device);
    if (type == kDLCPU)
        throw_invalid(fmt::format("DLTensor.device.device_type: kDLCPU ({}) is host memory; gpumath works on CUDA "
                                  "memory (kDLCUDA, kDLCUDAManaged, kDLCUDAHost): copy the tensor to the GPU first",
                                  type),
                      api);
    if (type != kDLCUDA && type != kDLCUDAManaged && type != kDLCUDAHost)
        throw_invalid(fmt::format("DLTensor.device.device_type: {} ({}) is not CUDA memory; gpumath accepts kDLCUDA "
                                  "(2), kDLCUDAHost (3) and kDLCUDAManaged (13)",
                                  device_type_name(type), type),
                      api);
    if (device.device_id < 0)
        throw_invalid(fmt::format("DLTensor.device.device_id: {} is negative", device.device_id), api);
}

// Last, since it asks the CUDA runtime: the device of a kDLCUDA tensor must be present. Pinned and
// managed memory are not tied to one device.
void check_device_present(const DLDevice& device, const char* api) {
    if (device_type_of(device) != kDLCUDA) return;
    const int count = core::Device::count();
    if (device.device_id >= count)
        throw_invalid(fmt::format("DLTensor.device.device_id: CUDA device {} is not present; this machine has {} "
                                  "CUDA device(s)",
                                  device.device_id, count),
                      api);
}

DataType check_dtype(const DLDataType& dtype, const char* api) {
    if (dtype.lanes != 1)
        throw_invalid(
            fmt::format("DLTensor.dtype.lanes: {} lanes; gpumath takes scalar elements (lanes 1)", dtype.lanes), api);
    DataType out = DataType::f32;
    if (lookup_data_type(dtype.code, dtype.bits, out)) return out;
    std::string_view why = "gpumath has f16, bf16, f32, f64, c32, c64, e4m3, e5m2, i8, i32 and i64";
    if (dtype.code == code_bool) why = "gpumath has no boolean type";
    else if (dtype.code == kDLUInt) why = "gpumath's integers are signed (i8, i32, i64)";
    throw_invalid(fmt::format("DLTensor.dtype: {} ({}) of {} bits has no gpumath type; {}", type_code_name(dtype.code),
                              dtype.code, dtype.bits, why),
                  api);
}

TensorLayout check_layout(const DLTensor& t, DataType dtype, const char* api) {
    if (t.ndim < 0 || t.ndim > max_rank)
        throw_invalid(fmt::format("DLTensor.ndim: {} dimensions; gpumath takes 0 to {}", t.ndim, max_rank), api);
    const auto rank = std::size_t(t.ndim);
    if (rank > 0 && t.shape == nullptr)
        throw_invalid(fmt::format("DLTensor.shape: null for {} dimensions", t.ndim), api);
    const std::span<const std::int64_t> shape(t.shape, rank);
    for (std::size_t i = 0; i < rank; ++i)
        if (shape[i] < 0) throw_invalid(fmt::format("DLTensor.shape[{}]: extent {} is negative", i, shape[i]), api);
    std::span<const std::int64_t> strides;
    if (t.strides != nullptr && rank > 0) {
        strides = {t.strides, rank};
        for (std::size_t i = 0; i < rank; ++i)
            if (strides[i] < 0)
                throw_invalid(fmt::format("DLTensor.strides[{}]: stride {} is negative; gpumath takes strides >= 0 "
                                          "(flip the data or copy it first)",
                                          i, strides[i]),
                              api);
    }
    // Extents or strides whose products overflow, named for the DLTensor and this function.
    validate_layout(dtype, shape, strides, api, "DLTensor.");
    return {dtype, shape, strides};
}

void* check_data(const DLTensor& t, const TensorLayout& layout, const char* api) {
    if (t.data == nullptr) {
        if (layout.size() != 0)
            throw_invalid(
                fmt::format("DLTensor.data: null for a non-empty tensor of shape {}", to_string(layout.shape())), api);
        return nullptr;
    }
    const auto base = reinterpret_cast<std::uintptr_t>(t.data);
    if (t.byte_offset > UINTPTR_MAX - base)
        throw_invalid(fmt::format("DLTensor.byte_offset: {} overflows the address {}", t.byte_offset, t.data), api);
    const std::size_t element = size_of(layout.dtype());
    if ((base + t.byte_offset) % element != 0)
        throw_invalid(fmt::format("DLTensor.byte_offset: data {} + byte_offset {} is not aligned to the {}-byte "
                                  "elements of {}",
                                  t.data, t.byte_offset, element, to_string(layout.dtype())),
                      api);
    const std::uintptr_t first = base + t.byte_offset;
    if (const auto span = std::uintptr_t(layout.span_bytes()); span > UINTPTR_MAX - first)
        throw_invalid(fmt::format("DLTensor.byte_offset: the tensor's {} bytes from data {} + byte_offset {} run past "
                                  "the end of the address space",
                                  span, t.data, t.byte_offset),
                      api);
    // The sum as an address, not pointer arithmetic: an offset past PTRDIFF_MAX is no pointer index.
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a foreign device address, never dereferenced here
    return reinterpret_cast<void*>(first);
}

TensorView import_view(const DLTensor& t, const char* api) {
    check_device(t.device, api);
    const DataType dtype = check_dtype(t.dtype, api);
    const TensorLayout layout = check_layout(t, dtype, api);
    void* data = check_data(t, layout, api);
    check_device_present(t.device, api);
    return {data, layout};
}

void check_version(const DLPackSource& source, const char* api) {
    if (!source.versioned) return;
    if (source.major != versioned_major || source.tensor == nullptr)
        throw_invalid(fmt::format("DLManagedTensorVersioned.version: DLPack {}.{}; gpumath reads major version {}",
                                  source.major, source.minor, versioned_major),
                      api);
    if ((source.flags & flag_read_only) != 0)
        throw_invalid(
            "DLManagedTensorVersioned.flags: the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY), and a "
            "Tensor may be written; read it through TensorView::from_dlpack(managed->dl_tensor) instead",
            api);
}

// Where the memory of a tensor gpumath allocated lives, for export.
DLDevice device_of(const core::Buffer& buffer) {
    const core::MemoryResource* resource = buffer.memory_resource().get();
    if (const auto* pool = dynamic_cast<const core::DeviceMemoryResource*>(resource)) return {kDLCUDA, pool->device()};
    if (dynamic_cast<const core::PinnedMemoryResource*>(resource) != nullptr) return {kDLCUDAHost, 0};
    if (dynamic_cast<const core::ManagedMemoryResource*>(resource) != nullptr) return {kDLCUDAManaged, 0};
    if (buffer.data() == nullptr) return {kDLCUDA, 0};
    cudaPointerAttributes attributes{};
    check(cudaPointerGetAttributes(&attributes, buffer.data()), "cudaPointerGetAttributes",
          "finding the device of a tensor for DLPack");
    switch (attributes.type) {
        case cudaMemoryTypeDevice:
            return {kDLCUDA, attributes.device};
        case cudaMemoryTypeManaged:
            return {kDLCUDAManaged, 0};
        case cudaMemoryTypeHost:
            return {kDLCUDAHost, 0};
        default:
            throw_not_supported(
                fmt::format("data: {} is not CUDA memory (its memory resource is not gpumath's)", buffer.data()),
                "Tensor::to_dlpack");
    }
}

// A Tensor moved into DLPack: owns the memory and the shape arrays the DLTensor points to.
struct ExportedTensor {
    DLManagedTensor managed{};
    std::array<std::int64_t, max_rank> shape{};
    std::array<std::int64_t, max_rank> strides{};
    core::Buffer buffer;
    std::shared_ptr<ForeignMemory> foreign;
};

}  // namespace

}  // namespace detail

DataType to_data_type(DLDataType dtype) { return detail::check_dtype(dtype, "to_data_type"); }

DLDataType to_dlpack(DataType t) noexcept {
    switch (t) {
        case DataType::f16:
            return {kDLFloat, 16, 1};
        case DataType::bf16:
            return {kDLBfloat, 16, 1};
        case DataType::f32:
            return {kDLFloat, 32, 1};
        case DataType::f64:
            return {kDLFloat, 64, 1};
        case DataType::c32:
            return {kDLComplex, 64, 1};
        case DataType::c64:
            return {kDLComplex, 128, 1};
        case DataType::e4m3:
            return {detail::code_float8_e4m3fn, 8, 1};
        case DataType::e5m2:
            return {detail::code_float8_e5m2, 8, 1};
        case DataType::i8:
            return {kDLInt, 8, 1};
        case DataType::i32:
            return {kDLInt, 32, 1};
        case DataType::i64:
            return {kDLInt, 64, 1};
    }
    return {kDLOpaqueHandle, 0, 0};  // no type: to_data_type and every DLPack consumer refuse it
}

TensorView TensorView::from_dlpack(const DLTensor& tensor) {
    return detail::import_view(tensor, "TensorView::from_dlpack");
}

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
    detail::DLPackSource source;
    if (managed != nullptr) {
        source.managed = managed;
        source.release = [](void* m) {
            auto* self = static_cast<DLManagedTensor*>(m);
            if (self->deleter != nullptr) self->deleter(self);
        };
        source.tensor = &managed->dl_tensor;
    }
    return adopt_dlpack(source);
}

Tensor Tensor::adopt_dlpack(const detail::DLPackSource& source) {
    constexpr const char* api = "Tensor::from_dlpack";
    if (source.managed == nullptr) detail::throw_invalid("managed: null pointer; pass a DLPack managed tensor", api);
    // Owned from here on: whatever throws below, the deleter runs once.
    std::shared_ptr<detail::ForeignMemory> foreign;
    try {
        foreign = std::make_shared<detail::ForeignMemory>(source.managed, source.release);
    } catch (...) {
        detail::release_foreign(source.managed, source.release);
        throw;
    }
    detail::check_version(source, api);
    const TensorView view = detail::import_view(*source.tensor, api);
    foreign->device = source.tensor->device;
    Tensor t;
    t.foreign_ = std::move(foreign);
    t.view_ = view;
    return t;
}

DLManagedTensor* Tensor::to_dlpack() && {
    auto exported = std::make_unique<detail::ExportedTensor>();
    DLTensor& dl = exported->managed.dl_tensor;
    dl.device = foreign_ ? foreign_->device : detail::device_of(buffer_);
    dl.data = view_.data();
    dl.ndim = view_.rank();
    dl.dtype = gpumath::to_dlpack(view_.dtype());
    for (int i = 0; i < view_.rank(); ++i) {
        exported->shape[std::size_t(i)] = view_.shape(i);
        exported->strides[std::size_t(i)] = view_.stride(i);
    }
    dl.shape = exported->shape.data();
    dl.strides = exported->strides.data();
    dl.byte_offset = 0;
    exported->buffer = std::move(buffer_);
    exported->foreign = std::move(foreign_);
    view_ = empty_view();
    exported->managed.manager_ctx = exported.get();
    exported->managed.deleter = [](DLManagedTensor* self) {
        // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): ownership passed through DLPack's C struct
        delete static_cast<detail::ExportedTensor*>(self->manager_ctx);
    };
    return &exported.release()->managed;
}

}  // namespace gpumath
