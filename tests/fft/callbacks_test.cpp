// SPDX-License-Identifier: Apache-2.0
// FFT load/store callbacks on the GPU, in all three modes (fused into cuFFT, separate passes,
// automatic), with and without extern "C", from source and from LTO-IR, against a CPU reference
// in double; results must agree across modes.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include <gpumath/core/program.hpp>

#include "fft/fft_test_util.hpp"

namespace gpumath {
namespace {

using namespace fft_test;

// Element type names of a precision.
struct Types {
    const char* complex;  // cufftComplex
    const char* real;     // cufftReal
    const char* scalar;   // float
};
Types types_of(DataType precision) {
    if (precision == DataType::f64) return {"cufftDoubleComplex", "cufftDoubleReal", "double"};
    return {"cufftComplex", "cufftReal", "float"};
}

// load: data[offset] * w[offset], w = user_info (a table as long as the input's span).
std::string load_source(DataType precision, bool complex, bool extern_c, const std::string& name) {
    const Types t = types_of(precision);
    const char* T = complex ? t.complex : t.real;
    const std::string scale = complex ? "v.x *= w; v.y *= w;" : "v *= w;";
    return std::string("#include <cufftXt.h>\n") + (extern_c ? "extern \"C\" " : "") + "__device__ " + T + " " + name +
           "(void* data, unsigned long long offset, void* info, void* shared) {\n    " + T + " v = static_cast<" + T +
           "*>(data)[offset];\n    const " + t.scalar + " w = static_cast<const " + t.scalar +
           "*>(info)[offset];\n    " + scale + "\n    return v;\n}\n";
}

// store: data[offset] = element * g[offset], g = user_info (as long as the output's span).
std::string store_source(DataType precision, bool complex, bool extern_c, const std::string& name) {
    const Types t = types_of(precision);
    const char* T = complex ? t.complex : t.real;
    const std::string scale = complex ? "e.x *= g; e.y *= g;" : "e *= g;";
    return std::string(extern_c ? "extern \"C\" " : "") + "__device__ void " + name +
           "(void* data, unsigned long long offset, " + T + " e, void* info, void*) {\n    const " + t.scalar +
           " g = static_cast<const " + t.scalar + "*>(info)[offset];\n    " + scale + "\n    static_cast<" + T +
           "*>(data)[offset] = e;\n}\n";
}

// A device table of n positive weights (f32 or f64).
Operand weights(std::int64_t n, DataType precision, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> d(0.25, 1.75);
    std::vector<cd> w(static_cast<std::size_t>(n));
    for (auto& e : w) e = precision == DataType::f64 ? d(rng) : double(float(d(rng)));
    return upload(TensorLayout(precision, {n}), w);
}

std::vector<double> host_weights(const Operand& w) {
    std::vector<double> r;
    for (const cd& e : download(w)) r.push_back(e.real());
    return r;
}

// Inverse real transform of a (Hermitian-consistent in DC/Nyquist) half spectrum along the last
// axis of a row-major (batch, m) array, to length n; unscaled.
std::vector<cd> c2r_reference(const std::vector<cd>& half, std::int64_t batch, std::int64_t n) {
    const std::int64_t m = n / 2 + 1;
    std::vector<cd> full(static_cast<std::size_t>(batch * n));
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t k = 0; k < n; ++k)
            full[std::size_t(b * n + k)] =
                k < m ? half[std::size_t(b * m + k)] : std::conj(half[std::size_t(b * m + n - k)]);
    std::vector<cd> y = dft(full, {batch, n}, {1}, +1);
    for (auto& e : y) e = e.real();
    return y;
}

struct Case {
    FFTKind kind;
    DataType precision;
    Shape shape;                // logical input shape
    std::vector<int> in_order;  // layout order of the input (empty: row-major)
    Shape in_pad;
    bool prolog = true;
    bool epilog = true;
    Normalization norm = Normalization::backward;
    std::string name;
    bool odd_real = false;  // the real operand starts one element into its buffer
};

TensorLayout layout_of(DataType dt, const Shape& shape, std::vector<int> order, Shape pad) {
    if (order.empty())
        for (int d = 0; d < int(shape.size()); ++d) order.push_back(d);
    if (pad.empty()) pad.assign(shape.size(), 0);
    Shape strides(shape.size());
    std::int64_t s = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        strides[std::size_t(*it)] = s;
        s *= shape[std::size_t(*it)] + pad[std::size_t(*it)];
    }
    return TensorLayout(dt, shape, strides);
}

class FftCallbacks : public ::testing::Test {
protected:
    void SetUp() override { GPUMATH_REQUIRE_GPU(); }
    std::mt19937_64 rng = test::rng_for_test();

    // Runs `c` in `mode` and returns the output; compares with the CPU reference. The data and
    // weights come from `seed`, so runs with one seed (in different modes) must agree.
    std::vector<cd> run(const Case& c, CallbackMode mode, bool extern_c, bool use_code, bool through_cache,
                        std::uint64_t seed) {
        std::mt19937_64 gen(seed);
        const DataType p = c.precision;
        const DataType cpx = p == DataType::f64 ? DataType::c64 : DataType::c32;
        const bool in_complex = c.kind != FFTKind::r2c;
        const bool out_complex = c.kind != FFTKind::c2r;
        const std::int64_t last = c.shape.back();
        const std::int64_t n_out_last = c.kind == FFTKind::c2r ? 2 * (last - 1) + 1 : last;  // odd c2r length
        Shape out_shape = c.shape;
        if (c.kind == FFTKind::r2c) out_shape.back() = last / 2 + 1;
        if (c.kind == FFTKind::c2r) out_shape.back() = n_out_last;
        const TensorLayout il = layout_of(in_complex ? cpx : p, c.shape, c.in_order, c.in_pad);
        const TensorLayout ol = layout_of(out_complex ? cpx : p, out_shape, {}, {});

        // Input: random, or for c2r the rfft of random real data (consistent DC term).
        std::vector<cd> x;
        std::vector<cd> real_src;
        if (c.kind == FFTKind::c2r) {
            real_src = random_values(count(out_shape), false, p, gen);
            x = half_spectrum(dft(real_src, out_shape, {int(out_shape.size()) - 1}, -1), out_shape,
                              int(out_shape.size()) - 1);
            if (p == DataType::f32)
                for (auto& e : x) e = cd(double(float(e.real())), double(float(e.imag())));
        } else {
            x = random_values(count(c.shape), in_complex, p, gen);
        }
        Operand in = upload(il, x);
        Operand w = weights(il.span_elements(), p, gen);
        Operand g = weights(ol.span_elements(), p, gen);
        const std::vector<double> wh = host_weights(w), gh = host_weights(g);

        FFTOptions o{.kind = c.kind, .normalization = c.norm, .callback_mode = mode};
        if (c.kind == FFTKind::c2r) o.last_axis_size = n_out_last;
        const std::string tag = extern_c ? "_c" : "_cxx";
        if (c.prolog) {
            o.prolog = {.source = load_source(p, in_complex, extern_c, "window" + tag),
                        .symbol = "window" + tag,
                        .user_info = w.buffer.data()};
            if (use_code) {
                o.prolog.code =
                    core::Program(
                        o.prolog.source,
                        {.name = "user_load",
                         .std = "c++17",
                         .headers = {{"cufftXt.h",
                                      "#include <cuComplex.h>\n"
                                      "typedef cuComplex cufftComplex; typedef cuDoubleComplex cufftDoubleComplex;\n"
                                      "typedef float cufftReal; typedef double cufftDoubleReal;\n"}}})
                        .compile(core::CodeType::ltoir);
                o.prolog.source.clear();
            }
        }
        if (c.epilog) {
            o.epilog = {.source = "#include <cufftXt.h>\n" + store_source(p, out_complex, extern_c, "gain" + tag),
                        .symbol = "gain" + tag,
                        .user_info = g.buffer.data()};
        }

        Operand out = poisoned(ol);
        TensorView in_view = in.view(), out_view = out.view();
        // An odd real offset: the real operand one element into a larger buffer (cuFFT needs real
        // data aligned like a complex element, so gpumath copies it).
        const std::size_t eb = p == DataType::f64 ? 8 : 4;
        std::optional<core::Buffer> shifted;
        if (c.odd_real && c.kind == FFTKind::r2c) {
            shifted.emplace(in.bytes() + eb);
            EXPECT_EQ(cudaMemcpy(static_cast<char*>(shifted->data()) + eb, in.buffer.data(), in.bytes(),
                                 cudaMemcpyDeviceToDevice),
                      cudaSuccess);
            in_view = TensorView(static_cast<char*>(shifted->data()) + eb, il);
        }
        if (c.odd_real && c.kind == FFTKind::c2r) {
            shifted.emplace(out.bytes() + eb);
            EXPECT_EQ(cudaMemset(shifted->data(), 0xFF, out.bytes() + eb), cudaSuccess);
            out_view = TensorView(static_cast<char*>(shifted->data()) + eb, ol);
        }
        const Direction dir = c.kind == FFTKind::c2r ? Direction::inverse : Direction::forward;
        if (through_cache) {
            switch (c.kind) {
                case FFTKind::r2c:
                    rfft(in_view, out_view, o);
                    break;
                case FFTKind::c2r:
                    irfft(in_view, out_view, o);
                    break;
                default:
                    fft(in_view, out_view, o);
                    break;
            }
        } else {
            FFT plan(il, ol, o);
            plan.plan();
            if (mode != CallbackMode::automatic) EXPECT_EQ(plan.callback_mode(), mode);
            else EXPECT_NE(plan.callback_mode(), CallbackMode::automatic);
            plan.execute(in_view, out_view, dir);
        }
        if (c.odd_real && c.kind == FFTKind::c2r) {
            EXPECT_EQ(cudaMemcpy(out.buffer.data(), static_cast<char*>(shifted->data()) + eb, out.bytes(),
                                 cudaMemcpyDeviceToDevice),
                      cudaSuccess);
        }
        const std::vector<cd> got = download(out);

        // Reference.
        std::vector<cd> xw = x;
        const Shape lin = c.shape;
        if (c.prolog)
            for_each_index(
                lin, [&](const Shape& idx, std::int64_t i) { xw[std::size_t(i)] *= wh[std::size_t(offset(il, idx))]; });
        std::vector<cd> y;
        const int ax = int(c.shape.size()) - 1;
        std::int64_t n = c.kind == FFTKind::c2r ? n_out_last : last;
        if (c.kind == FFTKind::c2c) y = dft(xw, c.shape, {ax}, -1);
        if (c.kind == FFTKind::r2c) y = half_spectrum(dft(xw, c.shape, {ax}, -1), c.shape, ax);
        if (c.kind == FFTKind::c2r) y = c2r_reference(xw, count(c.shape) / last, n_out_last);
        double s = 1.0;
        if (c.norm == Normalization::ortho) s = 1.0 / std::sqrt(double(n));
        if (c.norm == Normalization::forward && dir == Direction::forward) s = 1.0 / double(n);
        if (c.norm == Normalization::backward && dir == Direction::inverse) s = 1.0 / double(n);
        for (auto& e : y) e *= s;
        if (c.epilog)
            for_each_index(out_shape, [&](const Shape& idx, std::int64_t i) {
                y[std::size_t(i)] *= gh[std::size_t(offset(ol, idx))];
            });
        GPUMATH_EXPECT_CLOSE(got, y, tolerance(p),
                             c.name << " mode " << to_string(mode) << (extern_c ? " extern C" : " C++")
                                    << (use_code ? " from LTO-IR" : "") << (through_cache ? " (cache)" : ""));
        return got;
    }

    void all_modes(const Case& c) {
        for (bool extern_c : {false, true}) {
            const std::uint64_t seed = rng();  // the same data in every mode
            const std::vector<cd> sep = run(c, CallbackMode::separate, extern_c, false, false, seed);
            const std::vector<cd> fused = run(c, CallbackMode::fused, extern_c, false, false, seed);
            const std::vector<cd> automatic = run(c, CallbackMode::automatic, extern_c, false, true, seed);
            GPUMATH_EXPECT_CLOSE(fused, sep, tolerance(c.precision), c.name << ": fused vs separate");
            GPUMATH_EXPECT_CLOSE(automatic, sep, tolerance(c.precision), c.name << ": automatic vs separate");
        }
    }
};

TEST_F(FftCallbacks, C2CWindowAndGainAllModes) {
    all_modes({FFTKind::c2c, DataType::f32, {4, 64}, {}, {}, true, true, Normalization::backward, "c2c f32"});
    all_modes({FFTKind::c2c, DataType::f64, {3, 17}, {}, {}, true, true, Normalization::ortho, "c2c f64 ortho"});
}

TEST_F(FftCallbacks, PrologOrEpilogAlone) {
    all_modes({FFTKind::c2c, DataType::f32, {2, 128}, {}, {}, true, false, Normalization::forward, "prolog only"});
    all_modes({FFTKind::c2c, DataType::f32, {2, 128}, {}, {}, false, true, Normalization::forward, "epilog only"});
}

TEST_F(FftCallbacks, RealTransforms) {
    all_modes({FFTKind::r2c, DataType::f32, {3, 50}, {}, {}, true, true, Normalization::backward, "r2c f32"});
    all_modes({FFTKind::r2c, DataType::f64, {2, 33}, {}, {}, true, true, Normalization::ortho, "r2c f64"});
    all_modes({FFTKind::c2r, DataType::f32, {3, 9}, {}, {}, true, true, Normalization::backward, "c2r f32"});
    all_modes({FFTKind::c2r, DataType::f64, {2, 5}, {}, {}, false, true, Normalization::forward, "c2r f64"});
}

TEST_F(FftCallbacks, StridedOperandsUseTheOperandsOwnOffsets) {
    // offset is the element offset in the caller's layout in every mode.
    all_modes({FFTKind::c2c,
               DataType::f32,
               {6, 32},
               {1, 0},
               {2, 3},
               true,
               true,
               Normalization::backward,
               "column-major padded c2c"});
    all_modes({FFTKind::r2c, DataType::f32, {5, 16}, {}, {0, 4}, true, true, Normalization::backward, "padded r2c"});
}

TEST_F(FftCallbacks, RealOperandsAtOddOffsets) {
    // gpumath copies the real side through a temp; automatic and separate modes must give the
    // reference result. Fused mode may be refused by cuFFT for the copied layout (a CufftError, as
    // documented); when it runs, it must agree too.
    const std::array<Case, 2> cases{
        Case{FFTKind::r2c, DataType::f32, {3, 50}, {}, {}, true, true, Normalization::backward, "odd r2c f32", true},
        Case{FFTKind::c2r, DataType::f64, {2, 9}, {}, {}, true, true, Normalization::forward, "odd c2r f64", true}};
    for (const Case& c : cases) {
        const std::uint64_t seed = rng();
        const std::vector<cd> sep = run(c, CallbackMode::separate, false, false, false, seed);
        const std::vector<cd> automatic = run(c, CallbackMode::automatic, false, false, true, seed);
        GPUMATH_EXPECT_CLOSE(automatic, sep, tolerance(c.precision), c.name << ": automatic vs separate");
        try {
            const std::vector<cd> fused = run(c, CallbackMode::fused, false, false, false, seed);
            GPUMATH_EXPECT_CLOSE(fused, sep, tolerance(c.precision), c.name << ": fused vs separate");
        } catch (const CufftError& e) {
            std::printf("[ info ] %s: cuFFT refused fused callbacks for the copied layout: %s\n", c.name.c_str(),
                        e.what());
        }
    }
}

TEST_F(FftCallbacks, LtoIrCallbacks) {
    const Case c{FFTKind::c2c, DataType::f32, {4, 64}, {}, {}, true, true, Normalization::backward, "LTO-IR prolog"};
    const std::uint64_t seed = rng();  // the same data in both modes
    const std::vector<cd> sep = run(c, CallbackMode::separate, false, true, false, seed);
    const std::vector<cd> fused = run(c, CallbackMode::automatic, false, true, false, seed);
    GPUMATH_EXPECT_CLOSE(fused, sep, 2e-5, "LTO-IR automatic vs separate");
    // C linkage in LTO-IR: cuFFT cannot find it (automatic falls back), the separate pass links it.
    (void)run(c, CallbackMode::separate, true, true, false, seed);
    (void)run(c, CallbackMode::automatic, true, true, false, seed);
}

TEST_F(FftCallbacks, OneSourceForPrologAndEpilog) {
    const DataType p = DataType::f32;
    const std::string src = load_source(p, true, false, "win") + store_source(p, true, true, "gain");
    Operand in = upload(TensorLayout(DataType::c32, {2, 32}), random_values(64, true, p, rng));
    Operand w = weights(64, p, rng), g = weights(64, p, rng);
    std::vector<std::vector<cd>> results;
    for (CallbackMode mode : {CallbackMode::separate, CallbackMode::fused, CallbackMode::automatic}) {
        Operand out = poisoned(TensorLayout(DataType::c32, {2, 32}));
        fft(in.view(), out.view(),
            {.prolog = {.source = src, .symbol = "win", .user_info = w.buffer.data()},
             .epilog = {.source = src, .symbol = "gain", .user_info = g.buffer.data()},
             .callback_mode = mode});
        results.push_back(download(out));
    }
    std::vector<cd> x = download(in);
    const std::vector<double> wh = host_weights(w), gh = host_weights(g);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] *= wh[i];
    std::vector<cd> y = dft(x, {2, 32}, {1}, -1);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] *= gh[i];
    for (const auto& r : results) GPUMATH_EXPECT_CLOSE(r, y, 2e-5, "shared source");
}

TEST_F(FftCallbacks, OneSourceWithQualifiedNames) {
    // Namespace-qualified symbols of one source: each fused module renames the other function.
    const DataType p = DataType::f32;
    const std::string src = "namespace cb {\n" + load_source(p, true, false, "win") +
                            store_source(p, true, false, "gain") + "}  // namespace cb\n";
    Operand in = upload(TensorLayout(DataType::c32, {2, 32}), random_values(64, true, p, rng));
    Operand w = weights(64, p, rng), g = weights(64, p, rng);
    std::vector<cd> x = download(in);
    const std::vector<double> wh = host_weights(w), gh = host_weights(g);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] *= wh[i];
    std::vector<cd> y = dft(x, {2, 32}, {1}, -1);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] *= gh[i];
    for (CallbackMode mode : {CallbackMode::separate, CallbackMode::fused, CallbackMode::automatic}) {
        Operand out = poisoned(TensorLayout(DataType::c32, {2, 32}));
        FFT plan(in.layout, {.prolog = {.source = src, .symbol = "cb::win", .user_info = w.buffer.data()},
                             .epilog = {.source = src, .symbol = "::cb::gain", .user_info = g.buffer.data()},
                             .callback_mode = mode});
        plan.execute(in.view(), out.view(), Direction::forward);
        if (mode != CallbackMode::automatic) {
            EXPECT_EQ(plan.callback_mode(), mode);
        }
        GPUMATH_EXPECT_CLOSE(download(out), y, 2e-5, "qualified names, " << to_string(mode));
    }
}

TEST_F(FftCallbacks, OneSourceWithOneNameRunsSeparately) {
    // "a::f" and "b::f" of one source cannot be renamed apart in a fused module: fused mode is
    // refused when the plan is made, automatic runs them as separate passes.
    const DataType p = DataType::f32;
    const std::string src = "namespace a {\n" + load_source(p, true, false, "f") + "}\nnamespace b {\n" +
                            store_source(p, true, false, "f") + "}\n";
    Operand in = upload(TensorLayout(DataType::c32, {2, 32}), random_values(64, true, p, rng));
    Operand w = weights(64, p, rng), g = weights(64, p, rng);
    FFTOptions o{.prolog = {.source = src, .symbol = "a::f", .user_info = w.buffer.data()},
                 .epilog = {.source = src, .symbol = "b::f", .user_info = g.buffer.data()},
                 .callback_mode = CallbackMode::fused};
    test::expect_throw_with<InvalidArgument>([&] { FFT(in.layout, o); },
                                             {"options.epilog.symbol", "ends in the same name"});
    o.callback_mode = CallbackMode::automatic;
    FFT plan(in.layout, o);
    Operand out = poisoned(in.layout);
    plan.execute(in.view(), out.view(), Direction::forward);
    EXPECT_EQ(plan.callback_mode(), CallbackMode::separate);
    std::vector<cd> x = download(in);
    const std::vector<double> wh = host_weights(w), gh = host_weights(g);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] *= wh[i];
    std::vector<cd> y = dft(x, {2, 32}, {1}, -1);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] *= gh[i];
    GPUMATH_EXPECT_CLOSE(download(out), y, 2e-5, "one name, automatic");
}

// The pass kernels of callbacks stay loaded after their FFT is gone and its cuFFT plans are
// destroyed on gpumath's release thread, so destroying an FFT does not wait for the work it
// enqueued (any wait for the device would block here: the stream is held by a kernel that waits
// for the host), and that work still completes correctly.
TEST_F(FftCallbacks, DestroyingAPlanDoesNotWaitForItsWorkWhichStillCompletes) {
    const DataType p = DataType::f32;
    Operand in = upload(TensorLayout(DataType::c32, {4, 64}), random_values(256, true, p, rng));
    Operand w = weights(256, p, rng), g = weights(256, p, rng);
    Operand out = poisoned(in.layout);
    const char* hold_source = R"(
extern "C" __global__ void hold(volatile const int* release, int* seen) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (;;) {
        if (*release != 0) { *seen = 1; return; }
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > 10000000000ull) { *seen = 2; return; }  // 10 s: never hang the test
    }
})";
    const core::Module module(core::Program(hold_source).compile(core::CodeType::cubin));
    const core::Kernel hold = module.kernel("hold");
    int* release = nullptr;
    ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&release), sizeof(int), cudaHostAllocMapped), cudaSuccess);
    const std::unique_ptr<int, cudaError_t (*)(void*)> release_owner(release, &cudaFreeHost);
    *release = 0;
    int* release_dev = nullptr;
    ASSERT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&release_dev), release, 0), cudaSuccess);
    core::Buffer seen(sizeof(int));
    ASSERT_EQ(cudaMemset(seen.data(), 0, sizeof(int)), cudaSuccess);
    core::Stream s;
    {
        FFT plan(
            in.layout,
            {.prolog = {.source = load_source(p, true, false, "win"), .symbol = "win", .user_info = w.buffer.data()},
             .epilog = {.source = store_source(p, true, false, "gain"), .symbol = "gain", .user_info = g.buffer.data()},
             .callback_mode = CallbackMode::separate});
        plan.execute(in.view(), out.view(), Direction::forward, s);  // plans, compiles, leases the work area
        ASSERT_EQ(cudaMemsetAsync(out.buffer.data(), 0xFF, out.bytes(), s.handle()), cudaSuccess);
        core::launch(s, {.grid = 1, .block = 1}, hold, static_cast<const int*>(release_dev),
                     static_cast<int*>(seen.data()));
        plan.execute(in.view(), out.view(), Direction::forward, s);  // behind the held kernel
    }
    EXPECT_EQ(cudaStreamQuery(s.handle()), cudaErrorNotReady) << "the FFT's destruction waited for its work";
    __atomic_store_n(release, 1, __ATOMIC_SEQ_CST);
    s.synchronize();
    int seen_host = 0;
    ASSERT_EQ(cudaMemcpy(&seen_host, seen.data(), sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(seen_host, 1) << "the held kernel ran until the host released it";
    std::vector<cd> x = download(in);
    const std::vector<double> wh = host_weights(w), gh = host_weights(g);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] *= wh[i];
    std::vector<cd> y = dft(x, {4, 64}, {1}, -1);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] *= gh[i];
    GPUMATH_EXPECT_CLOSE(download(out), y, 2e-5, "work enqueued before the FFT was destroyed");
}

TEST_F(FftCallbacks, AutomaticFallsBackWhenOnlyTheFusedEntryFailsToCompile) {
    // A macro named like a parameter of the entry gpumath wraps around a fused callback breaks
    // that entry only; the separate pass compiles. Automatic mode runs separately, fused throws.
    const DataType p = DataType::f32;
    const std::string src = "#define shared\n" + load_source(p, true, false, "win");
    // load_source names its last parameter `shared`: with the macro it is unnamed, still valid.
    Operand in = upload(TensorLayout(DataType::c32, {2, 32}), random_values(64, true, p, rng));
    Operand w = weights(64, p, rng);
    FFTOptions o{.prolog = {.source = src, .symbol = "win", .user_info = w.buffer.data()}};
    FFT plan(in.layout, o);
    Operand out = poisoned(in.layout);
    plan.execute(in.view(), out.view(), Direction::forward);
    EXPECT_EQ(plan.callback_mode(), CallbackMode::separate);
    std::vector<cd> x = download(in);
    const std::vector<double> wh = host_weights(w);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] *= wh[i];
    GPUMATH_EXPECT_CLOSE(download(out), dft(x, {2, 32}, {1}, -1), 2e-5, "automatic after a fused compile error");
    o.callback_mode = CallbackMode::fused;
    FFT fused(in.layout, o);
    EXPECT_THROW(fused.plan(), CompileError);
}

TEST_F(FftCallbacks, WorkspaceSizeWhileTheOtherDirectionIsBuilt) {
    // A fused c2c plan builds its inverse variant on the first inverse execution; workspace_size()
    // may be read meanwhile from another thread (run under ThreadSanitizer to see a race).
    const std::vector<cd> x = random_values(4 * 256, true, DataType::f32, rng);
    Operand in = upload(TensorLayout(DataType::c32, {4, 256}), x);
    FFT plan(in.layout, {.callback_mode = CallbackMode::fused});
    plan.plan();
    const std::size_t before = plan.workspace_size();
    EXPECT_GT(before, 0u);
    std::atomic<bool> done{false};
    std::size_t smallest = before;
    std::thread reader([&] {
        while (!done.load()) smallest = std::min(smallest, plan.workspace_size());
    });
    Operand y = poisoned(in.layout), z = poisoned(in.layout);
    plan.execute(in.view(), y.view(), Direction::forward);
    plan.execute(y.view(), z.view(), Direction::inverse);
    done = true;
    reader.join();
    EXPECT_EQ(smallest, before);  // never shrinks
    EXPECT_GE(plan.workspace_size(), before);
    GPUMATH_EXPECT_CLOSE(download(z), x, 2e-5, "round trip");
}

TEST_F(FftCallbacks, FusedNormalizationWithoutCallbacks) {
    const std::vector<cd> x = random_values(3 * 256, true, DataType::f32, rng);
    Operand in = upload(TensorLayout(DataType::c32, {3, 256}), x);
    FFT plan(in.layout, {.callback_mode = CallbackMode::fused});
    Operand y = poisoned(in.layout), z = poisoned(in.layout);
    plan.execute(in.view(), y.view(), Direction::forward);
    plan.execute(y.view(), z.view(), Direction::inverse);  // 1/n fused into a generated store
    GPUMATH_EXPECT_CLOSE(download(y), dft(x, {3, 256}, {1}, -1), 2e-5, "forward, fused mode");
    GPUMATH_EXPECT_CLOSE(download(z), x, 2e-5, "inverse with fused 1/n");
}

TEST_F(FftCallbacks, FusedModeFusesOrRefuses) {
    // Contiguous c2c needs no temps: an explicit fused plan either fuses both callbacks (no copy)
    // or, when cuFFT refuses it, throws CufftError. It must never be retried through contiguous
    // temps, which would run the callbacks as separate passes while reporting `fused`.
    const DataType p = DataType::f32;
    for (const std::array<std::int64_t, 2> shape :
         {std::array<std::int64_t, 2>{4, 64}, {3, 1000}, {65536, 256}, {2, 1 << 20}}) {
        const std::int64_t total = shape[0] * shape[1];
        const TensorLayout layout(DataType::c32, {shape[0], shape[1]});
        const std::vector<cd> x = random_values(total, true, p, rng);
        Operand in = upload(layout, x);
        Operand w = weights(total, p, rng), g = weights(total, p, rng);
        FFTOptions o{
            .normalization = Normalization::forward,
            .prolog = {.source = load_source(p, true, false, "win"), .symbol = "win", .user_info = w.buffer.data()},
            .epilog = {.source = store_source(p, true, false, "gain"), .symbol = "gain", .user_info = g.buffer.data()},
            .callback_mode = CallbackMode::fused};
        FFT fused(layout, o);
        try {
            fused.plan();
        } catch (const CufftError& e) {
            EXPECT_NE(std::string(e.what()).find("CallbackMode::separate"), std::string::npos) << e.what();
            std::printf("[ info ] (%lld, %lld): cuFFT refused the fused plan: %s\n", static_cast<long long>(shape[0]),
                        static_cast<long long>(shape[1]), e.what());
            continue;
        }
        EXPECT_EQ(fused.callback_mode(), CallbackMode::fused);
        EXPECT_FALSE(fused.copies()) << "(" << shape[0] << ", " << shape[1] << "): a fused plan copied its operands";
        Operand a = poisoned(layout), b = poisoned(layout);
        fused.execute(in.view(), a.view(), Direction::forward);
        o.callback_mode = CallbackMode::separate;
        FFT(layout, o).execute(in.view(), b.view(), Direction::forward);
        GPUMATH_EXPECT_CLOSE(download(a), download(b), 2e-5,
                             "(" << shape[0] << ", " << shape[1] << ") fused vs separate");
    }
}

TEST_F(FftCallbacks, LargeBatchFallsBackWhenFusionFails) {
    // cuFFT 12.0 on the H200 refused n=256 x 65536 with load and store callbacks; automatic mode
    // must still give the right result (whichever way it runs).
    const DataType p = DataType::f32;
    const std::int64_t n = 256, batch = 65536;
    const std::vector<cd> x = random_values(n * batch, true, p, rng);
    Operand in = upload(TensorLayout(DataType::c32, {batch, n}), x);
    Operand w = weights(n * batch, p, rng), g = weights(n * batch, p, rng);
    const FFTOptions base{
        .normalization = Normalization::forward,
        .prolog = {.source = load_source(p, true, false, "win"), .symbol = "win", .user_info = w.buffer.data()},
        .epilog = {.source = store_source(p, true, false, "gain"), .symbol = "gain", .user_info = g.buffer.data()}};
    FFTOptions automatic = base, separate = base;
    separate.callback_mode = CallbackMode::separate;
    Operand a = poisoned(in.layout), s = poisoned(in.layout);
    FFT plan(in.layout, automatic);
    plan.execute(in.view(), a.view(), Direction::forward);
    FFT(in.layout, separate).execute(in.view(), s.view(), Direction::forward);
    const std::vector<cd> ga = download(a), gs = download(s);
    GPUMATH_EXPECT_CLOSE(ga, gs, 2e-5, "automatic (" << to_string(plan.callback_mode()) << ") vs separate");
    // Spot-check the first lines against the CPU.
    const std::int64_t lines = 3;
    std::vector<cd> head(x.begin(), x.begin() + lines * n);
    const std::vector<double> wh = host_weights(w), gh = host_weights(g);
    for (std::size_t i = 0; i < head.size(); ++i) head[i] *= wh[i];
    std::vector<cd> y = dft(head, {lines, n}, {1}, -1);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] *= gh[i] / double(n);
    GPUMATH_EXPECT_CLOSE(std::vector<cd>(gs.begin(), gs.begin() + lines * n), y, 2e-5, "first lines");
}

}  // namespace
}  // namespace gpumath
