// SPDX-License-Identifier: Apache-2.0
// FFT results on the GPU against a CPU DFT in double (small sizes) and against double-precision
// cuFFT (large sizes): every kind and type, 1-3 axes anywhere, strided and batched operands, odd
// and prime lengths, in place, every normalization, the plan cache from 8 threads on 4 streams.
// Outputs start as NaN bytes; inputs are fresh random values.
#include <atomic>
#include <optional>
#include <thread>

#include <cufft.h>

#include "common/recording_resource.hpp"
#include "fft/fft_test_util.hpp"

namespace gpumath {
namespace {

using namespace fft_test;

bool is_half(DataType t) { return t == DataType::f16 || t == DataType::bf16; }

DataType real_of(DataType t) { return t == DataType::c32 ? DataType::f32 : t == DataType::c64 ? DataType::f64 : t; }

// Row-major layout with the dimensions laid out in `order` (outer to inner) and `pad` extra
// elements per dimension; `pair` appends the (2,) of complex halves.
TensorLayout make_layout(DataType dt, const Shape& shape, std::vector<int> order = {}, Shape pad = {},
                         bool pair = false) {
    if (order.empty())
        for (int d = 0; d < int(shape.size()); ++d) order.push_back(d);
    if (pad.empty()) pad.assign(shape.size(), 0);
    Shape strides(shape.size());
    std::int64_t s = pair ? 2 : 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        strides[std::size_t(*it)] = s;
        s *= shape[std::size_t(*it)] + pad[std::size_t(*it)];
    }
    if (pair) {
        Shape sh = shape, st = strides;
        sh.push_back(2);
        st.push_back(1);
        return TensorLayout(dt, sh, st);
    }
    return TensorLayout(dt, shape, strides);
}

std::vector<int> normalized_axes(const FFTOptions& o, int rank) {
    std::vector<int> axes;
    for (int a : o.axes) axes.push_back(a < 0 ? a + rank : a);
    if (axes.empty()) axes.push_back(rank - 1);
    return axes;
}

// Runs a c2c transform of `in_layout` into `out_layout` (or in place) and compares with the DFT.
void check_c2c(const TensorLayout& in_layout, const std::optional<TensorLayout>& out_layout, const FFTOptions& o,
               Direction dir, bool through_cache, std::mt19937_64& rng, const std::string& what) {
    const DataType p = real_of(in_layout.dtype());
    const bool pair = is_half(in_layout.dtype());
    const Shape shape = logical_shape(in_layout, pair);
    const std::vector<cd> x = random_values(count(shape), true, p, rng);
    const std::vector<int> axes = normalized_axes(o, int(shape.size()));
    std::int64_t n = 1;
    for (int a : axes) n *= shape[std::size_t(a)];
    double scale = 1.0;
    if (o.normalization == Normalization::ortho) scale = 1.0 / std::sqrt(double(n));
    if (o.normalization == Normalization::backward && dir == Direction::inverse) scale = 1.0 / double(n);
    if (o.normalization == Normalization::forward && dir == Direction::forward) scale = 1.0 / double(n);
    const std::vector<cd> want = scaled(dft(x, shape, axes, dir == Direction::forward ? -1 : 1), scale);

    Operand in = upload(in_layout, x, pair);
    const bool inplace = !out_layout.has_value();
    Operand out_storage = inplace ? Operand{} : poisoned(*out_layout, pair);
    const Operand& out = inplace ? in : out_storage;
    if (through_cache) {
        if (dir == Direction::forward) fft(in.view(), out.view(), o);
        else ifft(in.view(), out.view(), o);
    } else {
        FFT plan(in_layout, inplace ? in_layout : *out_layout, o);
        plan.execute(in.view(), out.view(), dir);
    }
    GPUMATH_EXPECT_CLOSE(
        download(out), want, tolerance(p),
        what << " c2c " << to_string(dir) << " of " << to_string(in_layout) << (inplace ? " in place" : ""));
    if (!inplace) {
        // The input is preserved.
        GPUMATH_EXPECT_CLOSE(download(in), x, 0.0, what << ": input changed");
    }
}

void check_r2c(const TensorLayout& in_layout, const std::optional<TensorLayout>& out_layout, const FFTOptions& o,
               bool through_cache, std::mt19937_64& rng, const std::string& what) {
    const DataType p = in_layout.dtype();
    const Shape shape = logical_shape(in_layout, false);
    const std::vector<cd> x = random_values(count(shape), false, p, rng);
    const std::vector<int> axes = normalized_axes(o, int(shape.size()));
    std::int64_t n = 1;
    for (int a : axes) n *= shape[std::size_t(a)];
    double scale = 1.0;
    if (o.normalization == Normalization::ortho) scale = 1.0 / std::sqrt(double(n));
    if (o.normalization == Normalization::forward) scale = 1.0 / double(n);
    const std::vector<cd> want = scaled(half_spectrum(dft(x, shape, axes, -1), shape, axes.back()), scale);

    Operand in = upload(in_layout, x);
    Shape out_shape = shape;
    out_shape[std::size_t(axes.back())] = shape[std::size_t(axes.back())] / 2 + 1;
    const DataType out_dt = p == DataType::f32 ? DataType::c32 : p == DataType::f64 ? DataType::c64 : p;
    const TensorLayout ol = out_layout ? *out_layout : make_layout(out_dt, out_shape, {}, {}, is_half(p));
    Operand out = poisoned(ol, is_half(p));
    if (through_cache) rfft(in.view(), out.view(), o);
    else FFT(in_layout, ol, o).execute(in.view(), out.view(), Direction::forward);
    GPUMATH_EXPECT_CLOSE(download(out), want, tolerance(p),
                         what << " r2c of " << to_string(in_layout) << " into " << to_string(ol));
    GPUMATH_EXPECT_CLOSE(download(in), x, 0.0, what << ": input changed");
}

// c2r of a consistent half spectrum (the CPU rfft of random real data) of output length `n_last`.
void check_c2r(const Shape& out_shape, DataType p, const FFTOptions& o, std::vector<int> in_order, Shape in_pad,
               std::optional<TensorLayout> out_layout, bool through_cache, std::mt19937_64& rng,
               const std::string& what) {
    const std::vector<int> axes = normalized_axes(o, int(out_shape.size()));
    const std::vector<cd> x = random_values(count(out_shape), false, p, rng);
    const std::vector<cd> spectrum = half_spectrum(dft(x, out_shape, axes, -1), out_shape, axes.back());
    std::int64_t n = 1;
    for (int a : axes) n *= out_shape[std::size_t(a)];
    double scale = 1.0;  // c2r(rfft(x)) = n * x unnormalized
    if (o.normalization == Normalization::backward) scale = 1.0;
    else if (o.normalization == Normalization::ortho) scale = std::sqrt(double(n));
    else scale = double(n);
    const std::vector<cd> want = scaled(x, scale);
    Shape in_shape = out_shape;
    in_shape[std::size_t(axes.back())] = out_shape[std::size_t(axes.back())] / 2 + 1;
    const DataType in_dt = p == DataType::f32 ? DataType::c32 : p == DataType::f64 ? DataType::c64 : p;
    const TensorLayout il = make_layout(in_dt, in_shape, in_order, in_pad, is_half(p));
    // Half precision: the spectrum is rounded on upload; compare with the exact inverse of that.
    Operand in = upload(il, spectrum, is_half(p));
    const TensorLayout ol = out_layout ? *out_layout : make_layout(p, out_shape);
    Operand out = poisoned(ol);
    FFTOptions oo = o;
    oo.last_axis_size = out_shape[std::size_t(axes.back())];
    if (through_cache) {
        irfft(in.view(), out.view(), oo);
    } else {
        // A plan infers c2r from the real output layout; last_axis_size is consistent with it.
        FFT plan(il, ol, oo);
        EXPECT_EQ(plan.kind(), FFTKind::c2r) << what;
        plan.execute(in.view(), out.view(), Direction::inverse);
    }
    GPUMATH_EXPECT_CLOSE(download(out), want, tolerance(p) * (is_half(p) ? 4 : 1),
                         what << " c2r into " << str(out_shape) << " from " << to_string(il));
    if (!o.overwrite_input) {
        const std::vector<cd> after = download(in);
        const std::vector<cd> before = download(upload(il, spectrum, is_half(p)));
        GPUMATH_EXPECT_CLOSE(after, before, 0.0, what << ": c2r input changed");
    }
}

class FftGpu : public ::testing::Test {
protected:
    void SetUp() override { GPUMATH_REQUIRE_GPU(); }
    std::mt19937_64 rng = test::rng_for_test();
};

TEST_F(FftGpu, C2COddPrimeAndPowerOfTwoLengths) {
    for (DataType dt : {DataType::c32, DataType::c64})
        for (std::int64_t n : {1, 2, 17, 64, 1009})
            for (std::int64_t batch : {1, 3})
                for (Direction dir : {Direction::forward, Direction::inverse})
                    for (bool cache : {true, false})
                        check_c2c(make_layout(dt, {batch, n}), make_layout(dt, {batch, n}), {}, dir, cache, rng,
                                  "n=" + std::to_string(n));
}

TEST_F(FftGpu, R2CAndC2ROddAndPrimeLengths) {
    for (DataType dt : {DataType::f32, DataType::f64}) {
        for (std::int64_t n : {1, 2, 16, 17, 1009})
            for (bool cache : {true, false})
                check_r2c(make_layout(dt, {3, n}), std::nullopt, {}, cache, rng, "n=" + std::to_string(n));
        for (std::int64_t n : {1, 2, 9, 16, 17, 1009})
            for (bool cache : {true, false})
                check_c2r({3, n}, dt, {}, {}, {}, std::nullopt, cache, rng, "n=" + std::to_string(n));
    }
}

TEST_F(FftGpu, IrfftDefaultLengthAndAllocatingForms) {
    // irfft with no length: 2 * (m - 1).
    const std::vector<cd> x = random_values(2 * 16, false, DataType::f32, rng);
    const std::vector<cd> spec = half_spectrum(dft(x, {2, 16}, {1}, -1), {2, 16}, 1);
    Operand in = upload(TensorLayout(DataType::c32, {2, 9}), spec);
    const Tensor y = irfft(in.view());
    EXPECT_EQ(y.layout(), TensorLayout(DataType::f32, {2, 16}));
    GPUMATH_EXPECT_CLOSE(download(y), x, 2e-5, "irfft default length");
    const Tensor z = irfft(in.view(), {.last_axis_size = 17});
    EXPECT_EQ(z.shape(1), 17);
    const Tensor f = rfft(y.view());
    GPUMATH_EXPECT_CLOSE(download(f), spec, 2e-5, "rfft allocating");
    const Tensor c = fft(f.view());
    EXPECT_EQ(c.layout(), TensorLayout(DataType::c32, {2, 9}));
    const Tensor back = ifft(c.view());
    GPUMATH_EXPECT_CLOSE(download(back), spec, 2e-5, "ifft(fft(x))");
}

TEST_F(FftGpu, AxesAtFrontBackAndMiddle) {
    const Shape shape{6, 5, 7};
    const std::vector<std::vector<int>> sets = {{0},    {1},    {2},    {-1},      {0, 1},
                                                {1, 2}, {0, 2}, {2, 0}, {0, 1, 2}, {2, 0, 1}};
    for (const auto& axes : sets) {
        FFTOptions o;
        o.axes = FFTAxes(std::span<const int>(axes));
        const std::string what = "axes " + str(Shape(axes.begin(), axes.end()));
        for (DataType dt : {DataType::c32, DataType::c64}) {
            check_c2c(make_layout(dt, shape), make_layout(dt, shape), o, Direction::forward, true, rng, what);
            check_c2c(make_layout(dt, shape), make_layout(dt, shape), o, Direction::inverse, false, rng, what);
        }
        for (DataType dt : {DataType::f32, DataType::f64}) {
            check_r2c(make_layout(dt, shape), std::nullopt, o, true, rng, what);
            check_c2r(shape, dt, o, {}, {}, std::nullopt, false, rng, what);
        }
    }
}

TEST_F(FftGpu, StridedAndBatchedOperands) {
    const DataType c = DataType::c32;
    // Column-major input and output, padded strides, permuted dimensions.
    check_c2c(make_layout(c, {8, 6}, {1, 0}), make_layout(c, {8, 6}), {.axes = {0, 1}}, Direction::forward, true, rng,
              "column-major in");
    check_c2c(make_layout(c, {8, 6}), make_layout(c, {8, 6}, {1, 0}, {3, 1}), {.axes = {0, 1}}, Direction::inverse,
              true, rng, "padded column-major out");
    check_c2c(make_layout(c, {4, 5, 6}, {2, 0, 1}, {1, 2, 3}), make_layout(c, {4, 5, 6}, {1, 2, 0}), {.axes = {0, 2}},
              Direction::forward, false, rng, "permuted and padded");
    // Batch dimensions that do not merge: a host loop (4 executions), and a copy (24 executions would be needed).
    check_c2c(make_layout(c, {4, 32, 8}), make_layout(c, {4, 32, 8}), {.axes = {1}}, Direction::forward, true, rng,
              "middle axis, loop");
    check_c2c(make_layout(c, {24, 8, 32}), make_layout(c, {24, 8, 32}), {.axes = {1}}, Direction::forward, true, rng,
              "middle axis, copy");
    check_c2c(make_layout(c, {3, 4, 5, 6}), make_layout(c, {3, 4, 5, 6}), {.axes = {1, 3}}, Direction::forward, true,
              rng, "two interleaved batch dims");
    // A broadcast input (stride 0 along the batch).
    {
        const std::vector<cd> row = random_values(16, true, DataType::f32, rng);
        std::vector<cd> x;
        for (int b = 0; b < 5; ++b) x.insert(x.end(), row.begin(), row.end());
        const TensorLayout bl(c, {5, 16}, {0, 1});
        Operand in = poisoned(bl);
        Operand row_dev = upload(TensorLayout(c, {16}), row);
        ASSERT_EQ(cudaMemcpy(in.buffer.data(), row_dev.buffer.data(), 16 * 8, cudaMemcpyDeviceToDevice), cudaSuccess);
        Operand out = poisoned(TensorLayout(c, {5, 16}));
        fft(in.view(), out.view());
        GPUMATH_EXPECT_CLOSE(download(out), dft(x, {5, 16}, {1}, -1), 2e-5, "broadcast input");
    }
    // r2c with the halved axis not innermost in memory (copied), strided complex output.
    check_r2c(make_layout(DataType::f32, {8, 6}, {1, 0}), std::nullopt, {.axes = {0, 1}}, true, rng,
              "column-major r2c");
    check_r2c(make_layout(DataType::f64, {5, 12}, {}, {2, 3}), make_layout(DataType::c64, {5, 7}, {1, 0}, {1, 1}), {},
              false, rng, "padded r2c into column-major");
    check_c2r({5, 12}, DataType::f32, {}, {1, 0}, {2, 2}, make_layout(DataType::f32, {5, 12}, {1, 0}, {1, 0}), true,
              rng, "column-major c2r");
    check_c2r({4, 6, 10}, DataType::f64, {.axes = {0, 2}}, {2, 1, 0}, {}, std::nullopt, false, rng, "c2r axes 0,2");
}

TEST_F(FftGpu, RealOperandsAtOddOffsets) {
    // cuFFT refuses real data that is not aligned like a complex element; gpumath copies it.
    for (DataType dt : {DataType::f32, DataType::f64}) {
        const std::int64_t batch = 3, n = 10;
        const std::size_t eb = dt == DataType::f32 ? 4 : 8;
        const std::vector<cd> x = random_values(batch * n + 1, false, dt, rng);
        const Operand whole = upload(TensorLayout(dt, {batch * n + 1}), x);
        const TensorView odd(static_cast<char*>(whole.buffer.data()) + eb, TensorLayout(dt, {batch, n}));
        const std::vector<cd> xs(x.begin() + 1, x.end());
        const std::vector<cd> want = half_spectrum(dft(xs, {batch, n}, {1}, -1), {batch, n}, 1);
        const Tensor spectrum = rfft(odd);
        GPUMATH_EXPECT_CLOSE(download(spectrum), want, tolerance(dt), "rfft of an odd-offset " << to_string(dt));
        const Operand out = poisoned(TensorLayout(dt, {batch * n + 1}));
        const TensorView odd_out(static_cast<char*>(out.buffer.data()) + eb, TensorLayout(dt, {batch, n}));
        irfft(spectrum.view(), odd_out, FFTOptions{.last_axis_size = n});
        std::vector<cd> back = download(out);
        back.erase(back.begin());
        GPUMATH_EXPECT_CLOSE(back, xs, tolerance(dt), "irfft into an odd-offset " << to_string(dt));
    }
}

TEST_F(FftGpu, InPlace) {
    for (DataType dt : {DataType::c32, DataType::c64}) {
        check_c2c(make_layout(dt, {3, 17}), std::nullopt, {}, Direction::forward, true, rng, "in place");
        check_c2c(make_layout(dt, {3, 64}), std::nullopt, {.inplace = true}, Direction::inverse, false, rng,
                  "inplace plan");
        check_c2c(make_layout(dt, {4, 6, 5}, {2, 0, 1}, {1, 0, 2}), std::nullopt, {.axes = {0, 2}}, Direction::forward,
                  true, rng, "strided in place");
        check_c2c(make_layout(dt, {24, 8, 32}), std::nullopt, {.axes = {1}}, Direction::inverse, true, rng,
                  "in place through temps");
    }
}

TEST_F(FftGpu, EveryNormalization) {
    for (Normalization norm :
         {Normalization::backward, Normalization::forward, Normalization::ortho, Normalization::none}) {
        const std::string what = std::string("normalization ") + std::string(to_string(norm));
        const FFTOptions o{.axes = {0, 1}, .normalization = norm};
        check_c2c(make_layout(DataType::c32, {6, 10}), make_layout(DataType::c32, {6, 10}), o, Direction::forward, true,
                  rng, what);
        check_c2c(make_layout(DataType::c64, {6, 10}), make_layout(DataType::c64, {6, 10}), o, Direction::inverse,
                  false, rng, what);
        check_r2c(make_layout(DataType::f32, {6, 10}), std::nullopt, o, true, rng, what);
        check_c2r({6, 10}, DataType::f64, o, {}, {}, std::nullopt, true, rng, what);
        // Round trips.
        const std::vector<cd> x = random_values(60, true, DataType::f32, rng);
        Operand in = upload(TensorLayout(DataType::c32, {6, 10}), x);
        const Tensor back = ifft(fft(in.view(), o).view(), o);
        GPUMATH_EXPECT_CLOSE(download(back), scaled(x, norm == Normalization::none ? 60.0 : 1.0), 2e-5,
                             what << ": ifft(fft(x))");
        const std::vector<cd> r = random_values(60, false, DataType::f64, rng);
        Operand rin = upload(TensorLayout(DataType::f64, {6, 10}), r);
        const Tensor rback =
            irfft(rfft(rin.view(), o).view(), FFTOptions{.axes = {0, 1}, .last_axis_size = 10, .normalization = norm});
        GPUMATH_EXPECT_CLOSE(download(rback), scaled(r, norm == Normalization::none ? 60.0 : 1.0), 1e-12,
                             what << ": irfft(rfft(x))");
    }
}

TEST_F(FftGpu, HalfPrecision) {
    std::vector<DataType> types{DataType::f16};
    if (core::Device::current().compute_capability().value() >= 80) types.push_back(DataType::bf16);
    for (DataType dt : types) {
        const std::string what = std::string(to_string(dt));
        check_r2c(make_layout(dt, {4, 64}), std::nullopt, {}, true, rng, what);
        check_r2c(make_layout(dt, {8, 16}), std::nullopt, {.axes = {0, 1}, .normalization = Normalization::ortho},
                  false, rng, what);
        check_c2c(make_layout(dt, {4, 128}, {}, {}, true), make_layout(dt, {4, 128}, {}, {}, true),
                  {.normalization = Normalization::forward}, Direction::forward, true, rng, what);
        check_c2c(make_layout(dt, {16, 8}, {}, {}, true), std::nullopt, {.axes = {0}}, Direction::inverse, true, rng,
                  what + " in place, first axis");
        check_c2r({4, 32}, dt, {}, {}, {}, std::nullopt, true, rng, what);
        // A strided real input of a half r2c is gathered (cuFFT allows no stride there).
        check_r2c(make_layout(dt, {4, 32}, {1, 0}), std::nullopt, {}, true, rng, what + " strided real input");
    }
}

// Compares with cuFFT in double precision on the same (f32-representable) data.
std::vector<cd> cufft_double(const std::vector<cd>& x, int rank, const int* n, int batch, bool r2c) {
    const std::int64_t total = std::int64_t(x.size());
    std::int64_t line = 1;
    for (int k = 0; k < rank; ++k) line *= n[k];
    const std::int64_t out_line = r2c ? line / n[rank - 1] * (n[rank - 1] / 2 + 1) : line;
    cufftHandle h{};
    EXPECT_EQ(
        cufftPlanMany(&h, rank, const_cast<int*>(n), nullptr, 1, 0, nullptr, 1, 0, r2c ? CUFFT_D2Z : CUFFT_Z2Z, batch),
        CUFFT_SUCCESS);
    void *din = nullptr, *dout = nullptr;
    EXPECT_EQ(cudaMalloc(&din, std::size_t(total) * 16), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&dout, std::size_t(out_line * batch) * 16), cudaSuccess);
    if (r2c) {
        std::vector<double> re(x.size());
        for (std::size_t i = 0; i < x.size(); ++i) re[i] = x[i].real();
        EXPECT_EQ(cudaMemcpy(din, re.data(), re.size() * 8, cudaMemcpyHostToDevice), cudaSuccess);
        EXPECT_EQ(cufftExecD2Z(h, static_cast<double*>(din), static_cast<cufftDoubleComplex*>(dout)), CUFFT_SUCCESS);
    } else {
        EXPECT_EQ(cudaMemcpy(din, x.data(), x.size() * 16, cudaMemcpyHostToDevice), cudaSuccess);
        EXPECT_EQ(cufftExecZ2Z(h, static_cast<cufftDoubleComplex*>(din), static_cast<cufftDoubleComplex*>(dout),
                               CUFFT_FORWARD),
                  CUFFT_SUCCESS);
    }
    std::vector<cd> out(static_cast<std::size_t>(out_line * batch));
    EXPECT_EQ(cudaMemcpy(out.data(), dout, out.size() * 16, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(din);
    cudaFree(dout);
    cufftDestroy(h);
    return out;
}

TEST_F(FftGpu, LargeAgainstDoublePrecisionCufft) {
    {
        const int n[] = {1 << 20};
        const std::vector<cd> x = random_values(2 << 20, true, DataType::f32, rng);
        Operand in = upload(TensorLayout(DataType::c32, {2, 1 << 20}), x);
        const Tensor y = fft(in.view());
        GPUMATH_EXPECT_CLOSE(download(y), cufft_double(x, 1, n, 2, false), 2e-5, "c2c f32 2^20 x 2");
    }
    {
        const int n[] = {512, 1024};
        const std::vector<cd> x = random_values(2 * 512 * 1024, false, DataType::f32, rng);
        Operand in = upload(TensorLayout(DataType::f32, {2, 512, 1024}), x);
        const Tensor y = rfft(in.view(), {.axes = {1, 2}});
        GPUMATH_EXPECT_CLOSE(download(y), cufft_double(x, 2, n, 2, true), 2e-5, "r2c f32 512x1024 x 2");
    }
    {
        const int n[] = {3 * 5 * 7 * 11 * 13};
        const std::vector<cd> x = random_values(4 * n[0], true, DataType::f32, rng);
        Operand in = upload(TensorLayout(DataType::c32, {4, n[0]}), x);
        const Tensor y = fft(in.view());
        GPUMATH_EXPECT_CLOSE(download(y), cufft_double(x, 1, n, 4, false), 2e-5, "c2c f32 n=15015");
    }
}

TEST_F(FftGpu, EightThreadsFourStreamsThroughTheCache) {
    fft_plan_cache().clear();
    std::vector<core::Stream> streams;
    for (int i = 0; i < 4; ++i) streams.emplace_back();
    const std::vector<Shape> shapes{{8, 256}, {4, 1009}, {16, 64}};
    struct Job {
        std::vector<cd> x;
        Operand in, out;
        Shape shape;
    };
    constexpr int threads = 8;
    constexpr int iterations = 25;
    std::vector<std::vector<Job>> jobs(threads);
    for (int t = 0; t < threads; ++t)
        for (const Shape& s : shapes) {
            Job j;
            j.shape = s;
            j.x = random_values(count(s), true, DataType::f32, rng);
            j.in = upload(TensorLayout(DataType::c32, s), j.x);
            j.out = poisoned(TensorLayout(DataType::c32, s));
            jobs[std::size_t(t)].push_back(std::move(j));
        }
    const std::vector<std::string> errors =
        gpumath::test::run_on_threads(threads, streams, [&](int t, core::StreamRef s) {
            for (int i = 0; i < iterations; ++i)
                for (Job& j : jobs[std::size_t(t)]) {
                    // Alternate directions so that both directions' plans serve all streams.
                    fft(j.in.view(), j.out.view(), {}, s);
                    ifft(j.out.view(), j.out.view(), {}, s);
                    fft(j.out.view(), j.out.view(), {}, s);
                }
        });
    for (int t = 0; t < threads; ++t)
        EXPECT_TRUE(errors[std::size_t(t)].empty()) << "thread " << t << ": " << errors[std::size_t(t)];
    for (int t = 0; t < threads; ++t)
        for (const Job& j : jobs[std::size_t(t)])
            GPUMATH_EXPECT_CLOSE(download(j.out), dft(j.x, j.shape, {1}, -1), 2e-5,
                                 "thread " << t << " shape " << str(j.shape));
    const core::CacheStats st = fft_plan_cache().stats();
    EXPECT_LE(st.size, 2 * shapes.size()) << "one plan per shape and in/out-of-place layout";
    EXPECT_GT(st.hits, st.misses);
}

TEST_F(FftGpu, PlanCacheCountersAndCapacity) {
    FFTPlanCache& cache = fft_plan_cache();
    const std::size_t before = cache.capacity();
    cache.clear();
    cache.reset_stats();
    Operand a = upload(TensorLayout(DataType::c32, {32}), random_values(32, true, DataType::f32, rng));
    Operand b = upload(TensorLayout(DataType::c32, {48}), random_values(48, true, DataType::f32, rng));
    (void)fft(a.view());
    (void)fft(a.view());
    EXPECT_EQ(cache.stats().misses, 1u);
    EXPECT_EQ(cache.stats().hits, 1u);
    cache.set_capacity(1);
    (void)fft(b.view());
    (void)fft(a.view());
    EXPECT_GE(cache.stats().evictions, 1u);
    EXPECT_EQ(cache.stats().size, 1u);
    cache.set_capacity(0);
    (void)fft(a.view());
    EXPECT_EQ(cache.stats().size, 0u);
    cache.set_capacity(before);
    core::release_workspaces();
    GPUMATH_EXPECT_CLOSE(download(fft(a.view())), dft(download(a), {32}, {0}, -1), 2e-5, "after releasing work areas");
}

// A hit skips validation but not the checks that depend on the pointers: the same layouts at a
// misaligned or overlapping address are refused before any GPU work, and the plan still works.
TEST_F(FftGpu, CacheHitsStillCheckPointers) {
    FFTPlanCache& cache = fft_plan_cache();
    cache.clear();
    cache.reset_stats();
    const TensorLayout layout(DataType::c32, {2, 32});
    const std::vector<cd> x = random_values(64, true, DataType::f32, rng);
    Operand a = upload(layout, x);
    Operand y = poisoned(layout);
    fft(a.view(), y.view());
    EXPECT_EQ(cache.stats().misses, 1u);
    auto* bytes = static_cast<unsigned char*>(a.buffer.data());
    const TensorView misaligned(bytes + 4, layout), overlapping(bytes + 8, layout);
    EXPECT_THROW(fft(misaligned, y.view()), InvalidArgument);
    EXPECT_THROW(fft(a.view(), overlapping), InvalidArgument);
    // The allocating form has a key of its own: a miss, refused by validation before it counts.
    EXPECT_THROW((void)fft(misaligned), InvalidArgument);
    fft(a.view(), y.view());
    EXPECT_EQ(cache.stats().misses, 1u);
    EXPECT_EQ(cache.stats().hits, 3u);
    EXPECT_EQ(cache.stats().size, 1u);
    GPUMATH_EXPECT_CLOSE(download(y), dft(x, {2, 32}, {1}, -1), 2e-5, "after the refused calls");
}

TEST_F(FftGpu, StatefulPlanReuseAndIntrospection) {
    FFT plan(TensorLayout(DataType::c32, {4, 100}));
    EXPECT_FALSE(plan.planned());
    plan.plan();
    EXPECT_TRUE(plan.planned());
    EXPECT_EQ(plan.executions_per_transform(), 1);
    EXPECT_FALSE(plan.copies());
    core::Stream s;
    for (int i = 0; i < 3; ++i) {
        const std::vector<cd> x = random_values(400, true, DataType::f32, rng);
        Operand in = upload(plan.input_layout(), x);
        const Tensor y = plan.execute(in.view(), Direction::forward, s);
        const Tensor z = plan.execute(y.view(), Direction::inverse, s);
        s.synchronize();
        GPUMATH_EXPECT_CLOSE(download(y), dft(x, {4, 100}, {1}, -1), 2e-5, "reuse " << i);
        GPUMATH_EXPECT_CLOSE(download(z), x, 2e-5, "reuse inverse " << i);
    }
    FFT copying(TensorLayout(DataType::f32, {8, 6}, {1, 8}), {.axes = {0, 1}});
    copying.plan();
    EXPECT_TRUE(copying.copies());
    EXPECT_GT(copying.workspace_size(), 0u);
    // A caller's memory resource serves work areas and results.
    auto pool = std::make_shared<core::DeviceMemoryResource>();
    FFT own(TensorLayout(DataType::c64, {3, 33}), {.memory_resource = pool});
    const std::vector<cd> x = random_values(99, true, DataType::f64, rng);
    Operand in = upload(own.input_layout(), x);
    const Tensor y = own.execute(in.view(), Direction::forward, s);
    s.synchronize();
    GPUMATH_EXPECT_CLOSE(download(y), dft(x, {3, 33}, {1}, -1), 1e-11, "own memory resource");
    EXPECT_GT(pool->used_bytes(), 0u);
}

// A gpumath Stream may be destroyed before the plan that ran on it: the stream frees its work
// area (from the caller's memory resource) in order on itself first, so nothing is ever freed on
// the destroyed handle, and the plan has nothing left to free on it when it goes.
TEST_F(FftGpu, WorkAreasOfACustomResourceGoWithTheirStream) {
    auto resource = std::make_shared<test::RecordingResource>();
    const std::int64_t n = 3 * 5 * 7 * 11 * 13;  // several passes, with a work area
    const std::vector<cd> x = random_values(4 * n, true, DataType::f32, rng);
    Operand in = upload(TensorLayout(DataType::c32, {4, n}), x);
    Operand out = poisoned(TensorLayout(DataType::c32, {4, n}));
    cudaStream_t handle = nullptr;
    {
        FFT plan(in.layout, {.memory_resource = resource});
        plan.plan();
        ASSERT_GT(plan.workspace_size(), 0u);
        {
            core::Stream s;
            handle = s.handle();
            plan.execute(in.view(), out.view(), Direction::forward, s);
        }  // destroyed with the transform perhaps still running
        ASSERT_GE(resource->allocations().size(), 1u);
        EXPECT_EQ(resource->deallocations().size(), resource->allocations().size());
        for (cudaStream_t s : resource->deallocations()) EXPECT_EQ(s, handle);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    GPUMATH_EXPECT_CLOSE(download(out), dft(x, {4, n}, {1}, -1), 2e-5, "after the stream and plan are gone");
    EXPECT_EQ(resource->deallocations().size(), resource->allocations().size());
}

TEST_F(FftGpu, EmptyBatchIsANoOp) {
    const Tensor e = fft(TensorView(static_cast<std::complex<float>*>(nullptr), {0, 16}));
    EXPECT_EQ(e.layout(), TensorLayout(DataType::c32, {0, 16}));
    FFT plan(TensorLayout(DataType::f32, {0, 16}));
    plan.plan();
    EXPECT_TRUE(plan.planned());
}

}  // namespace
}  // namespace gpumath
