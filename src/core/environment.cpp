// SPDX-License-Identifier: Apache-2.0
#include "detail/environment.hpp"

#include <cctype>
#include <cstdlib>
#include <string>

#include <gpumath/log.hpp>

#include "detail/log.hpp"

namespace gpumath::detail {

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
char lower(char c) { return char(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

std::optional<std::uint64_t> parse_count(std::string_view text) noexcept {
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        const auto digit = std::uint64_t(text[i] - '0');
        if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    if (i == 0) return std::nullopt;
    std::string_view unit = text.substr(i);
    if (unit.empty()) return value;
    int shift = 0;
    switch (lower(unit.front())) {
        case 'k':
            shift = 10;
            break;
        case 'm':
            shift = 20;
            break;
        case 'g':
            shift = 30;
            break;
        case 't':
            shift = 40;
            break;
        case 'b':
            return unit.size() == 1 ? std::optional<std::uint64_t>(value) : std::nullopt;
        default:
            return std::nullopt;
    }
    unit.remove_prefix(1);
    if (!unit.empty() && lower(unit.front()) == 'i') unit.remove_prefix(1);
    if (!unit.empty() && lower(unit.front()) == 'b') unit.remove_prefix(1);
    if (!unit.empty()) return std::nullopt;
    if (value > (UINT64_MAX >> shift)) return std::nullopt;
    return value << shift;
}

std::uint64_t env_count(const char* name, std::uint64_t fallback, std::uint64_t min, std::uint64_t max) noexcept {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    const std::optional<std::uint64_t> value = parse_count(text);
    if (value && *value >= min && *value <= max) return *value;
    log(LogLevel::warn, "{}={} is not a count from {} to {} (digits, optionally followed by K, M, G or T); using {}",
        name, text, min, max, fallback);
    return fallback;
}

}  // namespace gpumath::detail
