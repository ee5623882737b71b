// SPDX-License-Identifier: Apache-2.0
/// @file
/// The log on stderr: its level (LogLevel, GPUMATH_LOG_LEVEL) and writing to it.
#pragma once

#include <string_view>

namespace gpumath {

/// Verbosity of gpumath's log, written to stderr. The initial level comes from the environment
/// variable GPUMATH_LOG_LEVEL (off, error, warn, info, debug; default warn).
enum class LogLevel {
    off = 0,    ///< Nothing is written.
    error = 1,  ///< Errors that cannot be thrown, such as a DLPack deleter that threw.
    warn = 2,   ///< Also settings or files ignored and slower paths taken instead (the default).
    info = 3,   ///< Also choices measured or made at run time (FFT callbacks fused or separate).
    debug = 4   ///< Also each plan and algorithm chosen for a product.
};

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
