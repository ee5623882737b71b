// SPDX-License-Identifier: Apache-2.0
// A fuzz target: one parser of bytes from outside gpumath, fed arbitrary input. Every target
// registers itself, and two drivers run them: libfuzzer_main.cpp makes each one a coverage-guided
// fuzzer (the `fuzz` preset: clang with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer;
// scripts/fuzz.sh), and tests/fuzz/targets_test.cpp replays their seeds and the crashes kept in
// tests/fuzz/regressions/<target>/ in the test suite.
//
// A body takes any bytes. gpumath's typed errors are the expected answer to hostile input and are
// caught here; anything else escaping (std::bad_alloc, a standard library exception), a failed
// GPUMATH_FUZZ_CHECK, a sanitizer report, a crash or a hang is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/error.hpp>

namespace gpumath::fuzz {

/// A target's body.
using Body = void (*)(std::span<const std::uint8_t>);

/// A registered target (the test-suite build).
struct Target {
    std::string name;
    Body body = nullptr;
};

/// Every target linked into this program.
inline std::vector<Target>& targets() {
    static std::vector<Target> all;
    return all;
}

/// The registered target `name`, or null.
inline Body find(std::string_view name) {
    for (const Target& t : targets())
        if (t.name == name) return t.body;
    return nullptr;
}

/// Registers a target at start-up.
struct Registration {
    Registration(const char* name, Body body) { targets().push_back({name, body}); }
};

/// The input as text.
inline std::string_view text(std::span<const std::uint8_t> data) {
    return {reinterpret_cast<const char*>(data.data()), data.size()};
}

/// Runs `f`, taking gpumath's typed errors as answers.
template <class F>
void answered(F&& f) {
    try {
        f();
    } catch (const gpumath::Error&) {}
}

/// Splits the input into fields at `separator` (at most `max` fields; the last takes the rest).
inline std::vector<std::string> fields(std::span<const std::uint8_t> data, char separator, std::size_t max) {
    std::vector<std::string> out;
    std::string_view rest = text(data);
    while (out.size() + 1 < max) {
        const std::size_t at = rest.find(separator);
        if (at == std::string_view::npos) break;
        out.emplace_back(rest.substr(0, at));
        rest.remove_prefix(at + 1);
    }
    out.emplace_back(rest);
    return out;
}

}  // namespace gpumath::fuzz

/// Aborts with `what` when `condition` is false: a broken invariant of what a parser returned.
#define GPUMATH_FUZZ_CHECK(condition, what)                                                                 \
    do {                                                                                                    \
        if (!(condition)) {                                                                                 \
            std::fprintf(stderr, "gpumath fuzz: %s (%s) at %s:%d\n", what, #condition, __FILE__, __LINE__); \
            std::abort();                                                                                   \
        }                                                                                                   \
    } while (0)

/// Defines and registers the target `name`; its body follows as a function body over `data`.
#define GPUMATH_FUZZ_TARGET(name)                                                                             \
    static void gpumath_fuzz_##name(std::span<const std::uint8_t> data);                                      \
    static const ::gpumath::fuzz::Registration gpumath_fuzz_registration_##name{#name, &gpumath_fuzz_##name}; \
    static void gpumath_fuzz_##name(std::span<const std::uint8_t> data)
