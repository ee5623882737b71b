// SPDX-License-Identifier: Apache-2.0
#include <gpumath/log.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <gpumath/error.hpp>

#include "detail/log.hpp"

namespace gpumath {
namespace {

LogLevel level_from_environment() noexcept {
    const char* text = std::getenv("GPUMATH_LOG_LEVEL");
    if (text == nullptr || *text == '\0') return LogLevel::warn;
    try {
        return parse_log_level(text);
    } catch (...) {
        std::fprintf(stderr,
                     "gpumath [warn] GPUMATH_LOG_LEVEL=%s is not one of off, error, warn, info, debug; using warn\n",
                     text);
        return LogLevel::warn;
    }
}

std::atomic<int>& level_storage() noexcept {
    static std::atomic<int> level{static_cast<int>(level_from_environment())};
    return level;
}

constexpr const char* level_name(LogLevel level) noexcept {
    switch (level) {
        case LogLevel::error:
            return "error";
        case LogLevel::warn:
            return "warn";
        case LogLevel::info:
            return "info";
        case LogLevel::debug:
            return "debug";
        case LogLevel::off:
            break;
    }
    return "off";
}

}  // namespace

LogLevel log_level() noexcept { return static_cast<LogLevel>(level_storage().load(std::memory_order_relaxed)); }

void set_log_level(LogLevel level) {
    const int value = static_cast<int>(level);
    if (value < static_cast<int>(LogLevel::off) || value > static_cast<int>(LogLevel::debug))
        throw InvalidArgument(
            fmt::format(
                "set_log_level: level: {} is not a LogLevel (off = 0, error = 1, warn = 2, info = 3, debug = 4)",
                value),
            "set_log_level");
    level_storage().store(value, std::memory_order_relaxed);
}

LogLevel parse_log_level(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (lower == "off" || lower == "0" || lower == "none") return LogLevel::off;
    if (lower == "error" || lower == "1") return LogLevel::error;
    if (lower == "warn" || lower == "warning" || lower == "2") return LogLevel::warn;
    if (lower == "info" || lower == "3") return LogLevel::info;
    if (lower == "debug" || lower == "4") return LogLevel::debug;
    throw InvalidArgument(
        fmt::format("log level: got '{}', expected one of off, error, warn, info, debug (or 0..4)", text),
        "parse_log_level");
}

void log(LogLevel level, std::string_view message) noexcept {
    if (log_enabled(level)) detail::write_log_line(stderr, level, message);
}

void detail::write_log_line(std::FILE* out, LogLevel level, std::string_view message) noexcept {
    // One line at a time, also against other threads' stdio writes to the same stream.
    ::flockfile(out);
    std::fprintf(out, "gpumath [%s] ", level_name(level));
    // fwrite, not "%.*s": an int precision cannot hold a message of 2^31 bytes or more.
    std::fwrite(message.data(), 1, message.size(), out);
    std::fputc('\n', out);
    ::funlockfile(out);
}

}  // namespace gpumath
