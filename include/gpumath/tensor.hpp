// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include <gpumath/core/kernel_argument.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

/// An owning device tensor: a `core::Buffer` plus a row-major `TensorLayout`. Move-only;
/// converts to `TensorView`.
class Tensor {
public:
    /// A tensor with no memory: f32 of shape (0,), so `size() == 0` and `has_data()` is false.
    Tensor() noexcept : view_(empty_view()) {}
    Tensor(Tensor&& other) noexcept : buffer_(std::move(other.buffer_)), view_(other.view_) {
        other.view_ = empty_view();
    }
    Tensor& operator=(Tensor&& other) noexcept {
        if (this != &other) {
            buffer_ = std::move(other.buffer_);
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
                                      core::StreamRef stream = {},
                                      std::shared_ptr<core::MemoryResource> resource = nullptr,
                                      std::size_t alignment = core::MemoryResource::default_alignment) {
        return empty(TensorLayout(dtype, shape), stream, std::move(resource), alignment);
    }
    [[nodiscard]] static Tensor empty(DataType dtype, std::span<const std::int64_t> shape, core::StreamRef stream = {},
                                      std::shared_ptr<core::MemoryResource> resource = nullptr,
                                      std::size_t alignment = core::MemoryResource::default_alignment) {
        return empty(TensorLayout(dtype, shape), stream, std::move(resource), alignment);
    }
    /// Allocates a tensor of `layout`'s dtype and shape (row-major, whatever `layout`'s strides).
    [[nodiscard]] static Tensor empty(const TensorLayout& layout, core::StreamRef stream = {},
                                      std::shared_ptr<core::MemoryResource> resource = nullptr,
                                      std::size_t alignment = core::MemoryResource::default_alignment);

    /// Copies host data into a new tensor of `shape` ordered on `stream`; `data.size()` must equal
    /// the shape's element count (InvalidArgument). The host data may be reused on return.
    template <class T>
    [[nodiscard]] static Tensor from_host(std::span<const T> data, std::initializer_list<std::int64_t> shape,
                                          core::StreamRef stream = {},
                                          std::shared_ptr<core::MemoryResource> resource = nullptr) {
        TensorLayout layout(data_type_of<T>(), shape);
        check_count(layout, data.size());
        Tensor t = empty(layout, stream, std::move(resource));
        t.buffer_.copy_from(data, stream);
        return t;
    }
    template <class T>
    [[nodiscard]] static Tensor from_host(const std::vector<T>& data, std::initializer_list<std::int64_t> shape,
                                          core::StreamRef stream = {},
                                          std::shared_ptr<core::MemoryResource> resource = nullptr) {
        return from_host(std::span<const T>(data), shape, stream, std::move(resource));
    }

    /// Copies the tensor to a host vector (row-major). Blocking: synchronizes `stream`.
    /// InvalidArgument unless `data_type_of<T>() == dtype()`.
    template <class T>
    [[nodiscard]] std::vector<T> to_host(core::StreamRef stream = {}) const {
        check_type(data_type_of<T>());
        return buffer_.to_host<T>(stream);
    }

    [[nodiscard]] TensorView view() const noexcept { return view_; }
    operator TensorView() const noexcept { return view_; }  // NOLINT: implicit by design
    [[nodiscard]] const TensorLayout& layout() const noexcept { return view_; }
    [[nodiscard]] DataType dtype() const noexcept { return view_.dtype(); }
    [[nodiscard]] int rank() const noexcept { return view_.rank(); }
    [[nodiscard]] std::span<const std::int64_t> shape() const noexcept { return view_.shape(); }
    [[nodiscard]] std::int64_t shape(int i) const noexcept { return view_.shape(i); }
    [[nodiscard]] std::span<const std::int64_t> strides() const noexcept { return view_.strides(); }
    [[nodiscard]] std::int64_t size() const noexcept { return view_.size(); }
    [[nodiscard]] void* data() const noexcept { return view_.data(); }
    /// True when the tensor owns memory (false for a default-constructed or moved-from tensor).
    [[nodiscard]] bool has_data() const noexcept { return view_.data() != nullptr; }
    template <class T>
    [[nodiscard]] T* data_as() const {
        return view_.data_as<T>();
    }
    [[nodiscard]] const core::Buffer& buffer() const noexcept { return buffer_; }
    [[nodiscard]] core::Buffer& buffer() noexcept { return buffer_; }

private:
    static TensorView empty_view() noexcept {
        // Shape (0,) cannot fail validation, so this never throws.
        return TensorView(static_cast<float*>(nullptr), {0});
    }
    static void check_count(const TensorLayout& layout, std::size_t count);
    void check_type(DataType requested) const;

    core::Buffer buffer_;
    TensorView view_;
};

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
