// SPDX-License-Identifier: Apache-2.0
// Private: the one range check of an enum that comes from a user (DataType, Epilog, FFTKind,
// CodeType, ...). A value cast from an out-of-range integer is InvalidArgument naming the field,
// the value and the enumerators, whose names come from the enum's own to_string, so the message
// cannot drift from the enum.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

#include "detail/status.hpp"

namespace gpumath::detail {

/// "a, b, c": the names of E's first `count` enumerators.
template <class E>
std::string enumerator_names(int count) {
    std::string names;
    for (int i = 0; i < count; ++i) {
        if (i > 0) names += ", ";
        names += to_string(static_cast<E>(i));
    }
    return names;
}

/// InvalidArgument unless `value` is one of E's enumerators 0..count-1: "<field>: 9 is not
/// <type>; allowed: ..." (`type` with its article, e.g. "an FFTKind"). Cheap when it passes.
template <class E>
void check_enum(E value, int count, std::string_view type, const char* field, const char* api) {
    const auto v = static_cast<long long>(static_cast<std::underlying_type_t<E>>(value));
    if (v >= 0 && v < count) [[likely]]
        return;
    throw_invalid(fmt::format("{}: {} is not {}; allowed: {}", field, v, type, enumerator_names<E>(count)), api);
}

}  // namespace gpumath::detail
