// SPDX-License-Identifier: Apache-2.0
/// @file
/// Ranges of integers as gpumath's signatures take them (shapes, group sizes): the concept and the
/// conversion to int64 that public inline code uses. Not included by users directly.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <ranges>
#include <string>
#include <vector>

namespace gpumath::detail {

/// A sized range of integers: `std::vector<int>`, `std::array<std::size_t, 3>`, a span, ...
template <class R>
concept IntegralRange = std::ranges::sized_range<R> && std::integral<std::ranges::range_value_t<R>>;

/// InvalidArgument: `field`[`index`] holds `value`, which does not fit in int64 (defined in src/).
[[noreturn]] void throw_not_int64(const char* field, std::size_t index, unsigned long long value, const char* api);

/// The values of `values` as int64, in order. InvalidArgument naming `field` for an unsigned value
/// past INT64_MAX.
template <IntegralRange R>
[[nodiscard]] std::vector<std::int64_t> to_int64(const R& values, const char* field, const char* api) {
    std::vector<std::int64_t> out;
    out.reserve(std::size_t(std::ranges::size(values)));
    for (const auto v : values) {
        if constexpr (std::is_unsigned_v<std::remove_cvref_t<decltype(v)>>) {
            if (static_cast<unsigned long long>(v) > static_cast<unsigned long long>(INT64_MAX))
                throw_not_int64(field, out.size(), static_cast<unsigned long long>(v), api);
        }
        out.push_back(static_cast<std::int64_t>(v));
    }
    return out;
}

}  // namespace gpumath::detail
