// SPDX-License-Identifier: Apache-2.0
// Private: the name of a C++ type as text, at compile time (for launch argument errors).
#pragma once

#include <string_view>

namespace gpumath::detail {

/// The spelling of `T` as the compiler prints it, e.g. "float", "const int*", "std::size_t" may read
/// "long unsigned int". Computed at compile time from the function signature; no RTTI.
template <class T>
[[nodiscard]] constexpr std::string_view type_name() noexcept {
#if defined(__clang__) || defined(__GNUC__)
    constexpr std::string_view sig = __PRETTY_FUNCTION__;
    // GCC: "... type_name() [with T = float; std::string_view = ...]"; Clang: "... type_name() [T = float]".
    constexpr std::size_t start = sig.find("T = ") + 4;
    constexpr std::size_t semi = sig.find(';', start);
    constexpr std::size_t end = semi != std::string_view::npos ? semi : sig.rfind(']');
    return sig.substr(start, end - start);
#elif defined(_MSC_VER)
    constexpr std::string_view sig = __FUNCSIG__;
    constexpr std::size_t start = sig.find("type_name<") + 10;
    constexpr std::size_t end = sig.rfind(">(void)");
    return sig.substr(start, end - start);
#else
    return "(unknown type)";
#endif
}

}  // namespace gpumath::detail
