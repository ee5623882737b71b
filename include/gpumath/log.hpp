// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace gpumath {

/// Verbosity of gpumath's log, written to stderr. The initial level comes from the environment
/// variable GPUMATH_LOG_LEVEL (off, error, warn, info, debug; default warn).
enum class LogLevel { off = 0, error = 1, warn = 2, info = 3, debug = 4 };

/// The current level.
[[nodiscard]] LogLevel log_level() noexcept;
/// Changes the level for the whole process (thread-safe). InvalidArgument when `level` is not
/// one of LogLevel's enumerators (e.g. `LogLevel(9)`); the level is then left unchanged.
void set_log_level(LogLevel level);
/// Parses "off", "error", "warn", "info", "debug" (case-insensitive) or "0".."4";
/// InvalidArgument otherwise.
[[nodiscard]] LogLevel parse_log_level(std::string_view text);
/// True when messages at `level` are written (never for `off` or a value that is none of the levels).
[[nodiscard]] inline bool log_enabled(LogLevel level) noexcept {
    return static_cast<int>(level) >= static_cast<int>(LogLevel::error) &&
           static_cast<int>(level) <= static_cast<int>(log_level());
}
/// Writes one line "gpumath [level] message" (all of `message`, whatever its length) to stderr if
/// `level` is enabled; a value that is none of the levels error..debug writes nothing.
void log(LogLevel level, std::string_view message) noexcept;

}  // namespace gpumath
