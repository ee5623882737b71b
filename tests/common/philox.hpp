// SPDX-License-Identifier: Apache-2.0
// A host reference of the random values gpumath documents (docs/tensors.md, "Random tensors"):
// Philox4x32-10 as Salmon, Moraes, Dror and Shaw specify it (checked against Random123's published
// known answers in tests/core/tensor_ops_test.cpp) and the mapping from its words to values.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace gpumath::test {

/// Philox4x32-10 of a four-word counter and a two-word key.
inline std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        const std::uint64_t p0 = std::uint64_t(0xD2511F53u) * c[0], p1 = std::uint64_t(0xCD9E8D57u) * c[2];
        c = {std::uint32_t(p1 >> 32) ^ c[1] ^ k[0], std::uint32_t(p1), std::uint32_t(p0 >> 32) ^ c[3] ^ k[1],
             std::uint32_t(p0)};
    }
    return c;
}

/// Block `j` of the sequence of `seed`: the counter is j (low word first), the key the seed.
inline std::array<std::uint32_t, 4> random_block(std::uint64_t j, std::uint64_t seed) {
    return philox4x32_10({std::uint32_t(j), std::uint32_t(j >> 32), 0, 0},
                         {std::uint32_t(seed), std::uint32_t(seed >> 32)});
}

/// The 32-bit uniform of a word, on (0, 1].
inline float unit_f32(std::uint32_t w) { return float((w >> 8) + 1u) * 0x1p-24f; }

/// The 64-bit uniform of two words (the second the high half), on (0, 1].
inline double unit_f64(std::uint32_t lo, std::uint32_t hi) {
    return double(((std::uint64_t(hi) << 32 | lo) >> 11) + 1) * 0x1p-53;
}

/// Value k of a uniform sequence on (low, high] drawn in 32 bits (f16, bf16, f32 before rounding):
/// low + (high - low) u in f64, kept at most high, rounded to f32.
inline float uniform_f32(std::uint64_t seed, std::uint64_t k, double low, double high) {
    const float u = unit_f32(random_block(k / 4, seed)[k % 4]);
    return float(std::fmin(std::fma(high - low, double(u), low), high));
}

/// Value k of a uniform sequence on (low, high] drawn in 64 bits (f64), kept at most high.
inline double uniform_f64(std::uint64_t seed, std::uint64_t k, double low, double high) {
    const auto w = random_block(k / 2, seed);
    const std::size_t i = 2 * (k % 2);
    return std::fmin(std::fma(high - low, unit_f64(w[i], w[i + 1]), low), high);
}

/// Value k of a normal sequence (Box-Muller), 32-bit draws, before any rounding.
inline double normal_f32(std::uint64_t seed, std::uint64_t k, double mean, double stddev) {
    const auto w = random_block(k / 4, seed);
    const std::size_t first = (k % 4) & ~std::size_t(1);
    const double r = std::sqrt(-2.0 * std::log(double(unit_f32(w[first]))));
    const double angle = 2.0 * M_PI * double(unit_f32(w[first + 1]));
    return mean + stddev * r * (k % 2 == 0 ? std::cos(angle) : std::sin(angle));
}

/// Value k of a normal sequence (Box-Muller), 64-bit draws.
inline double normal_f64(std::uint64_t seed, std::uint64_t k, double mean, double stddev) {
    const auto w = random_block(k / 2, seed);
    const double r = std::sqrt(-2.0 * std::log(unit_f64(w[0], w[1])));
    const double angle = 2.0 * M_PI * unit_f64(w[2], w[3]);
    return mean + stddev * r * (k % 2 == 0 ? std::cos(angle) : std::sin(angle));
}

}  // namespace gpumath::test
