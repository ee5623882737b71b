// SPDX-License-Identifier: Apache-2.0
// A feed-forward block split over every GPU of this machine (tensor parallelism, one rank per GPU,
// all driven by this process): y = GELU(x @ W1 + b1) @ W2 + b2, in bf16.
//
//   - up-projection, column-parallel: every rank holds x whole and a slice of W1's columns; its
//     h slice is exact, GELU and bias included;
//   - down-projection, row-parallel: every rank multiplies its h slice by the matching rows of W2
//     and the partial sums are all-reduced on NCCL, pipelined in 4 chunks of tokens; rank 0 adds b2.
//
// Every rank's y is checked against the same block computed by one GPU with gpumath::matmul.
// With one GPU the communicator has one rank and the collectives copy; the numbers still check.
//
// Without a GPU (or without NCCL) it validates the split problem, says why it stops, and exits 77.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <cuda_bf16.h>

#include <gpumath/core.hpp>
#include <gpumath/dist.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::Epilog;
using gpumath::TensorLayout;
using gpumath::TensorView;
namespace core = gpumath::core;
namespace dist = gpumath::dist;

namespace {

std::vector<__nv_bfloat16> random_bf16(std::size_t n, std::mt19937& rng, float scale) {
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<__nv_bfloat16> v(n);
    for (auto& x : v) x = __float2bfloat16(d(rng));
    return v;
}

/// Columns [first, first + count) of a row-major (rows, cols) host matrix, as its own matrix.
std::vector<__nv_bfloat16> columns(const std::vector<__nv_bfloat16>& m, std::int64_t cols, std::int64_t first,
                                   std::int64_t count) {
    const std::int64_t rows = std::int64_t(m.size()) / cols;
    std::vector<__nv_bfloat16> out(std::size_t(rows * count));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < count; ++c) out[std::size_t(r * count + c)] = m[std::size_t(r * cols + first + c)];
    return out;
}

/// Largest |got - want| over the largest |want|.
double difference(const std::vector<__nv_bfloat16>& got, const std::vector<__nv_bfloat16>& want) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double w = __bfloat162float(want[i]);
        worst = std::max(worst, std::abs(double(__bfloat162float(got[i])) - w));
        scale = std::max(scale, std::abs(w));
    }
    return worst / scale;
}

/// One rank's weights, activations and stream, on its device.
struct Rank {
    core::Stream stream;
    gpumath::Tensor x, w1, b1, h, w2, b2, y_partial, y;
};

}  // namespace

int main() try {
    constexpr std::int64_t tokens = 512, hidden = 1024, ffn = 4096;
    const int gpus = core::Device::count();
    std::printf("feed-forward block: %lld tokens, hidden %lld, ffn %lld, bf16, over %d GPU(s)\n",
                static_cast<long long>(tokens), static_cast<long long>(hidden), static_cast<long long>(ffn), gpus);
    const int p = std::max(gpus, 1);
    if (ffn % p != 0) {
        std::printf("ffn %lld does not split over %d GPUs\n", static_cast<long long>(ffn), p);
        return 77;
    }
    const std::int64_t slice = ffn / p;

    // The split problem is validated without a GPU: each rank's layouts and the collectives.
    const TensorLayout x_layout(DataType::bf16, {tokens, hidden});
    const TensorLayout w1_layout(DataType::bf16, {hidden, slice});
    const TensorLayout h_layout(DataType::bf16, {tokens, slice});
    const TensorLayout w2_layout(DataType::bf16, {slice, hidden});
    if (gpus == 0) {
        (void)gpumath::Matmul(x_layout, w1_layout, {.epilog = Epilog::gelu_bias});
        (void)gpumath::Matmul(h_layout, w2_layout, {.epilog = Epilog::bias});
        std::printf("validated the rank products; running them needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }
    try {
        std::printf("NCCL %d, loaded at run time\n", dist::nccl_version());
    } catch (const gpumath::NcclError& e) {
        std::printf("%s\nthis example needs NCCL\n", e.what());
        return 77;
    }

    dist::Communicator comm = dist::Communicator::all_devices();
    dist::Matmul up(comm, x_layout, w1_layout, {.epilog = Epilog::gelu_bias},
                    {.parallelism = dist::Parallelism::column});
    dist::Matmul down(
        comm, h_layout, w2_layout, {.epilog = Epilog::bias},
        {.parallelism = dist::Parallelism::row, .collective = dist::OutputCollective::all_reduce, .chunks = 4});

    std::mt19937 rng(2026);
    const auto x = random_bf16(std::size_t(tokens * hidden), rng, 1.0f);
    const auto w1 = random_bf16(std::size_t(hidden * ffn), rng, 0.05f);
    const auto b1 = random_bf16(std::size_t(ffn), rng, 0.5f);
    const auto w2 = random_bf16(std::size_t(ffn * hidden), rng, 0.05f);
    const auto b2 = random_bf16(std::size_t(hidden), rng, 0.5f);

    std::vector<Rank> ranks;
    for (int i = 0; i < comm.local_size(); ++i) {
        core::Device(comm.device(i)).set_current();  // the rank's stream and tensors live there
        const std::int64_t first = std::int64_t(comm.rank(i)) * slice;
        Rank r;
        r.x = gpumath::Tensor::from_host(x, {tokens, hidden}, r.stream);
        r.w1 = gpumath::Tensor::from_host(columns(w1, ffn, first, slice), {hidden, slice}, r.stream);
        r.b1 = gpumath::Tensor::from_host(std::vector<__nv_bfloat16>(b1.begin() + first, b1.begin() + first + slice),
                                          {slice}, r.stream);
        // W2's rows [first, first + slice) are contiguous in row-major W2.
        r.w2 = gpumath::Tensor::from_host(
            std::vector<__nv_bfloat16>(w2.begin() + first * hidden, w2.begin() + (first + slice) * hidden),
            {slice, hidden}, r.stream);
        r.b2 = gpumath::Tensor::from_host(b2, {hidden}, r.stream);
        r.h = gpumath::Tensor::empty(DataType::bf16, {tokens, slice}, r.stream);
        r.y_partial = gpumath::Tensor::empty(DataType::bf16, {tokens, hidden}, r.stream);
        r.y = gpumath::Tensor::empty(DataType::bf16, {tokens, hidden}, r.stream);
        ranks.push_back(std::move(r));
    }

    std::vector<dist::RankOperands> up_ops, down_ops;
    for (auto& r : ranks) {
        up_ops.push_back({r.x, r.w1, r.h, {}, {.bias = r.b1.view()}, r.stream});
        down_ops.push_back({r.h, r.w2, r.y_partial, r.y, {.bias = r.b2.view()}, r.stream});
    }
    (void)up.execute(up_ops);
    (void)down.execute(down_ops);

    // The same block on one GPU.
    core::Device(0).set_current();
    core::Stream stream;
    const auto dx = gpumath::Tensor::from_host(x, {tokens, hidden}, stream);
    const auto dw1 = gpumath::Tensor::from_host(w1, {hidden, ffn}, stream);
    const auto db1 = gpumath::Tensor::from_host(b1, {ffn}, stream);
    const auto dw2 = gpumath::Tensor::from_host(w2, {ffn, hidden}, stream);
    const auto db2 = gpumath::Tensor::from_host(b2, {hidden}, stream);
    const gpumath::Tensor h = gpumath::matmul(dx, dw1, {.bias = db1.view()}, {.epilog = Epilog::gelu_bias}, stream);
    const gpumath::Tensor y = gpumath::matmul(h, dw2, {.bias = db2.view()}, {.epilog = Epilog::bias}, stream);
    const auto want = y.to_host<__nv_bfloat16>(stream);

    double worst = 0;
    for (int i = 0; i < comm.local_size(); ++i) {
        core::Device(comm.device(i)).set_current();
        const double e = difference(ranks[std::size_t(i)].y.to_host<__nv_bfloat16>(ranks[std::size_t(i)].stream), want);
        std::printf("rank %d (GPU %d): max difference %.2e of max |y| from one GPU\n", comm.rank(i), comm.device(i), e);
        worst = std::max(worst, e);
    }
    // Partial sums rounded to bf16 before the reduction: expect differences of bf16's precision.
    const bool ok = worst < 3e-2;
    std::printf("%s\n", ok ? "results match" : "RESULTS DIFFER");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "12_dist_tensor_parallel: %s\n", e.what());
    return 1;
}
