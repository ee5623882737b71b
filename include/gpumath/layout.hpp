// SPDX-License-Identifier: Apache-2.0
/// @file
/// Tensor shapes without data and with it: TensorLayout (element type, shape and strides) and
/// TensorView (a layout plus a pointer it does not own).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <type_traits>

#include <gpumath/dlpack.hpp>
#include <gpumath/error.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

/// Largest rank a TensorLayout holds.
inline constexpr int max_rank = 8;

namespace detail {
void validate_layout(DataType dtype, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides);
}  // namespace detail

/// Element type, shape and strides (in elements) of a tensor, stored inline (no heap).
///
/// Rank 0..8. Strides default to row-major (C order), as in NumPy; 0 broadcasts. Extents and strides
/// are >= 0, and the addressed span and each stride in bytes (even of extent 1) must fit in int64;
/// anything else throws InvalidArgument.
class TensorLayout {
public:
    /// A rank-0 (scalar) f32 layout.
    constexpr TensorLayout() noexcept = default;

    /// A layout of `dtype` and `shape` with `strides` in elements, one per dimension, or none for
    /// row-major. InvalidArgument for a dtype that is not an enumerator, a rank above `max_rank`,
    /// a stride count other than the rank, a negative extent or stride, or a size or span in
    /// bytes that does not fit in int64.
    TensorLayout(DataType dtype, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides = {})
        : dtype_(dtype) {
        assign(shape, strides);
    }
    /// The same from braced lists: `TensorLayout(DataType::f32, {2, 3})`, with strides
    /// `TensorLayout(DataType::f32, {2, 3}, {1, 2})`.
    TensorLayout(DataType dtype, std::initializer_list<std::int64_t> shape,
                 std::initializer_list<std::int64_t> strides = {})
        : TensorLayout(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()),
                       std::span<const std::int64_t>(strides.begin(), strides.size())) {}

    /// The element type.
    [[nodiscard]] constexpr DataType dtype() const noexcept { return dtype_; }
    /// The number of dimensions, 0 to `max_rank`.
    [[nodiscard]] constexpr int rank() const noexcept { return rank_; }
    /// The extents, `rank()` of them (a view into the layout: valid while it lives).
    [[nodiscard]] constexpr std::span<const std::int64_t> shape() const noexcept {
        return {shape_.data(), std::size_t(rank_)};
    }
    /// The strides in elements, `rank()` of them (a view into the layout: valid while it lives).
    [[nodiscard]] constexpr std::span<const std::int64_t> strides() const noexcept {
        return {strides_.data(), std::size_t(rank_)};
    }
    /// Extent of dimension `i`; negative `i` counts from the end. Unchecked.
    [[nodiscard]] constexpr std::int64_t shape(int i) const noexcept {
        return shape_[std::size_t(i < 0 ? i + rank_ : i)];
    }
    /// Stride of dimension `i` in elements; negative `i` counts from the end. Unchecked.
    [[nodiscard]] constexpr std::int64_t stride(int i) const noexcept {
        return strides_[std::size_t(i < 0 ? i + rank_ : i)];
    }
    /// Number of elements (product of the extents; 1 for rank 0).
    [[nodiscard]] constexpr std::int64_t size() const noexcept {
        std::int64_t n = 1;
        for (int i = 0; i < rank_; ++i) n *= shape_[std::size_t(i)];
        return n;
    }
    /// Elements between the first and one past the last addressed element (0 when empty).
    [[nodiscard]] constexpr std::int64_t span_elements() const noexcept {
        // Empty first: the strides of an empty layout are not bounded, and their products may overflow.
        for (int i = 0; i < rank_; ++i)
            if (shape_[std::size_t(i)] == 0) return 0;
        std::int64_t last = 0;
        for (int i = 0; i < rank_; ++i) last += (shape_[std::size_t(i)] - 1) * strides_[std::size_t(i)];
        return last + 1;
    }
    /// Bytes spanned in memory: `span_elements() * size_of(dtype())`.
    [[nodiscard]] constexpr std::int64_t span_bytes() const noexcept {
        return span_elements() * std::int64_t(size_of(dtype_));
    }
    /// True when the strides are exactly row-major (C order) for the shape; the strides of
    /// dimensions of extent 1 do not matter, and a layout with no element (an extent 0) is
    /// contiguous whatever its strides, as in NumPy and PyTorch.
    [[nodiscard]] constexpr bool is_contiguous() const noexcept {
        for (int i = 0; i < rank_; ++i)
            if (shape_[std::size_t(i)] == 0) return true;
        std::int64_t expected = 1;
        for (int i = rank_ - 1; i >= 0; --i) {
            if (shape_[std::size_t(i)] != 1 && strides_[std::size_t(i)] != expected) return false;
            expected *= shape_[std::size_t(i)];
        }
        return true;
    }
    /// The same layout as a reference (lets `TensorView` pass where a layout is expected).
    [[nodiscard]] constexpr const TensorLayout& layout() const noexcept { return *this; }
    /// The last two dimensions swapped (shape and strides): a row-major (N, K) matrix seen as the
    /// column-major (K, N) matrix it is the transpose of. No data moves. InvalidArgument below rank 2.
    [[nodiscard]] TensorLayout transposed() const;
    /// Dimensions `axis0` and `axis1` swapped (shape and strides; negative axes count from the
    /// end, -1 the last). No data moves. InvalidArgument for an axis outside [-rank, rank).
    [[nodiscard]] TensorLayout transposed(int axis0, int axis1) const;

    /// Equal when dtype, shape and strides are all equal.
    friend constexpr bool operator==(const TensorLayout& a, const TensorLayout& b) noexcept {
        if (a.dtype_ != b.dtype_ || a.rank_ != b.rank_) return false;
        for (int i = 0; i < a.rank_; ++i)
            if (a.shape_[std::size_t(i)] != b.shape_[std::size_t(i)] ||
                a.strides_[std::size_t(i)] != b.strides_[std::size_t(i)])
                return false;
        return true;
    }

    /// Row-major strides for `shape`, into `out` (which must hold shape.size() values).
    static constexpr void row_major_strides(std::span<const std::int64_t> shape, std::span<std::int64_t> out) noexcept {
        std::int64_t s = 1;
        for (std::size_t i = shape.size(); i-- > 0;) {
            out[i] = s;
            s *= shape[i] > 0 ? shape[i] : 1;
        }
    }

private:
    void assign(std::span<const std::int64_t> shape, std::span<const std::int64_t> strides) {
        detail::validate_layout(dtype_, shape, strides);
        rank_ = static_cast<std::int8_t>(shape.size());
        for (std::size_t i = 0; i < shape.size(); ++i) shape_[i] = shape[i];
        if (strides.empty()) row_major_strides(shape, std::span<std::int64_t>(strides_.data(), shape.size()));
        else
            for (std::size_t i = 0; i < strides.size(); ++i) strides_[i] = strides[i];
    }

    std::array<std::int64_t, max_rank> shape_{};
    std::array<std::int64_t, max_rank> strides_{};
    DataType dtype_ = DataType::f32;
    std::int8_t rank_ = 0;
};

/// A TensorLayout plus a (non-owning) data pointer; usable wherever a TensorLayout is expected.
///
/// The pointer may be device, managed or pinned memory; it is not dereferenced on the host.
/// A null pointer is allowed only for an empty tensor (InvalidArgument otherwise).
class TensorView : public TensorLayout {
public:
    /// A rank-0 f32 view with a null pointer.
    constexpr TensorView() noexcept = default;

    // clang-format 14 would join the requires-clause to the declaration.
    // clang-format off
    /// Typed pointer: the dtype is `data_type_of<T>()`.
    template <class T>
        requires is_element_type_v<T>
    TensorView(T* data, std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> strides = {})
        : TensorLayout(data_type_of<T>(), shape, strides), data_(const_cast<std::remove_cv_t<T>*>(data)) {
        check_data();
    }
    // clang-format on
    // clang-format 14 would join the requires-clause to the declaration.
    // clang-format off
    /// Typed pointer with shape and strides as spans (as for TensorLayout).
    template <class T>
        requires is_element_type_v<T>
    TensorView(T* data, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides = {})
        : TensorLayout(data_type_of<T>(), shape, strides), data_(const_cast<std::remove_cv_t<T>*>(data)) {
        check_data();
    }
    // clang-format on
    /// Untyped pointer with an explicit dtype.
    TensorView(const void* data, DataType dtype, std::initializer_list<std::int64_t> shape,
               std::initializer_list<std::int64_t> strides = {})
        : TensorLayout(dtype, shape, strides), data_(const_cast<void*>(data)) {
        check_data();
    }
    /// Untyped pointer with an explicit dtype, shape and strides as spans.
    TensorView(const void* data, DataType dtype, std::span<const std::int64_t> shape,
               std::span<const std::int64_t> strides = {})
        : TensorLayout(dtype, shape, strides), data_(const_cast<void*>(data)) {
        check_data();
    }
    /// A layout with a pointer.
    TensorView(const void* data, const TensorLayout& layout) : TensorLayout(layout), data_(const_cast<void*>(data)) {
        check_data();
    }

#if defined(GPUMATH_HAS_DLPACK)
    /// A view of a DLPack tensor's memory (not owned: the producer keeps it alive while the view is
    /// used). Accepts CUDA device memory (kDLCUDA on a present device), managed memory
    /// (kDLCUDAManaged) and pinned host memory (kDLCUDAHost); dtypes as `to_data_type`; rank 0 to
    /// `max_rank`; strides in elements, non-negative (NULL: row-major); `byte_offset` is added to
    /// `data`, and the result must be aligned to the element size. InvalidArgument naming the
    /// DLTensor field otherwise (a CPU tensor, bool, lanes > 1, a negative stride, ...). Only the
    /// device id of a kDLCUDA tensor is checked against the CUDA runtime (last).
    [[nodiscard]] static TensorView from_dlpack(const DLTensor& tensor);
#endif

    /// The data pointer (to the element at index 0).
    [[nodiscard]] constexpr void* data() const noexcept { return data_; }
    /// The same data with its last two dimensions swapped (see TensorLayout::transposed()).
    [[nodiscard]] TensorView transposed() const { return {data_, TensorLayout::transposed()}; }
    /// The same data with dimensions `axis0` and `axis1` swapped (see TensorLayout::transposed).
    [[nodiscard]] TensorView transposed(int axis0, int axis1) const {
        return {data_, TensorLayout::transposed(axis0, axis1)};
    }
    /// The data pointer as `T*`; InvalidArgument unless `data_type_of<T>() == dtype()`.
    template <class T>
    [[nodiscard]] T* data_as() const {
        if (data_type_of<T>() != dtype()) throw_dtype_mismatch(data_type_of<T>());
        return static_cast<T*>(data_);
    }

private:
    void check_data() const {
        if (data_ == nullptr && size() != 0) throw_null_data();
    }
    [[noreturn]] void throw_null_data() const;
    [[noreturn]] void throw_dtype_mismatch(DataType requested) const;

    void* data_ = nullptr;
};

/// "(2, 3, 4)": a shape as text, for messages.
[[nodiscard]] std::string to_string(std::span<const std::int64_t> extents);
/// "f32 (2, 3) strides (3, 1)": a layout as text, for messages and logs.
[[nodiscard]] std::string to_string(const TensorLayout& layout);

}  // namespace gpumath
