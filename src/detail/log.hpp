// SPDX-License-Identifier: Apache-2.0
// Private to the compiled part: fmt-formatted logging.
#pragma once

#include <fmt/format.h>

#include <gpumath/log.hpp>

namespace gpumath::detail {

template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) noexcept {
    if (!log_enabled(level)) return;
    try {
        gpumath::log(level, fmt::format(format, std::forward<Args>(args)...));
    } catch (...) {  // NOLINT(bugprone-empty-catch): logging must never throw
    }
}

}  // namespace gpumath::detail
