// SPDX-License-Identifier: Apache-2.0
// Private: what the run-time compiled sources may take as the name of a user's function.
#pragma once

#include <string_view>

namespace gpumath::detail {

/// A C++ identifier: a letter or '_', then letters, digits and '_' (ASCII).
[[nodiscard]] constexpr bool is_identifier(std::string_view s) noexcept {
    if (s.empty()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (!(alpha || (i > 0 && digit))) return false;
    }
    return true;
}

/// Identifiers joined by "::", optionally after a leading "::" (a namespace-qualified name).
[[nodiscard]] constexpr bool is_qualified_identifier(std::string_view s) noexcept {
    if (s.starts_with("::")) s.remove_prefix(2);
    while (true) {
        const auto pos = s.find("::");
        if (!is_identifier(s.substr(0, pos))) return false;
        if (pos == std::string_view::npos) return true;
        s.remove_prefix(pos + 2);
    }
}

}  // namespace gpumath::detail
