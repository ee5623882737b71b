// SPDX-License-Identifier: Apache-2.0
/// @file
/// Tensor, the owning device tensor: allocation, host copies, DLPack exchange, and its
/// `core::launch` argument.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <span>
#include <type_traits>
#include <vector>

#include <gpumath/core/kernel_argument.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/detail/integral_range.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

namespace detail {
// The memory of a tensor adopted from another framework (DLPack): defined in src/dlpack.cpp,
// where it calls the producer's deleter when the last Tensor or exported tensor holding it goes.
struct ForeignMemory;
}  // namespace detail

/// An owning device tensor: a `core::Buffer` plus a row-major `TensorLayout`, or memory adopted
/// from another framework through DLPack (`from_dlpack`, any non-negative strides). Move-only;
/// converts to `TensorView`.
class Tensor {
public:
    /// A tensor with no memory: f32 of shape (0,), so `size() == 0` and `has_data()` is false.
    Tensor() noexcept : view_(empty_view()) {}
    /// Takes over `other`'s memory and layout; `other` becomes empty (as default-constructed).
    Tensor(Tensor&& other) noexcept
        : buffer_(std::move(other.buffer_)), foreign_(std::move(other.foreign_)), view_(other.view_) {
        other.view_ = empty_view();
    }
    /// Releases this tensor's memory (gpumath's buffer in stream order, adopted memory back to its
    /// producer) and takes over `other`'s; `other` becomes empty.
    Tensor& operator=(Tensor&& other) noexcept {
        if (this != &other) {
            buffer_ = std::move(other.buffer_);
            foreign_ = std::move(other.foreign_);
            view_ = other.view_;
            other.view_ = empty_view();
        }
        return *this;
    }
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;
    ~Tensor() = default;

    /// Allocates an uninitialised row-major tensor ordered on `stream` from `resource` (default:
    /// the current device's pool), its data aligned to `alignment` bytes (a power of two, see
    /// `core::MemoryResource::allocate`).
    [[nodiscard]] static Tensor empty(DataType dtype, std::initializer_list<std::int64_t> shape,
                                      core::StreamRef stream = core::current_stream(),
                                      std::shared_ptr<core::MemoryResource> resource = nullptr,
                                      std::size_t alignment = core::MemoryResource::default_alignment) {
        return empty(TensorLayout(dtype, shape), stream, std::move(resource), alignment);
    }
    /// Allocates as the overload above does, with the shape as a span.
    [[nodiscard]] static Tensor empty(DataType dtype, std::span<const std::int64_t> shape,
                                      core::StreamRef stream = core::current_stream(),
                                      std::shared_ptr<core::MemoryResource> resource = nullptr,
                                      std::size_t alignment = core::MemoryResource::default_alignment) {
        return empty(TensorLayout(dtype, shape), stream, std::move(resource), alignment);
    }
    /// Allocates a tensor of `layout`'s dtype and shape (row-major, whatever `layout`'s strides).
    [[nodiscard]] static Tensor empty(const TensorLayout& layout, core::StreamRef stream = core::current_stream(),
                                      std::shared_ptr<core::MemoryResource> resource = nullptr,
                                      std::size_t alignment = core::MemoryResource::default_alignment);

    /// Copies host data into a new row-major tensor of `shape` ordered on `stream`. `data` is any
    /// contiguous range of one of gpumath's element types (`std::vector`, `std::array`, `std::span`, a
    /// C array), `shape` any range of integers (`std::vector<int>`, `std::array<std::size_t, 2>`) or a
    /// brace list (`{1024, 512}`). The element count of `shape` must equal the size of `data`
    /// (InvalidArgument, before anything is allocated). The host data may be reused on return.
    template <std::ranges::contiguous_range Data, class Shape = std::initializer_list<std::int64_t>>
    requires std::ranges::sized_range<Data> && detail::IntegralRange<Shape>
    [[nodiscard]] static Tensor from_host(const Data& data, const Shape& shape,
                                          core::StreamRef stream = core::current_stream(),
                                          std::shared_ptr<core::MemoryResource> resource = nullptr) {
        using T = std::remove_cv_t<std::ranges::range_value_t<Data>>;
        const std::vector<std::int64_t> extents = detail::to_int64(shape, "shape", "Tensor::from_host");
        const TensorLayout layout(data_type_of<T>(), std::span<const std::int64_t>(extents));
        const std::span<const T> values(std::ranges::data(data), std::ranges::size(data));
        check_count(layout, values.size());
        Tensor t = empty(layout, stream, std::move(resource));
        t.buffer_.copy_from(values, stream);
        return t;
    }

    /// Copies the tensor to a host vector (row-major). Blocking: synchronizes `stream`.
    /// InvalidArgument unless `data_type_of<T>() == dtype()`, and for a tensor adopted with strides
    /// that are not row-major (`is_contiguous()`), and, with nothing enqueued, when `stream` is
    /// capturing a CUDA graph (a capture cannot hold the wait). NotSupported, before allocating,
    /// when the tensor holds more bytes than the host's physical memory. CudaError.
    template <class T>
    [[nodiscard]] std::vector<T> to_host(core::StreamRef stream = core::current_stream()) const {
        check_type(data_type_of<T>());
        check_contiguous();
        check_host_memory(sizeof(T));
        std::vector<T> out(static_cast<std::size_t>(size()));
        if (!out.empty()) {
            detail::reject_blocking_copy_in_capture(stream, "Tensor::to_host");
            detail::copy_async(out.data(), data(), out.size() * sizeof(T), stream);
            stream.synchronize();
        }
        return out;
    }

#if defined(GPUMATH_HAS_DLPACK)
    /// Adopts a DLPack tensor: the Tensor views its memory (validated as
    /// `TensorView::from_dlpack`) and calls `managed->deleter` exactly once, when the last owner
    /// goes (this Tensor, the one it was moved to, or a tensor exported from it with `to_dlpack`),
    /// or before throwing when validation fails. A null deleter is never called. An exception
    /// thrown by the deleter is caught, logged (LogLevel::error, naming DLPack and its `what()`)
    /// and dropped, on either path: it never ends the process, and a validation failure still
    /// reaches the caller as InvalidArgument. `buffer()` of such a tensor is empty.
    /// InvalidArgument for a null `managed` (nothing to call).
    [[nodiscard]] static Tensor from_dlpack(DLManagedTensor* managed);
#if defined(GPUMATH_HAS_DLPACK_VERSIONED)
    /// Adopts a DLPack 1.x tensor as the `DLManagedTensor*` overload does. Also InvalidArgument
    /// (after calling the deleter) for `version.major` other than 1 and for the READ_ONLY flag
    /// (a Tensor may be written; `TensorView::from_dlpack(managed->dl_tensor)` reads one).
    [[nodiscard]] static Tensor from_dlpack(DLManagedTensorVersioned* managed);
#endif

    /// Moves the tensor into a new DLPack tensor (this one becomes empty) whose deleter releases
    /// the memory: gpumath's buffer is freed in stream order on `buffer().stream()` (which must
    /// still exist then), adopted memory goes back to its producer. The consumer calls the deleter
    /// exactly once. Device: kDLCUDA with the pool's device for gpumath's device memory,
    /// kDLCUDAHost for pinned and kDLCUDAManaged for managed memory, the producer's device for an
    /// adopted tensor, otherwise what the CUDA runtime says of the pointer (kDLCUDA, device 0 for
    /// a tensor without memory). fp8 types export as DLPack 1.1's codes (see `to_dlpack(DataType)`).
    /// CudaError when the pointer cannot be looked up; the tensor is then unchanged.
    [[nodiscard]] DLManagedTensor* to_dlpack() &&;
#if defined(GPUMATH_HAS_DLPACK_VERSIONED)
    /// `to_dlpack()` as a DLPack 1.x tensor (version of the included header, flags 0).
    [[nodiscard]] DLManagedTensorVersioned* to_dlpack_versioned() &&;
#endif
#endif

    /// A non-owning view of the tensor's memory and layout, valid while the tensor holds them.
    [[nodiscard]] TensorView view() const noexcept { return view_; }
    /// `view()`: a Tensor passes wherever a TensorView is taken.
    operator TensorView() const noexcept { return view_; }  // NOLINT: implicit by design
    /// Element type, shape and strides.
    [[nodiscard]] const TensorLayout& layout() const noexcept { return view_; }
    /// The element type.
    [[nodiscard]] DataType dtype() const noexcept { return view_.dtype(); }
    /// The number of dimensions.
    [[nodiscard]] int rank() const noexcept { return view_.rank(); }
    /// The extents, `rank()` of them (valid while the tensor is neither moved nor destroyed).
    [[nodiscard]] std::span<const std::int64_t> shape() const noexcept { return view_.shape(); }
    /// Extent of dimension `i`; negative `i` counts from the end. Unchecked.
    [[nodiscard]] std::int64_t shape(int i) const noexcept { return view_.shape(i); }
    /// The strides in elements: row-major for an allocated tensor, the producer's for an adopted
    /// one.
    [[nodiscard]] std::span<const std::int64_t> strides() const noexcept { return view_.strides(); }
    /// Number of elements (product of the extents).
    [[nodiscard]] std::int64_t size() const noexcept { return view_.size(); }
    /// Pointer to the element at index 0 (device-accessible memory); null for a tensor without
    /// memory. The tensor keeps ownership.
    [[nodiscard]] void* data() const noexcept { return view_.data(); }
    /// True when the tensor owns memory (false for a default-constructed or moved-from tensor).
    [[nodiscard]] bool has_data() const noexcept { return view_.data() != nullptr; }
    /// `data()` as `T*`; InvalidArgument unless `data_type_of<T>() == dtype()`.
    template <class T>
    [[nodiscard]] T* data_as() const {
        return view_.data_as<T>();
    }
    /// The memory gpumath allocated for the tensor; empty for a tensor adopted with `from_dlpack`,
    /// whose memory belongs to its producer (`data()` still points to it).
    [[nodiscard]] const core::Buffer& buffer() const noexcept { return buffer_; }
    /// The memory gpumath allocated for the tensor (empty for an adopted one), for instance to
    /// change the stream it is freed on.
    [[nodiscard]] core::Buffer& buffer() noexcept { return buffer_; }

private:
    static TensorView empty_view() noexcept {
        // Shape (0,) cannot fail validation, so this never throws.
        return TensorView(static_cast<float*>(nullptr), {0});
    }
    static void check_count(const TensorLayout& layout, std::size_t count);
    void check_type(DataType requested) const;
    void check_contiguous() const;
    void check_host_memory(std::size_t element_size) const;
#if defined(GPUMATH_HAS_DLPACK)
    static Tensor adopt_dlpack(const detail::DLPackSource& source);
#endif

    core::Buffer buffer_;
    std::shared_ptr<detail::ForeignMemory> foreign_;
    TensorView view_;
};

#if defined(GPUMATH_HAS_DLPACK_VERSIONED)
inline Tensor Tensor::from_dlpack(DLManagedTensorVersioned* managed) {
    detail::DLPackSource source;
    source.versioned = true;
    if (managed != nullptr) {
        source.managed = managed;
        source.release = [](void* m) {
            auto* self = static_cast<DLManagedTensorVersioned*>(m);
            if (self->deleter != nullptr) self->deleter(self);
        };
        // version, manager_ctx, deleter and flags keep their places in every major version; the
        // DLTensor is read only in the major version this header describes.
        source.major = managed->version.major;
        source.minor = managed->version.minor;
        source.flags = managed->flags;
        if (managed->version.major == DLPACK_MAJOR_VERSION) source.tensor = &managed->dl_tensor;
    }
    return adopt_dlpack(source);
}

inline DLManagedTensorVersioned* Tensor::to_dlpack_versioned() && {
    // The versioned struct wraps a legacy export, which owns the memory and the shape arrays.
    struct Exported {
        DLManagedTensorVersioned managed{};
        DLManagedTensor* inner = nullptr;
    };
    auto exported = std::make_unique<Exported>();
    DLManagedTensor* inner = std::move(*this).to_dlpack();
    exported->inner = inner;
    exported->managed.version.major = DLPACK_MAJOR_VERSION;
    exported->managed.version.minor = DLPACK_MINOR_VERSION;
    exported->managed.manager_ctx = exported.get();
    exported->managed.deleter = [](DLManagedTensorVersioned* self) {
        auto* e = static_cast<Exported*>(self->manager_ctx);
        e->inner->deleter(e->inner);
        delete e;  // NOLINT(cppcoreguidelines-owning-memory): ownership passed through DLPack's C struct
    };
    exported->managed.flags = 0;
    exported->managed.dl_tensor = inner->dl_tensor;
    return &exported.release()->managed;
}
#endif

}  // namespace gpumath

namespace gpumath::core {

/// A Tensor passes to `launch` as its device pointer.
template <>
struct KernelArgument<Tensor> {
    /// A pointer.
    using type = void*;
    /// `t.data()`.
    static void* get(const Tensor& t) noexcept { return t.data(); }
};

}  // namespace gpumath::core
