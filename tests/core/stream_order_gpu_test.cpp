// SPDX-License-Identifier: Apache-2.0
// Streams that cannot race silently: a gpumath Stream orders itself against the default stream, so
// a call whose stream is left out sees the work queued on the Stream before it; and a StreamScope
// sends such calls to its stream. Each test queues a long spin on the stream first, so a call that
// did not wait for it would read what the copy behind the spin had not written yet.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <gpumath/gpumath.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

namespace {

class StreamOrder : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::has_gpu()) GTEST_SKIP() << "no CUDA driver/device on this machine: this test needs a GPU";
    }
};

// Keeps `stream` busy for about `ms` milliseconds.
void spin(core::StreamRef stream, double ms) {
    static const core::Module module = core::Program(R"(
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {}
}
)")
                                           .compile(core::CodeType::cubin)
                                           .load();
    const core::Kernel k = module.kernel("spin");
    const auto cycles = static_cast<long long>(ms * 1e-3 * 2.0e9);  // at most 2 GHz: at least `ms`
    core::launch(stream, {.grid = 1, .block = 1}, k, cycles);
}

// a (m x k) and b (k x n) of small integers, and their product in f64.
struct Problem {
    std::int64_t m = 64, k = 48, n = 32;
    std::vector<float> a, b;
    std::vector<double> d;
    Problem() : a(std::size_t(m * k)), b(std::size_t(k * n)), d(std::size_t(m * n), 0.0) {
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(int(i * 7 % 13) - 6);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(int(i * 5 % 11) - 5);
        for (std::int64_t r = 0; r < m; ++r)
            for (std::int64_t c = 0; c < n; ++c)
                for (std::int64_t j = 0; j < k; ++j)
                    d[std::size_t(r * n + c)] += double(a[std::size_t(r * k + j)]) * b[std::size_t(j * n + c)];
    }
};

void expect_product(const Problem& p, const std::vector<float>& got) {
    ASSERT_EQ(got.size(), p.d.size());
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(double(got[i]), p.d[i]) << "element " << i;
}

}  // namespace

TEST_F(StreamOrder, ADefaultedCallAfterADelayedCopyOnAStreamSeesTheCopy) {
    const Problem p;
    // The operands exist and hold poison before the stream's work starts.
    Tensor a = full(DataType::f32, {p.m, p.k}, 1e30, core::StreamRef{});
    Tensor b = Tensor::from_host(p.b, {p.k, p.n}, core::StreamRef{});
    core::StreamRef{}.synchronize();
    core::Stream stream;  // default options
    spin(stream, 200);
    ASSERT_EQ(
        cudaMemcpyAsync(a.data(), p.a.data(), p.a.size() * sizeof(float), cudaMemcpyHostToDevice, stream.handle()),
        cudaSuccess);
    // Left on the default stream: before Streams were blocking by default, this product read the
    // poison while the stream still spun.
    Tensor d = matmul(a, b);
    expect_product(p, d.to_host<float>());
}

TEST_F(StreamOrder, AStreamScopeSendsDefaultedCallsToItsStream) {
    const Problem p;
    core::Stream stream({.non_blocking = true});  // no help from the default stream here
    const core::StreamScope scope(stream);
    EXPECT_EQ(core::current_stream(), core::StreamRef(stream));
    spin(stream, 200);
    Tensor a = Tensor::from_host(p.a, {p.m, p.k});
    Tensor b = Tensor::from_host(p.b, {p.k, p.n});
    Tensor d = matmul(a, b);
    EXPECT_FALSE(stream.ready()) << "the calls were queued behind the spin, on the scope's stream";
    expect_product(p, d.to_host<float>());
}
