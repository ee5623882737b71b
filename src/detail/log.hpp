// SPDX-License-Identifier: Apache-2.0
// Private to the compiled part: fmt-formatted logging.
#pragma once

#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include <gpumath/log.hpp>

namespace gpumath::detail {

/// Writes "gpumath [level] message\n" to `out`, all of `message` whatever its length; the line
/// `gpumath::log` writes to stderr.
void write_log_line(std::FILE* out, LogLevel level, std::string_view message) noexcept;

template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
    if (!log_enabled(level)) return;
    try {
        gpumath::log(level, fmt::format(format, std::forward<Args>(args)...));
    } catch (...) {  // NOLINT(bugprone-empty-catch): logging must never throw
    }
}

}  // namespace gpumath::detail
