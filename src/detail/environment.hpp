// SPDX-License-Identifier: Apache-2.0
// Private to the compiled part: reading numbers from environment variables. A value that does not
// parse is reported once in the log and the default is used: a typo in the environment must not
// stop a program, nor be silently half-read.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpumath::detail {

/// A count written in decimal with an optional binary unit: "4096", "512K", "64M", "1G", "2GiB",
/// "1T" (K = 1024, ...; "B" and "iB" may follow the letter; case-insensitive; spaces around are
/// allowed). Nothing for anything else: signs, fractions, hex, trailing text, an empty string, or
/// a value over 2^64 - 1.
[[nodiscard]] std::optional<std::uint64_t> parse_count(std::string_view text) noexcept;

/// The count the environment variable `name` holds, read with parse_count and kept to
/// [`min`, `max`]; `fallback` when the variable is unset or empty. A value that does not parse, or
/// lies outside the range, logs a warning naming the variable, the value and what is allowed, and
/// gives `fallback`.
[[nodiscard]] std::uint64_t env_count(const char* name, std::uint64_t fallback, std::uint64_t min,
                                      std::uint64_t max) noexcept;

}  // namespace gpumath::detail
