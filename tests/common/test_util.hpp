// SPDX-License-Identifier: Apache-2.0
// Shared by gpumath's tests: GPU skipping, random data, tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gpumath/core/device.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/error.hpp>

namespace gpumath::test {

/// True when a CUDA device is usable.
inline bool has_gpu() { return core::Device::count() > 0; }

/// Skips the current test with a visible reason when there is no GPU.
#define GPUMATH_REQUIRE_GPU()                                                               \
    do {                                                                                    \
        if (!::gpumath::test::has_gpu())                                                    \
            GTEST_SKIP() << "no CUDA driver/device on this machine: this test needs a GPU"; \
    } while (0)

/// A generator seeded from the test's name: fresh per test, reproducible per run.
inline std::mt19937_64 rng_for_test() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "gpumath";
    return std::mt19937_64(std::hash<std::string>{}(name) ^ std::random_device{}());
}

/// n values uniform in [lo, hi), never exactly zero.
template <class T = float>
std::vector<T> random_vector(std::size_t n, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<T> v(n);
    for (auto& x : v) {
        double r = dist(rng);
        if (r == 0.0) r = 0.5;
        if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
            double im = dist(rng);
            x = T(static_cast<typename T::value_type>(r), static_cast<typename T::value_type>(im == 0.0 ? 0.25 : im));
        } else {
            x = static_cast<T>(r);
        }
    }
    return v;
}

/// ||a - b|| / ||b|| over two equally long ranges (NaN if any element is NaN).
template <class A, class B>
double relative_error(const A& a, const B& b) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
        const auto d = std::complex<double>(a[i]) - std::complex<double>(b[i]);
        num += std::norm(d);
        den += std::norm(std::complex<double>(b[i]));
        if (std::isnan(std::abs(std::complex<double>(a[i])))) return NAN;
    }
    return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

/// Asserts that `f` throws `E` and that its message contains every string in `needles`.
template <class E, class F>
void expect_throw_with(F&& f, const std::vector<std::string>& needles) {
    try {
        f();
        ADD_FAILURE() << "expected an exception, none was thrown";
    } catch (const E& e) {
        const std::string what = e.what();
        for (const auto& n : needles)
            EXPECT_NE(what.find(n), std::string::npos) << "message: " << what << "\nmissing: " << n;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type; message: " << e.what();
    }
}

/// The same with the needles written in place: `expect_throw_with<E>(f, {"api", "operand"})`.
template <class E, class F>
void expect_throw_with(F&& f, std::initializer_list<std::string> needles) {
    expect_throw_with<E>(std::forward<F>(f), std::vector<std::string>(needles));
}

/// Runs `work(t, stream)` on `threads` threads at once, thread t on `streams[t % streams.size()]`,
/// each synchronizing its stream when its work is enqueued. Returns what each thread threw (empty
/// where it threw nothing).
template <class Streams, class Work>
std::vector<std::string> run_on_threads(int threads, const Streams& streams, Work&& work) {
    std::vector<std::string> errors(static_cast<std::size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            try {
                const core::StreamRef s = streams[std::size_t(t) % streams.size()];
                work(t, s);
                s.synchronize();
            } catch (const std::exception& e) {
                errors[std::size_t(t)] = e.what();
            }
        });
    for (auto& th : pool) th.join();
    return errors;
}

}  // namespace gpumath::test
