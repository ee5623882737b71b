// SPDX-License-Identifier: Apache-2.0
// TensorLayout and TensorView: validation of layouts and the texts of their errors.
#include <gpumath/layout.hpp>

#include <limits>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "detail/status.hpp"

#include "detail/enum_check.hpp"
#include "detail/layout_check.hpp"

namespace gpumath {
namespace detail {

void validate_layout(DataType dtype, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides,
                     const char* api, std::string_view field_prefix) {
    if (field_prefix.empty()) check_enum(dtype, data_type_count, "a DataType", "dtype", api);
    else check_enum(dtype, data_type_count, "a DataType", fmt::format("{}dtype", field_prefix).c_str(), api);
    if (shape.size() > std::size_t(max_rank))
        throw_invalid(fmt::format("{}shape: rank {} given, at most {} allowed", field_prefix, shape.size(), max_rank),
                      api);
    if (!strides.empty() && strides.size() != shape.size())
        throw_invalid(fmt::format("{}strides: {} values given for a shape of rank {} ({}); pass one stride per "
                                  "dimension or none for row-major",
                                  field_prefix, strides.size(), shape.size(), to_string(shape)),
                      api);
    constexpr std::int64_t limit = std::numeric_limits<std::int64_t>::max();
    std::int64_t count = 1;
    bool empty = false;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0)
            throw_invalid(fmt::format("{}shape: extent {} of dimension {} in {} is negative; extents must be >= 0",
                                      field_prefix, shape[i], i, to_string(shape)),
                          api);
        if (shape[i] == 0) empty = true;
        else if (count > limit / shape[i])
            throw_invalid(
                fmt::format("{}shape: {} has more elements than fit in int64", field_prefix, to_string(shape)), api);
        else count *= shape[i];
    }
    const auto elem = std::int64_t(size_of(dtype));
    if (!empty && count > limit / elem)
        throw_invalid(fmt::format("{}shape: {} of {} needs more bytes than fit in int64", field_prefix,
                                  to_string(shape), to_string(dtype)),
                      api);
    if (strides.empty()) return;
    std::int64_t last = 0;
    for (std::size_t i = 0; i < strides.size(); ++i) {
        if (strides[i] < 0)
            throw_invalid(fmt::format("{}strides: stride {} of dimension {} in {} is negative; strides must be >= 0 "
                                      "(0 broadcasts)",
                                      field_prefix, strides[i], i, to_string(strides)),
                          api);
        if (empty) continue;
        // A dimension of extent 1 never steps, but code that turns strides into bytes (batch
        // strides, byte offsets) must not overflow either.
        if (strides[i] > limit / elem)
            throw_invalid(
                fmt::format("{}strides: stride {} of dimension {} in {} is more bytes of {} than fit in int64",
                            field_prefix, strides[i], i, to_string(strides), to_string(dtype)),
                api);
        const std::int64_t extent = shape[i] - 1;
        // Keep (last + 1) * elem, the span in bytes, within int64.
        if (extent > 0 && strides[i] > (limit / elem - 1 - last) / extent)
            throw_invalid(fmt::format("{}strides: {} with shape {} address more bytes than fit in int64", field_prefix,
                                      to_string(strides), to_string(shape)),
                          api);
        last += extent * strides[i];
    }
}

void validate_layout(DataType dtype, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides) {
    validate_layout(dtype, shape, strides, "TensorLayout", "");
}

}  // namespace detail

std::string to_string(std::span<const std::int64_t> extents) {
    if (extents.size() == 1) return fmt::format("({},)", extents[0]);
    return fmt::format("({})", fmt::join(extents, ", "));
}

std::string to_string(const TensorLayout& layout) {
    return fmt::format("{} {} strides {}", to_string(layout.dtype()), to_string(layout.shape()),
                       to_string(layout.strides()));
}

TensorLayout TensorLayout::transposed() const {
    if (rank_ < 2)
        detail::throw_invalid(
            fmt::format("rank: {}; a layout needs two last dimensions to swap; transpose a matrix (rank >= 2)", rank_),
            "TensorLayout::transposed");
    TensorLayout t = *this;
    std::swap(t.shape_[std::size_t(rank_ - 2)], t.shape_[std::size_t(rank_ - 1)]);
    std::swap(t.strides_[std::size_t(rank_ - 2)], t.strides_[std::size_t(rank_ - 1)]);
    return t;
}

TensorLayout TensorLayout::transposed(int axis0, int axis1) const {
    const auto resolve = [&](int axis, const char* name) {
        if (axis < -rank_ || axis >= rank_)
            detail::throw_invalid(fmt::format("{}: {} is not an axis of a rank-{} layout; use -{} to {}", name, axis,
                                              rank_, rank_, rank_ - 1),
                                  "TensorLayout::transposed");
        return std::size_t(axis < 0 ? axis + rank_ : axis);
    };
    const std::size_t a = resolve(axis0, "axis0"), b = resolve(axis1, "axis1");
    TensorLayout t = *this;
    std::swap(t.shape_[a], t.shape_[b]);
    std::swap(t.strides_[a], t.strides_[b]);
    return t;
}

void TensorView::throw_null_data() const {
    detail::throw_invalid(fmt::format("data: null pointer for a non-empty tensor of shape {} ({} elements); "
                                      "pass device memory, or an empty shape",
                                      to_string(shape()), size()),
                          "TensorView");
}

void TensorView::throw_dtype_mismatch(DataType requested) const {
    detail::throw_invalid(
        fmt::format("data_as: the view holds {} elements, {} was requested", to_string(dtype()), to_string(requested)),
        "TensorView::data_as");
}

}  // namespace gpumath
