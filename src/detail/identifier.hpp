// SPDX-License-Identifier: Apache-2.0
// Private: what the run-time compiled sources may take as the name of a user's function, and the
// checks of text handed to NVRTC, nvJitLink or the driver.
#pragma once

#include <string_view>

#include <fmt/format.h>

#include "detail/status.hpp"

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

/// A C++17 keyword or alternative token ("int", "return", "and"): an identifier in form that no
/// function or namespace can be named. C++17, the dialect gpumath compiles callbacks and epilog
/// functions in: C++20's new keywords ("requires", "concept", "co_await", ...) are names there.
[[nodiscard]] constexpr bool is_keyword(std::string_view s) noexcept {
    constexpr std::string_view keywords[] = {
        "alignas",   "alignof",  "and",      "and_eq",    "asm",          "auto",          "bitand",
        "bitor",     "bool",     "break",    "case",      "catch",        "char",          "char16_t",
        "char32_t",  "class",    "compl",    "const",     "constexpr",    "const_cast",    "continue",
        "decltype",  "default",  "delete",   "do",        "double",       "dynamic_cast",  "else",
        "enum",      "explicit", "export",   "extern",    "false",        "float",         "for",
        "friend",    "goto",     "if",       "inline",    "int",          "long",          "mutable",
        "namespace", "new",      "noexcept", "not",       "not_eq",       "nullptr",       "operator",
        "or",        "or_eq",    "private",  "protected", "public",       "register",      "reinterpret_cast",
        "return",    "short",    "signed",   "sizeof",    "static",       "static_assert", "static_cast",
        "struct",    "switch",   "template", "this",      "thread_local", "throw",         "true",
        "try",       "typedef",  "typeid",   "typename",  "union",        "unsigned",      "using",
        "virtual",   "void",     "volatile", "wchar_t",   "while",        "xor",           "xor_eq",
    };
    for (std::string_view k : keywords)
        if (s == k) return true;
    return false;
}

/// Identifiers that are not keywords joined by "::", optionally after a leading "::" (a
/// namespace-qualified name).
[[nodiscard]] constexpr bool is_qualified_identifier(std::string_view s) noexcept {
    if (s.starts_with("::")) s.remove_prefix(2);
    while (true) {
        const auto pos = s.find("::");
        const std::string_view part = s.substr(0, pos);
        if (!is_identifier(part) || is_keyword(part)) return false;
        if (pos == std::string_view::npos) return true;
        s.remove_prefix(pos + 2);
    }
}

/// InvalidArgument `what`: "name" is not a C++ name, unless `name` is a qualified identifier (it is
/// pasted into generated source).
inline void check_qualified_name(std::string_view name, std::string_view what, const char* api) {
    if (!is_qualified_identifier(name)) [[unlikely]]
        throw_invalid(fmt::format("{}: \"{}\" is not a C++ name (an identifier that is not a keyword, optionally "
                                  "namespace-qualified with ::)",
                                  what, name),
                      api);
}

/// InvalidArgument when `text`, which NVRTC, nvJitLink or the driver read as a C string, holds a NUL
/// byte: everything after it would be silently ignored.
inline void check_no_nul(std::string_view text, std::string_view what, const char* api) {
    if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) [[unlikely]]
        throw_invalid(fmt::format("{}: contains a NUL byte at offset {}; it is read as a C string, so everything "
                                  "after it would be ignored",
                                  what, nul),
                      api);
}

}  // namespace gpumath::detail
