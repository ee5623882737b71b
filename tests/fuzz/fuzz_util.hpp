// SPDX-License-Identifier: Apache-2.0
// The validation fuzz tests' shared parts: the seed and iteration count (GPUMATH_FUZZ_SEED,
// GPUMATH_FUZZ_ITERATIONS), a generator of hostile values (Fuzzer), and the classification of a
// call's outcome (classify: passed validation, rejected naming an operand, or a failure).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/error.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>

#include "common/test_util.hpp"

namespace gpumath::test::fuzz {

inline std::uint64_t fuzz_seed() {
    if (const char* s = std::getenv("GPUMATH_FUZZ_SEED")) return std::strtoull(s, nullptr, 10);
    return 20261203;
}

inline int iterations(int base) {
    if (const char* s = std::getenv("GPUMATH_FUZZ_ITERATIONS")) return std::max(1, std::atoi(s));
    return base;
}

/// x * y, or INT64_MAX where the product overflows: huge extents make strides past what a layout
/// may address, which TensorLayout must reject (a generator itself must not overflow).
inline std::int64_t times(std::int64_t x, std::int64_t y) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(x, y, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

class Fuzzer {
public:
    explicit Fuzzer(std::uint64_t seed) : rng_(seed) {}

    int below(int n) { return int(rng_() % std::uint64_t(n)); }
    bool chance(int percent) { return below(100) < percent; }
    /// A hostile call draws out-of-range enums, negative or huge extents, odd strides and
    /// misaligned pointers; a tame one only plausible values, so that deep checks are reached.
    void next_call() { hostile_ = chance(50); }
    bool hostile(int percent) { return hostile_ && chance(percent); }
    [[nodiscard]] bool hostile_call() const noexcept { return hostile_; }
    template <class T, std::size_t N>
    T pick(const std::array<T, N>& values) {
        return values[std::size_t(below(int(N)))];
    }

    /// Mostly valid enumerators, sometimes values past the last one.
    template <class E>
    E enum_value(int count) {
        return static_cast<E>(!hostile(15) ? below(count) : count + below(256 - count));
    }

    DataType dtype() { return enum_value<DataType>(data_type_count); }

    std::int64_t extent() {
        static constexpr std::array<std::int64_t, 16> small{1, 1, 2, 3, 4, 7, 8, 16, 17, 32, 33, 64, 128, 0, 5, 48};
        if (hostile(3)) return -1 - below(5);
        if (hostile(2)) return std::int64_t(1) << (40 + below(23));
        return pick(small);
    }

    /// `rank` extents whose product is about 2^bits (each a power of two, some 1): tensors at the edge
    /// of what int64 element and byte counts hold, where products of extents and strides overflow.
    std::vector<std::int64_t> big_shape(int rank, int bits) {
        std::vector<std::int64_t> shape(std::size_t(rank), 1);
        for (int b = 0; b < bits && rank > 0; ++b) {
            auto& e = shape[std::size_t(below(rank))];
            if (e < (std::int64_t(1) << 61)) e *= 2;
        }
        return shape;
    }

    /// A layout built from random parts: usually well formed, sometimes with negative, overflowing
    /// or mismatched extents and strides. Construction itself may throw (that is validated too).
    TensorLayout layout(int rank_hint = -1) {
        const int rank = rank_hint >= 0 ? rank_hint : (hostile(3) ? 9 : below(5));
        std::vector<std::int64_t> shape, strides;
        for (int i = 0; i < rank; ++i) shape.push_back(extent());
        const int kind = hostile_ ? below(10) : below(7);
        if (kind < 5) {
            // row-major (no strides)
        } else if (kind < 7 && rank >= 2) {
            // column-major in the last two dimensions, possibly padded
            strides.assign(std::size_t(rank), 0);
            const std::int64_t pad = chance(50) ? 0 : below(9);
            const std::int64_t rows = std::max<std::int64_t>(shape[std::size_t(rank - 2)], 1) + pad;
            strides[std::size_t(rank - 2)] = 1;
            strides[std::size_t(rank - 1)] = rows;
            std::int64_t s = times(rows, std::max<std::int64_t>(shape[std::size_t(rank - 1)], 1));
            for (int i = rank - 3; i >= 0; --i) {
                strides[std::size_t(i)] = chance(20) ? 0 : s;
                s = times(s, std::max<std::int64_t>(shape[std::size_t(i)], 1));
            }
        } else {
            static constexpr std::array<std::int64_t, 8> odd{0, 1, 2, 3, -1, 1000, std::int64_t(1) << 61, 7};
            const int n = chance(10) ? rank + 1 - below(2) * 2 : rank;
            for (int i = 0; i < std::max(n, 0); ++i) strides.push_back(pick(odd));
        }
        return TensorLayout(dtype(), std::span<const std::int64_t>(shape), std::span<const std::int64_t>(strides));
    }

    /// A fake device pointer: aligned, misaligned by a few bytes, or null.
    void* pointer(int slot) {
        if (hostile(3)) return nullptr;
        const std::uintptr_t base = (std::uintptr_t(slot) + 1) << 32;
        static constexpr std::array<std::uintptr_t, 8> offsets{0, 0, 0, 256, 16, 8, 4, 1};
        const std::uintptr_t offset = !hostile(30) ? 0 : pick(offsets) + std::uintptr_t(chance(20) ? below(8) : 0);
        return reinterpret_cast<void*>(base + offset);
    }

    TensorView view(int slot, const TensorLayout& layout) {
        void* p = pointer(slot);
        if (hostile(15)) p = pointer(slot - 1 > 0 ? slot - 1 : slot);  // sometimes overlaps another operand
        return TensorView(p, layout);
    }

    Scalar scalar() {
        static constexpr std::array<double, 8> v{0.0, 1.0, -2.5, 3.0, 0.5, 1e300, 2147483648.0, -7.0};
        Scalar s = pick(v);
        if (hostile(5)) s.real = std::numeric_limits<double>::quiet_NaN();
        if (hostile(5)) s.imag = 1.0;
        return s;
    }

    std::mt19937_64& rng() { return rng_; }

private:
    std::mt19937_64 rng_;
    bool hostile_ = true;
};

/// Outcome counters, so the test shows what the inputs reached.
struct Tally {
    int passed = 0;    // validation passed (stopped at "no device", or built without error)
    int rejected = 0;  // InvalidArgument / NotSupported naming an operand
    int compiled = 0;  // CompileError / LinkError with a log
};

/// True when `what` reads "<api>: <operand or field>: ...": the text after the API name starts
/// with an operand or field (a, b, d, bias, in, out, options.kind, scales.a, LaunchConfig::grid,
/// ProgramOptions::arch, inputs[2], ProgramOptions::defines["N"], "a, b", ...) and a colon. A grouped product's message
/// may put the group first ("group 3: a: ...", "all groups (strided-batched): a, b: ...").
inline bool names_an_operand(std::string_view what) {
    const auto first = what.find(": ");
    if (first == std::string_view::npos) return false;
    std::string_view rest = what.substr(first + 2);
    constexpr std::string_view all_groups = "all groups (strided-batched): ";
    if (rest.starts_with(all_groups)) rest.remove_prefix(all_groups.size());
    else if (rest.starts_with("group ")) {
        const auto digits = rest.find_first_not_of("0123456789", 6);
        if (digits != 6 && digits != std::string_view::npos && rest.substr(digits).starts_with(": "))
            rest.remove_prefix(digits + 2);
    }
    auto colon = rest.find(": ");
    // A field keyed by a caller's string quotes the key in brackets (ProgramOptions::defines["N"],
    // ProgramOptions::headers["h.h"]): the key is the caller's text, so the field ends at the "\"]: "
    // that closes it, and the name before the key is what is checked.
    if (const auto open = rest.find("[\""); open != std::string_view::npos && open < colon) {
        if (rest.find("\"]: ", open + 2) == std::string_view::npos) return false;
        colon = open;
    }
    if (colon == std::string_view::npos || colon == 0 || colon > 48) return false;
    for (char ch : rest.substr(0, colon))
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == ',' || ch == ' ' ||
              ch == '[' || ch == ']' || ch == ':'))
            return false;
    return true;
}

/// Runs `f`, classifying its outcome; any other outcome fails the test with the iteration number.
/// True when the call passed validation (returned, or stopped at the device).
template <class F>
bool classify(const char* target, int iteration, Tally& tally, F&& f) {
    // InvalidArgument and NotSupported: rejected, and the message must name what was wrong.
    auto rejected = [&](const Error& e) {
        ++tally.rejected;
        if (std::getenv("GPUMATH_FUZZ_VERBOSE")) std::printf("%s #%d: %s\n", target, iteration, e.what());
        EXPECT_TRUE(names_an_operand(e.what())) << target << " #" << iteration << ": " << e.what();
    };
    try {
        f();
        ++tally.passed;
        return true;
    } catch (const InvalidArgument& e) {
        rejected(e);
    } catch (const NotSupported& e) {
        rejected(e);
    } catch (const CudaError& e) {
        // Validation passed and the call reached the device: on a machine without one, that is the
        // expected stop; with one, a fake pointer may be refused by the driver.
        ++tally.passed;
        if (!test::has_gpu()) {
            EXPECT_NE(std::string_view(e.what()).find("no CUDA driver/device"), std::string_view::npos)
                << target << " #" << iteration << ": " << e.what();
        }
        return true;
    } catch (const CompileError& e) {
        ++tally.compiled;
    } catch (const LinkError& e) {
        ++tally.compiled;
    } catch (const Error& e) {
        ADD_FAILURE() << target << " #" << iteration << ": unexpected gpumath::Error: " << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << target << " #" << iteration << ": a std:: exception escaped: " << e.what();
    }
    return false;
}

inline void report(const char* target, std::uint64_t seed, int n, const Tally& t) {
    std::printf("[ fuzz     ] %s: seed %llu, %d calls: %d passed validation, %d rejected, %d compile/link errors\n",
                target, static_cast<unsigned long long>(seed), n, t.passed, t.rejected, t.compiled);
}

}  // namespace gpumath::test::fuzz
