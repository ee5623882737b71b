// SPDX-License-Identifier: Apache-2.0
// The tensor utilities on a GPU, against host references written from the rules the docs state
// (using the CUDA headers' host conversions for f16, bf16 and FP8): fill and cast for every dtype
// (pair) and layout (contiguous, transposed, strided), bit-exact copies, random tensors
// (distribution, reproducibility, pieces by offset), previews, and capture and replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <gpumath/gpumath.hpp>

#include "common/philox.hpp"
#include "common/test_util.hpp"

using namespace gpumath;

namespace {

constexpr DataType k_types[] = {DataType::f16, DataType::bf16, DataType::f32,  DataType::f64,
                                DataType::c32, DataType::c64,  DataType::e4m3, DataType::e5m2,
                                DataType::i8,  DataType::i32,  DataType::i64};

class TensorOps : public ::testing::Test {
protected:
    void SetUp() override {
        if (!test::has_gpu()) GTEST_SKIP() << "no CUDA driver/device on this machine: this test needs a GPU";
    }
};

using Bytes = std::vector<unsigned char>;

void ok(cudaError_t status) {
    if (status != cudaSuccess) throw std::runtime_error(cudaGetErrorString(status));
}

// The host reference of one element: read exactly, written by the documented rules.
std::complex<double> read(DataType t, const unsigned char* p) {
    const auto as = [&](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t) {
        case DataType::f16:
            return __half2float(as(__half{}));
        case DataType::bf16:
            return __bfloat162float(as(__nv_bfloat16{}));
        case DataType::f32:
            return as(float{});
        case DataType::f64:
            return as(double{});
        case DataType::c32: {
            const auto c = as(std::complex<float>{});
            return {c.real(), c.imag()};
        }
        case DataType::c64:
            return as(std::complex<double>{});
        case DataType::e4m3:
            return float(as(__nv_fp8_e4m3{}));
        case DataType::e5m2:
            return float(as(__nv_fp8_e5m2{}));
        case DataType::i8:
            return double(as(std::int8_t{}));
        case DataType::i32:
            return double(as(std::int32_t{}));
        case DataType::i64:
            return double(as(std::int64_t{}));
    }
    return 0.0;
}

double integer(double x, double lo, double hi) { return std::isnan(x) ? 0.0 : std::clamp(std::trunc(x), lo, hi); }

void write(DataType t, std::complex<double> v, unsigned char* p) {
    const auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (t) {
        case DataType::f16:
            return put(__double2half(v.real()));
        case DataType::bf16:
            return put(__double2bfloat16(v.real()));
        case DataType::f32:
            return put(float(v.real()));
        case DataType::f64:
            return put(v.real());
        case DataType::c32:
            return put(std::complex<float>(float(v.real()), float(v.imag())));
        case DataType::c64:
            return put(v);
        case DataType::e4m3:
            return put(__nv_cvt_double_to_fp8(v.real(), __NV_SATFINITE, __NV_E4M3));
        case DataType::e5m2:
            return put(__nv_cvt_double_to_fp8(v.real(), __NV_SATFINITE, __NV_E5M2));
        case DataType::i8:
            return put(std::int8_t(integer(v.real(), -128, 127)));
        case DataType::i32:
            return put(std::int32_t(integer(v.real(), -2147483648.0, 2147483647.0)));
        case DataType::i64:  // the largest double below 2^63 is the upper bound
            return put(std::int64_t(integer(v.real(), -9223372036854775808.0, 9223372036854774784.0)));
    }
}

bool same(DataType t, const unsigned char* a, const unsigned char* b) {
    const std::complex<double> x = read(t, a), y = read(t, b);
    const auto eq = [](double u, double v) { return (std::isnan(u) && std::isnan(v)) || u == v; };
    return eq(x.real(), y.real()) && eq(x.imag(), y.imag());
}

// Values that exercise every rule: specials, saturation, truncation, rounding, signs.
std::vector<std::complex<double>> probe_values(std::size_t n, std::uint64_t seed) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<std::complex<double>> v{
        {0.0, 1.0}, {-0.0, -2.0}, {1.0, 0.5}, {-1.0, 3.0}, {2.5, -2.5}, {-3.7, 0.1},  {127.6, 0}, {-128.9, 0}, {448, 0},
        {449, 0},   {-1e5, 0},    {57344, 0}, {70000, 0},  {1e-3, 0},   {1e-9, 0},    {inf, 0},   {-inf, 0},   {nan, 0},
        {3e9, 0},   {-3e9, 0},    {65504, 0}, {1e40, 0},   {0.1, 0.2},  {1.0 / 3, 0}, {255.5, 0}};
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> dist(0.0, 50.0);
    while (v.size() < n) v.emplace_back(dist(rng), dist(rng));
    v.resize(n);
    return v;
}

// `values` written as `t` (so the input is exactly representable).
Bytes encode(DataType t, const std::vector<std::complex<double>>& values) {
    Bytes b(values.size() * size_of(t));
    for (std::size_t i = 0; i < values.size(); ++i) write(t, values[i], b.data() + i * size_of(t));
    return b;
}

Tensor upload(DataType t, const Bytes& bytes, std::initializer_list<std::int64_t> shape) {
    Tensor x = Tensor::empty(t, shape, core::StreamRef{});
    ok(cudaMemcpy(x.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
    return x;
}

Bytes download(const Tensor& x) {
    Bytes b(std::size_t(x.view().span_bytes()));
    ok(cudaMemcpy(b.data(), x.data(), b.size(), cudaMemcpyDeviceToHost));
    return b;
}

// Fills `x` with 0xa5 bytes: an element a kernel failed to write shows.
void poison(const Tensor& x) { ok(cudaMemset(x.data(), 0xa5, std::size_t(x.view().span_bytes()))); }

}  // namespace

TEST_F(TensorOps, CastConvertsEveryPairByTheRulesInEveryLayout) {
    constexpr std::int64_t rows = 33, cols = 47;  // odd: tails past the 16-byte packs, partial tiles
    const std::vector<std::complex<double>> values = probe_values(std::size_t(rows * cols), 7);
    for (const DataType from : k_types) {
        const Bytes in_bytes = encode(from, values);
        const Tensor in = upload(from, in_bytes, {rows, cols});
        for (const DataType to : k_types) {
            SCOPED_TRACE(std::string(to_string(from)) + " -> " + std::string(to_string(to)));
            const std::size_t os = size_of(to), is = size_of(from);
            // Contiguous.
            Tensor out = Tensor::empty(to, {rows, cols});
            poison(out);
            cast(in, out, core::StreamRef{});
            Bytes got = download(out), want(got.size());
            for (std::size_t i = 0; i < std::size_t(rows * cols); ++i)
                write(to, read(from, in_bytes.data() + i * is), want.data() + i * os);
            for (std::size_t i = 0; i < std::size_t(rows * cols); ++i)
                ASSERT_TRUE(same(to, got.data() + i * os, want.data() + i * os)) << "contiguous element " << i;
            // Transposed: out (cols, rows) from in seen as its transpose (the tiled kernel).
            Tensor t = Tensor::empty(to, {cols, rows});
            poison(t);
            cast(in.view().transposed(), t, core::StreamRef{});
            got = download(t);
            for (std::int64_t r = 0; r < cols; ++r)
                for (std::int64_t c = 0; c < rows; ++c)
                    ASSERT_TRUE(same(to, got.data() + std::size_t(r * rows + c) * os,
                                     want.data() + std::size_t(c * cols + r) * os))
                        << "transposed element (" << r << ", " << c << ")";
            // Strided: every other column of in into every third element of a wider out.
            Tensor wide = Tensor::empty(to, {rows, 3 * ((cols + 1) / 2)});
            poison(wide);
            const TensorView src(in.data(), TensorLayout(from, {rows, (cols + 1) / 2}, {cols, 2}));
            const TensorView dst(wide.data(), TensorLayout(to, {rows, (cols + 1) / 2}, {3 * ((cols + 1) / 2), 3}));
            cast(src, dst, core::StreamRef{});
            got = download(wide);
            for (std::int64_t r = 0; r < rows; ++r)
                for (std::int64_t c = 0; c < (cols + 1) / 2; ++c)
                    ASSERT_TRUE(same(to, got.data() + std::size_t(r * dst.stride(0) + c * 3) * os,
                                     want.data() + std::size_t(r * cols + 2 * c) * os))
                        << "strided element (" << r << ", " << c << ")";
        }
    }
}

TEST_F(TensorOps, FillConvertsEveryValueByTheCastRules) {
    // Whole tensors take the driver's memset for elements of 1, 2 or 4 bytes (the bits computed on
    // the host) and a kernel otherwise, NaN included: each must write what a cast writes.
    const std::vector<std::complex<double>> values = probe_values(64, 3);
    for (const DataType t : k_types) {
        SCOPED_TRACE(std::string(to_string(t)));
        for (const std::complex<double>& value : values) {
            Tensor x = Tensor::empty(t, {3, 43});
            poison(x);
            fill(x, value, core::StreamRef{});
            Bytes want(size_of(t));
            write(t, value, want.data());
            const Bytes got = download(x);
            for (std::size_t i = 0; i < std::size_t(3 * 43); ++i)
                ASSERT_TRUE(same(t, got.data() + i * size_of(t), want.data()))
                    << "element " << i << " of a fill with " << value.real() << " " << value.imag();
        }
    }
}

TEST_F(TensorOps, FillWritesTheConvertedValueEverywhereAsked) {
    for (const DataType t : k_types) {
        SCOPED_TRACE(std::string(to_string(t)));
        const std::complex<double> value(-1234.56, 7.25);
        Bytes one(size_of(t));
        write(t, value, one.data());
        // A whole tensor, and every other row of another (the rest keeps its poison).
        Tensor whole = full(t, {7, 129}, value, core::StreamRef{});
        const Bytes got = download(whole);
        for (std::size_t i = 0; i < std::size_t(7 * 129); ++i)
            ASSERT_EQ(std::memcmp(got.data() + i * size_of(t), one.data(), size_of(t)), 0) << "element " << i;
        Tensor rows = Tensor::empty(t, {6, 5});
        poison(rows);
        fill(TensorView(rows.data(), TensorLayout(t, {3, 5}, {10, 1})), value, core::StreamRef{});
        const Bytes h = download(rows);
        for (std::size_t r = 0; r < 6; ++r)
            for (std::size_t c = 0; c < 5; ++c) {
                const unsigned char* e = h.data() + (r * 5 + c) * size_of(t);
                if (r % 2 == 0) ASSERT_EQ(std::memcmp(e, one.data(), size_of(t)), 0) << r << ", " << c;
                else ASSERT_EQ(*e, 0xa5) << "row " << r << " was written";
            }
    }
    EXPECT_EQ(zeros(DataType::f32, {4}, core::StreamRef{}).to_host<float>(core::StreamRef{}),
              std::vector<float>(4, 0.0f));
    EXPECT_EQ(ones(DataType::i32, {3}, core::StreamRef{}).to_host<std::int32_t>(core::StreamRef{}),
              std::vector<std::int32_t>(3, 1));
}

TEST_F(TensorOps, ElementsAlignedOnlyToTheirOwnSizeAreReadAndWritten) {
    // std::complex<double> is 8-byte aligned: a c64 view 8 bytes into a buffer is a valid tensor.
    constexpr std::int64_t n = 37;
    Tensor bytes = Tensor::empty(DataType::f64, {2 * n + 1});
    const TensorView c64(static_cast<char*>(bytes.data()) + 8, TensorLayout(DataType::c64, {n}));
    fill(c64, {1.5, -2.5}, core::StreamRef{});
    Tensor c32 = Tensor::empty(DataType::c32, {n});
    cast(c64, c32, core::StreamRef{});
    const std::vector<std::complex<float>> got = c32.to_host<std::complex<float>>(core::StreamRef{});
    for (const auto& v : got) ASSERT_EQ(v, std::complex<float>(1.5f, -2.5f));
}

TEST_F(TensorOps, TransposesWholeAndEdgeTilesOfABatch) {
    // Two matrices of 130 x 75: whole tiles (64 x 64, 32 x 32 for 16-byte elements) and partial ones
    // at both edges, with and without a conversion.
    constexpr std::int64_t batch = 2, rows = 130, cols = 75;
    const std::vector<std::complex<double>> values = probe_values(std::size_t(batch * rows * cols), 11);
    const std::pair<DataType, DataType> pairs[] = {{DataType::f32, DataType::f32}, {DataType::bf16, DataType::bf16},
                                                   {DataType::i8, DataType::i8},   {DataType::f64, DataType::f64},
                                                   {DataType::c64, DataType::c64}, {DataType::f32, DataType::bf16},
                                                   {DataType::c32, DataType::c64}, {DataType::e4m3, DataType::f32}};
    for (const auto& [from, to] : pairs) {
        SCOPED_TRACE(std::string(to_string(from)) + " -> " + std::string(to_string(to)));
        const Bytes in_bytes = encode(from, values);
        const Tensor in = upload(from, in_bytes, {batch, rows, cols});
        Tensor t = Tensor::empty(to, {batch, cols, rows});
        poison(t);
        cast(in.view().transposed(), t, core::StreamRef{});
        const Bytes got = download(t);
        const std::size_t os = size_of(to), is = size_of(from);
        Bytes want(os);
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t r = 0; r < cols; ++r)
                for (std::int64_t c = 0; c < rows; ++c) {
                    write(to, read(from, in_bytes.data() + std::size_t((b * rows + c) * cols + r) * is), want.data());
                    ASSERT_TRUE(same(to, got.data() + std::size_t((b * cols + r) * rows + c) * os, want.data()))
                        << "matrix " << b << ", element (" << r << ", " << c << ")";
                }
    }
}

TEST_F(TensorOps, CopyMovesBitsAndTransposesAnyTwoAxes) {
    // NaN payloads and negative zeros survive a copy (no conversion between equal types).
    std::vector<std::uint32_t> bits(2 * 3 * 4 * 5);
    for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = 0x7fc00000u + std::uint32_t(i * 977);
    bits[3] = 0x80000000u;
    const Tensor x = Tensor::empty(DataType::f32, {2, 3, 4, 5}, core::StreamRef{});
    ok(cudaMemcpy(x.data(), bits.data(), bits.size() * 4, cudaMemcpyHostToDevice));
    const std::int64_t shape[4] = {2, 3, 4, 5};
    for (int a0 = 0; a0 < 4; ++a0)
        for (int a1 = a0 + 1; a1 < 4; ++a1) {
            SCOPED_TRACE("axes " + std::to_string(a0) + ", " + std::to_string(a1));
            const Tensor t = transpose(x, a0, a1, core::StreamRef{});
            std::vector<std::uint32_t> got(bits.size());
            ok(cudaMemcpy(got.data(), t.data(), got.size() * 4, cudaMemcpyDeviceToHost));
            std::int64_t out_shape[4] = {shape[0], shape[1], shape[2], shape[3]};
            std::swap(out_shape[a0], out_shape[a1]);
            for (std::int64_t i = 0; i < std::int64_t(got.size()); ++i) {
                std::int64_t idx[4], rest = i;
                for (int d = 3; d >= 0; --d) {
                    idx[d] = rest % out_shape[d];
                    rest /= out_shape[d];
                }
                std::swap(idx[a0], idx[a1]);
                const std::int64_t src = ((idx[0] * shape[1] + idx[1]) * shape[2] + idx[2]) * shape[3] + idx[3];
                ASSERT_EQ(got[std::size_t(i)], bits[std::size_t(src)]) << "element " << i;
            }
        }
    // A contiguous copy is one device copy; equal bits again.
    const Tensor c = contiguous(x, core::StreamRef{});
    std::vector<std::uint32_t> back(bits.size());
    ok(cudaMemcpy(back.data(), c.data(), back.size() * 4, cudaMemcpyDeviceToHost));
    EXPECT_EQ(back, bits);
}

TEST_F(TensorOps, RandomTensorsFollowTheirDistributionAndTheirSeed) {
    constexpr std::int64_t n = 1 << 20;
    const Tensor u = random::uniform(DataType::f64, {n}, -2.0, 3.0, {.seed = 11}, core::StreamRef{});
    const std::vector<double> uv = u.to_host<double>(core::StreamRef{});
    double mean = 0;
    for (const double x : uv) {
        ASSERT_GT(x, -2.0);
        ASSERT_LE(x, 3.0);
        mean += x;
    }
    EXPECT_NEAR(mean / n, 0.5, 0.01);
    const Tensor g = random::normal(DataType::f32, {n + 1}, 1.5, 2.0, {.seed = 5}, core::StreamRef{});  // odd count
    const std::vector<float> gv = g.to_host<float>(core::StreamRef{});
    double m = 0, sq = 0;
    for (const float x : gv) {
        ASSERT_TRUE(std::isfinite(x));
        m += x;
        sq += double(x) * x;
    }
    m /= double(gv.size());
    EXPECT_NEAR(m, 1.5, 0.01);
    EXPECT_NEAR(std::sqrt(sq / double(gv.size()) - m * m), 2.0, 0.01);
    const std::vector<float> lv = random::lognormal(DataType::f32, {n}, 0.0, 0.5, {.seed = 5}, core::StreamRef{})
                                      .to_host<float>(core::StreamRef{});
    double lm = 0;
    for (const float x : lv) {
        ASSERT_GT(x, 0.0f);
        lm += std::log(double(x));
    }
    EXPECT_NEAR(lm / n, 0.0, 0.01);
    // The same seed gives the same values; another seed others.
    EXPECT_EQ(random::uniform(DataType::f64, {n}, -2.0, 3.0, {.seed = 11}, core::StreamRef{})
                  .to_host<double>(core::StreamRef{}),
              uv);
    EXPECT_NE(random::uniform(DataType::f64, {n}, -2.0, 3.0, {.seed = 12}, core::StreamRef{})
                  .to_host<double>(core::StreamRef{}),
              uv);
    // f16 and bf16 are the f32 values rounded.
    const std::vector<float> f32 = random::normal(DataType::f32, {4097}, 0.0, 1.0, {.seed = 3}, core::StreamRef{})
                                       .to_host<float>(core::StreamRef{});
    const Tensor bf = random::normal(DataType::bf16, {4097}, 0.0, 1.0, {.seed = 3}, core::StreamRef{});
    const Bytes bfb = download(bf);
    for (std::size_t i = 0; i < f32.size(); ++i) {
        Bytes want(2);
        write(DataType::bf16, f32[i], want.data());
        ASSERT_EQ(std::memcmp(bfb.data() + 2 * i, want.data(), 2), 0) << i;
    }
}

TEST_F(TensorOps, RandomValuesAreTheDocumentedPhiloxSequence) {
    // Seed 0, block 0 is Random123's first known answer: the first four f32 uniforms are its words.
    const std::vector<float> first =
        random::uniform(DataType::f32, {4}, 0.0, 1.0, {}, core::StreamRef{}).to_host<float>(core::StreamRef{});
    const std::uint32_t kat[] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(first[std::size_t(i)], test::unit_f32(kat[i])) << i;
    // Every type and distribution against the host reference, at an odd offset and count (blocks cut
    // at both ends, stores not aligned to the blocks).
    constexpr std::uint64_t seed = 0x0123456789abcdefULL, offset = 13;
    constexpr std::int64_t n = 1001;
    for (const DataType t : {DataType::f16, DataType::bf16, DataType::f32, DataType::f64}) {
        SCOPED_TRACE(std::string(to_string(t)));
        const bool wide = t == DataType::f64;
        const std::size_t es = size_of(t);
        // Uniform: integer arithmetic, a fused multiply-add and one rounding, so bit for bit.
        const Bytes u =
            download(random::uniform(t, {n}, -3.0, 5.0, {.seed = seed, .offset = offset}, core::StreamRef{}));
        for (std::int64_t i = 0; i < n; ++i) {
            const std::uint64_t k = offset + std::uint64_t(i);
            Bytes want(es);
            write(t, wide ? test::uniform_f64(seed, k, -3.0, 5.0) : double(test::uniform_f32(seed, k, -3.0, 5.0)),
                  want.data());
            ASSERT_EQ(std::memcmp(u.data() + std::size_t(i) * es, want.data(), es), 0) << "uniform value " << i;
        }
        // Normal and log-normal: the device's log and sqrt round differently from the host's double
        // ones, and f32 draws take the hardware's sine and cosine (absolute error below 2^-21.4,
        // times a radius below 6): within 1e-5 in f32, a few units in the last place otherwise.
        const double tolerance = t == DataType::f64   ? 1e-12
                                 : t == DataType::f32 ? 1e-5
                                 : t == DataType::f16 ? 2e-3
                                                      : 1.6e-2;
        const Bytes g = download(random::normal(t, {n}, 0.5, 2.0, {.seed = seed, .offset = offset}, core::StreamRef{}));
        const Bytes l =
            download(random::lognormal(t, {n}, 0.1, 0.5, {.seed = seed, .offset = offset}, core::StreamRef{}));
        for (std::int64_t i = 0; i < n; ++i) {
            const std::uint64_t k = offset + std::uint64_t(i);
            const double z = wide ? test::normal_f64(seed, k, 0.0, 1.0) : test::normal_f32(seed, k, 0.0, 1.0);
            const double got_g = read(t, g.data() + std::size_t(i) * es).real();
            const double got_l = read(t, l.data() + std::size_t(i) * es).real();
            ASSERT_NEAR(got_g, 0.5 + 2.0 * z, tolerance * (1.0 + std::abs(0.5 + 2.0 * z))) << "normal value " << i;
            ASSERT_NEAR(got_l, std::exp(0.1 + 0.5 * z), tolerance * 2.0 * std::exp(0.1 + 0.5 * z))
                << "log-normal value " << i;
        }
    }
}

TEST_F(TensorOps, UniformRangesWiderThanF32StillSpreadTheValues) {
    // high - low passes f32's range: the values are computed in f64 and rounded, as documented.
    constexpr std::int64_t n = 4096;
    const std::vector<float> v = random::uniform(DataType::f32, {n}, -3e38, 3e38, {.seed = 5}, core::StreamRef{})
                                     .to_host<float>(core::StreamRef{});
    for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(v[std::size_t(i)], test::uniform_f32(5, std::uint64_t(i), -3e38, 3e38)) << i;
    EXPECT_LT(*std::min_element(v.begin(), v.end()), -2e38f);
    EXPECT_GT(*std::max_element(v.begin(), v.end()), 2e38f);
}

TEST_F(TensorOps, RandomSequencesCanBeMadeInPiecesByOffset) {
    // A piece after an offset of k continues where a piece of k values ended, at any k, in every
    // type and distribution.
    using Draw = void (*)(const TensorView&, double, double, const random::RandomOptions&, core::StreamRef);
    const Draw draws[] = {&random::uniform, &random::normal, &random::lognormal};
    for (const DataType t : {DataType::f16, DataType::bf16, DataType::f32, DataType::f64}) {
        for (const Draw draw : draws) {
            for (const std::int64_t k : {std::int64_t(1), std::int64_t(4095), std::int64_t(4096)}) {
                SCOPED_TRACE(std::string(to_string(t)) + ", split at " + std::to_string(k));
                constexpr std::int64_t n = 10000;
                const std::size_t es = size_of(t);
                Tensor whole = Tensor::empty(t, {n}), pieces = Tensor::empty(t, {n});
                draw(whole, 0.0, 1.0, {.seed = 9}, core::StreamRef{});
                draw(TensorView(pieces.data(), TensorLayout(t, {k})), 0.0, 1.0, {.seed = 9}, core::StreamRef{});
                draw(TensorView(static_cast<char*>(pieces.data()) + std::size_t(k) * es, TensorLayout(t, {n - k})), 0.0,
                     1.0, {.seed = 9, .offset = std::uint64_t(k)}, core::StreamRef{});
                ASSERT_EQ(download(pieces), download(whole));
            }
        }
    }
}

TEST_F(TensorOps, PreviewShowsShapeDtypeAndABoundedSummary) {
    const std::vector<float> v{1.0f, 2.5f, -3.0f, 4.0f, 5.0f, 6.0f};
    const Tensor x = Tensor::from_host(v, {2, 3}, core::StreamRef{});
    EXPECT_EQ(preview(x, {}, core::StreamRef{}),
              "tensor(shape (2, 3), f32)\n[[ 1.0000,  2.5000, -3.0000],\n"
              " [ 4.0000,  5.0000,  6.0000]]");
    const Tensor i = Tensor::from_host(std::vector<std::int32_t>{7, -8, 9}, {3}, core::StreamRef{});
    EXPECT_EQ(preview(i, {}, core::StreamRef{}), "tensor(shape (3,), i32)\n[ 7, -8,  9]");
    // A large tensor: its first and last three entries on each axis, whatever its size.
    const Tensor big = full(DataType::bf16, {1000, 1000}, 0.5, core::StreamRef{});
    const std::string text = preview(big, {}, core::StreamRef{});
    EXPECT_NE(text.find("tensor(shape (1000, 1000), bf16)"), std::string::npos);
    EXPECT_NE(text.find("0.5000, 0.5000, 0.5000, ..., 0.5000, 0.5000, 0.5000]"), std::string::npos) << text;
    EXPECT_LT(text.size(), 1000u);
    std::ostringstream os;
    os << x.view().transposed();
    EXPECT_EQ(os.str(), "tensor(shape (3, 2), f32)\n[[ 1.0000,  4.0000],\n [ 2.5000,  5.0000],\n [-3.0000,  6.0000]]");
}

TEST_F(TensorOps, CapturedCallsReplayWhatEagerCallsCompute) {
    core::Stream stream;
    constexpr std::int64_t n = 3001;
    const Tensor src = random::normal(DataType::f32, {n}, 0.0, 10.0, {.seed = 1}, stream);
    Tensor eager_cast = Tensor::empty(DataType::bf16, {n}, stream),
           graph_cast = Tensor::empty(DataType::bf16, {n}, stream);
    Tensor eager_rand = Tensor::empty(DataType::f32, {n}, stream),
           graph_rand = Tensor::empty(DataType::f32, {n}, stream);
    Tensor eager_fill = Tensor::empty(DataType::i8, {n}, stream), graph_fill = Tensor::empty(DataType::i8, {n}, stream);
    const Tensor m = random::uniform(DataType::f32, {40, 50}, 0.0, 1.0, {.seed = 2}, stream);
    Tensor eager_t = Tensor::empty(DataType::f32, {50, 40}, stream),
           graph_t = Tensor::empty(DataType::f32, {50, 40}, stream);
    const auto work = [&](Tensor& c, Tensor& r, Tensor& f, Tensor& t, core::StreamRef s) {
        cast(src, c, s);
        random::uniform(r, -1.0, 1.0, {.seed = 4, .offset = 8}, s);
        fill(f, -5.5, s);
        copy(m.view().transposed(), t, s);
    };
    work(eager_cast, eager_rand, eager_fill, eager_t, stream);
    // Allocating forms are refused inside a capture, before anything is enqueued.
    const core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef s) {
        work(graph_cast, graph_rand, graph_fill, graph_t, s);
        test::expect_throw_with<InvalidArgument>([&] { (void)zeros(DataType::f32, {4}, s); },
                                                 {"gpumath::full", "during a capture"});
    });
    graph.launch(stream);
    stream.synchronize();
    EXPECT_EQ(download(graph_cast), download(eager_cast));
    EXPECT_EQ(download(graph_rand), download(eager_rand));
    EXPECT_EQ(download(graph_fill), download(eager_fill));
    EXPECT_EQ(download(graph_t), download(eager_t));
}
