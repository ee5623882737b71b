// SPDX-License-Identifier: Apache-2.0
// Random hostile option fields and helper calls that the other fuzz targets leave alone: a matmul's
// user epilog function (MatmulOptions::epilog_function, matmul_epilog_signature) with every bias
// orientation, FFT callbacks (fft_callback_signature, compile_fft_callback, FFTOptions::prolog and
// epilog with source, code, symbol and user_info), every ProgramOptions and LinkerOptions field
// (names, defines, headers, include directories, flags, register limits, architectures, the empty
// architecture that asks for a device), ObjectCode's lowered names, the TensorLayout/TensorView/
// Tensor helpers (transposed, data_as, from_host, empty, to_host of adopted strided tensors) and
// the caches' controls. Accepted outcomes as in validation_fuzz_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/fft.hpp>
#include <gpumath/matmul.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"
#include "fuzz/fuzz_util.hpp"

using namespace gpumath;
using namespace gpumath::test::fuzz;

namespace {

using namespace std::string_view_literals;

/// Names for a function or a symbol: C++ names (qualified, leading "::"), keywords, C++20-only
/// keywords (names in C++17), malformed qualifications, spaces, punctuation, a NUL and long names.
std::string symbol(Fuzzer& fz) {
    static constexpr std::array<std::string_view, 22> names{
        "epilog",   "act::swish", "::g",    "",  "int", "a::int",  "1abc", "a b",   "a::", "::",    "a:::b",
        "requires", "a;b",        "f\0g"sv, "_", "__x", "a::b::c", "load", "store", "a-b", "a::1b", "namespace::f"};
    if (fz.hostile(5)) return std::string(std::size_t(1 + fz.below(400)), 'x');
    return std::string(fz.pick(names));
}

/// CUDA C++ for a function `name` of a user epilog (or, `kind`, an FFT callback), or hostile text.
std::string source(Fuzzer& fz, const std::string& name, int kind) {
    if (fz.hostile(10)) return "";
    if (fz.hostile(10)) return std::string("__device__ float f(float x) { return x; }\0junk"sv);
    if (fz.hostile(10)) return "this is not C++";
    if (fz.hostile(5)) return "#include <gpumath_fuzz_no_such_header.h>\n";
    if (kind == 0)
        return "__device__ float " + name + "(float v, long long, long long, long long, void*) { return v; }";
    if (kind == 1)
        return "__device__ cufftComplex " + name +
               "(void* d, unsigned long long o, void*, void*) { return static_cast<cufftComplex*>(d)[o]; }";
    return "__device__ void " + name +
           "(void* d, unsigned long long o, cufftComplex e, void*, void*) { static_cast<cufftComplex*>(d)[o] = e; }";
}

/// An architecture name: real, virtual, suffixed, unknown, malformed, empty (asks for the device).
std::string arch(Fuzzer& fz) {
    static constexpr std::array<std::string_view, 12> archs{"sm_90",  "sm_90", "compute_90", "sm_90a",
                                                            "sm_80a", "sm_1",  "banana",     "",
                                                            "sm_90f", "sm_",   "sm_100f",    "sm_90\0"sv};
    return std::string(fz.pick(archs));
}

/// A small ObjectCode of a random type (its bytes are no real code).
core::ObjectCode junk_code(Fuzzer& fz) {
    return core::ObjectCode::from_bytes("not code"sv, fz.enum_value<core::CodeType>(4), fz.chance(50) ? "sm_90" : "");
}

DataType matmul_type(Fuzzer& fz) {
    static constexpr std::array<DataType, 7> types{DataType::f16, DataType::bf16, DataType::f32, DataType::f64,
                                                   DataType::c32, DataType::i8,   DataType::e4m3};
    return fz.hostile(10) ? fz.dtype() : fz.pick(types);
}

/// A bias against D (M x N, `batch` > 0: batched): every orientation NumPy broadcasts, and some
/// that do not; packed or strided.
TensorLayout bias_layout(Fuzzer& fz, DataType t, std::int64_t m, std::int64_t n, std::int64_t batch) {
    std::vector<std::int64_t> shape;
    switch (fz.below(9)) {
        case 0:
            shape = {n};
            break;
        case 1:
            shape = {1, n};
            break;
        case 2:
            shape = {m, 1};
            break;
        case 3:
            shape = {m, n};
            break;
        case 4:
            shape = {batch, 1, n};
            break;
        case 5:
            shape = {batch, m, 1};
            break;
        case 6:
            shape = {n, 1};
            break;
        case 7:
            shape = {};
            break;
        default:
            shape = {1, 1, m};
    }
    std::vector<std::int64_t> strides;
    if (fz.chance(25) && !shape.empty()) {
        static constexpr std::array<std::int64_t, 6> odd{0, 1, 2, 3, 1000, -1};
        for (std::size_t i = 0; i < shape.size(); ++i) strides.push_back(fz.pick(odd));
    }
    return {t, std::span<const std::int64_t>(shape), std::span<const std::int64_t>(strides)};
}

}  // namespace

TEST(ValidationFuzz, MatmulEpilogFunction) {
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would run on fake pointers";
    const std::uint64_t seed = fuzz_seed() + 30;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(3000);
    static constexpr std::array<std::int64_t, 8> dims{1, 2, 8, 16, 17, 64, 3, 128};
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("matmul_epilog_signature", i, t, [&] { (void)matmul_epilog_signature(symbol(fz)); });
        classify("matmul epilog_function", i, t, [&] {
            const std::int64_t m = fz.pick(dims), k = fz.pick(dims), nn = fz.pick(dims);
            const std::int64_t batch = fz.chance(30) ? 1 + fz.below(4) : 0;
            const DataType at = matmul_type(fz);
            auto matrix = [&](DataType dt, std::int64_t rows, std::int64_t cols, bool col_major) {
                std::vector<std::int64_t> shape, strides;
                if (batch > 0) shape.push_back(batch);
                shape.push_back(rows);
                shape.push_back(cols);
                if (col_major) {
                    if (batch > 0) strides.push_back(rows * cols);
                    strides.push_back(1);
                    strides.push_back(rows);
                }
                return TensorLayout(dt, std::span<const std::int64_t>(shape), std::span<const std::int64_t>(strides));
            };
            const TensorLayout a = matrix(at, m, k, fz.chance(30));
            const TensorLayout b = matrix(fz.chance(90) ? at : fz.dtype(), k, nn, fz.chance(30));
            const DataType dt = at == DataType::i8 ? DataType::i32
                                : is_fp8(at)       ? DataType::bf16
                                : fz.chance(10)    ? fz.dtype()
                                                   : at;
            const TensorLayout d = matrix(dt, m, nn, fz.chance(30));
            MatmulOptions o;
            static constexpr std::array<Epilog, 6> biased{Epilog::bias,      Epilog::relu_bias,     Epilog::gelu_bias,
                                                          Epilog::silu_bias, Epilog::relu_aux_bias, Epilog::none};
            o.epilog = fz.chance(50) ? fz.pick(biased) : fz.enum_value<Epilog>(18);
            if (fz.chance(10)) o.compute_type = fz.enum_value<ComputeType>(8);
            if (fz.chance(10)) o.result_type = fz.chance(50) ? dt : fz.dtype();
            if (fz.chance(70)) {
                MatmulEpilogFunction f;
                f.symbol = fz.chance(70) ? "epilog" : symbol(fz);
                f.source = source(fz, f.symbol, 0);
                o.epilog_function = std::move(f);
            }
            MatmulArgs args;
            if (fz.chance(80)) args.bias = fz.view(4, bias_layout(fz, fz.chance(80) ? dt : fz.dtype(), m, nn, batch));
            if (fz.chance(30)) args.epilog_user_info = fz.pointer(5);
            const TensorView av = fz.view(1, a), bv = fz.view(2, b), dv = fz.view(3, d);
            switch (fz.below(3)) {
                case 0: {
                    Matmul mm(a, b, o);
                    mm.execute(av, bv, dv, args);
                    break;
                }
                case 1:
                    matmul(av, bv, dv, args, o);
                    break;
                default:
                    (void)matmul(av, bv, args, o);
            }
        });
    }
    report("matmul epilog_function/bias", seed, 2 * n, t);
    EXPECT_GT(t.passed, n / 100);
    EXPECT_GT(t.rejected, n / 10);
}

TEST(ValidationFuzz, FftCallbacks) {
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would run on fake pointers";
    const std::uint64_t seed = fuzz_seed() + 31;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(3000);
    // compile_fft_callback runs NVRTC for the calls that pass validation (a few distinct sources,
    // cached in memory after the first), so fewer of those.
    const int compiles = std::max(1, n / 20);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("fft_callback_signature", i, t,
                 [&] { (void)fft_callback_signature(fz.enum_value<FFTCallbackKind>(2), fz.dtype(), symbol(fz)); });
        if (i < compiles) {
            classify("compile_fft_callback", i, t, [&] {
                const auto kind = fz.enum_value<FFTCallbackKind>(2);
                FFTCallback cb;
                cb.symbol = fz.chance(70) ? (kind == FFTCallbackKind::store ? "store" : "load") : symbol(fz);
                cb.source = source(fz, cb.symbol, kind == FFTCallbackKind::store ? 2 : 1);
                if (fz.hostile(10)) cb.code = junk_code(fz);
                if (fz.chance(10)) cb.user_info = fz.pointer(6);
                const DataType element = fz.chance(80) ? DataType::c32 : fz.dtype();
                (void)compile_fft_callback(cb, kind, element, fz.chance(80) ? "sm_90" : arch(fz));
            });
        }
        classify("fft callbacks", i, t, [&] {
            static constexpr std::array<DataType, 5> types{DataType::c32, DataType::c64, DataType::f32, DataType::f64,
                                                           DataType::f16};
            const DataType it = fz.hostile(10) ? fz.dtype() : fz.pick(types);
            const std::int64_t len = fz.chance(80) ? 16 : fz.extent();
            const TensorLayout in(it, {fz.chance(50) ? 1 : 4, len});
            FFTOptions o;
            o.callback_mode = fz.enum_value<CallbackMode>(3);
            for (FFTCallback* cb : {&o.prolog, &o.epilog}) {
                if (fz.chance(40)) continue;
                const bool store = cb == &o.epilog;
                if (fz.chance(10)) {
                    if (fz.chance(50)) cb->symbol = symbol(fz);
                    if (fz.chance(50)) cb->user_info = fz.pointer(7);
                    continue;  // a symbol or user_info without a callback
                }
                cb->symbol = fz.chance(60) ? (store ? "store" : "load") : symbol(fz);
                if (fz.chance(80)) cb->source = source(fz, cb->symbol, store ? 2 : 1);
                if (cb->source.empty() || fz.hostile(10)) {
                    cb->code = fz.chance(60)
                                   ? core::ObjectCode::from_bytes("not code"sv, core::CodeType::ltoir, "sm_90")
                                   : junk_code(fz);
                }
                if (fz.chance(30)) cb->user_info = fz.pointer(store ? 8 : 9);
            }
            // One source for both callbacks, sometimes with functions of one name.
            if (fz.chance(15) && !o.prolog.source.empty()) {
                o.epilog.source = o.prolog.source;
                o.epilog.code = {};
                if (o.epilog.symbol.empty() || fz.chance(30)) o.epilog.symbol = o.prolog.symbol;
            }
            const TensorView iv = fz.view(1, in);
            const TensorView ov = fz.view(2, in);
            switch (fz.below(3)) {
                case 0: {
                    FFT plan(in, o);
                    plan.execute(iv, ov, Direction::forward);
                    break;
                }
                case 1:
                    gpumath::fft(iv, ov, o);
                    break;
                default:
                    (void)gpumath::rfft(iv, o);
            }
        });
    }
    report("fft callbacks", seed, 2 * n + compiles, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, n / 10);
}

TEST(ValidationFuzz, ProgramOptionFields) {
    const std::uint64_t seed = fuzz_seed() + 32;
    Fuzzer fz(seed);
    Tally t;
    // A few calls compile (the same small programs, cached in memory after the first).
    const int n = iterations(3000) / 5;
    static constexpr std::array<std::string_view, 10> texts{"N",        "",   "a\nb", "x\0y"sv, "1",
                                                            "BAD NAME", "1N", "_x",   "line\r", "a b"};
    static constexpr std::array<std::string_view, 12> flags{
        "--not-an-option", "",          "-arch=sm_80", "-I/tmp",   "-include",         "-dlto", "no-dash",
        "--std=c++17",     "-lineinfo", "-O3",         "-Dx\0y"sv, "--pre-include=x.h"};
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("ProgramOptions", i, t, [&] {
            core::ProgramOptions po;
            if (fz.chance(20)) po.name = std::string(fz.pick(texts));
            po.arch = fz.chance(60) ? "sm_90" : arch(fz);
            if (fz.chance(15))
                po.std = std::string(
                    fz.pick(std::array<std::string_view, 6>{"c++20", "c++11", "c++23", "", "gnu++17", "c++17\0"sv}));
            for (int j = fz.below(3); j > 0; --j) po.defines[std::string(fz.pick(texts))] = std::string(fz.pick(texts));
            if (fz.chance(15))
                po.include_dirs.push_back(std::string(fz.pick(std::array<std::string_view, 5>{
                    "", "/nonexistent-gpumath-fuzz", "/tmp", "/tmp\0x"sv, "/etc/hostname"})));
            for (int j = fz.below(3); j > 0; --j) po.headers[std::string(fz.pick(texts))] = std::string(fz.pick(texts));
            if (fz.chance(15)) po.extra.push_back(std::string(fz.pick(flags)));
            if (fz.chance(15)) po.max_registers = fz.chance(50) ? fz.below(600) - 100 : std::numeric_limits<int>::min();
            if (fz.chance(10))
                po.toolkit_root = std::string(
                    fz.pick(std::array<std::string_view, 3>{"/nonexistent-gpumath-fuzz", "/tmp", "/usr/local/cuda"}));
            po.fast_math = fz.chance(10);
            po.lineinfo = fz.chance(10);
            std::string src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = N; }";
            if (fz.hostile(10)) src = std::string("__global__ void k() {}\0tail"sv);
            core::Program p(src, po);
            if (fz.chance(20)) p.add_name_expression(std::string(fz.pick(texts)));
            // Most calls stop at the options; compile a fraction of the valid ones.
            if (fz.chance(10)) (void)p.compile(fz.enum_value<core::CodeType>(4));
        });
        classify("ObjectCode lowered names", i, t, [&] {
            std::vector<std::pair<std::string, std::string>> names;
            for (int j = fz.below(4); j > 0; --j) names.emplace_back(fz.pick(texts), fz.pick(texts));
            const core::ObjectCode code = core::ObjectCode::from_bytes(
                fz.chance(50) ? ".version 8.0\n.target sm_90\n.address_size 64\n"sv
                              : "\x7f"
                                "ELF"sv,
                fz.chance(50) ? core::CodeType::ptx : fz.enum_value<core::CodeType>(4), arch(fz), names);
            (void)code.lowered_name(fz.pick(texts));
            (void)code.kernel_names();
        });
    }
    report("ProgramOptions/ObjectCode lowered names", seed, 2 * n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, n / 10);
}

TEST(ValidationFuzz, LinkerOptionFields) {
    const std::uint64_t seed = fuzz_seed() + 33;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(3000) / 10;
    static constexpr std::array<std::string_view, 10> flags{
        "-arch=sm_80", "", "no-dash", "-lto", "-ptx", "-O2", "--gpu-architecture=sm_90", "-x\0y"sv, "-g", "-verbose"};
    // A real LTO-IR object and a real PTX object, for links that reach nvJitLink. They define
    // different kernels. The PTX may be added twice: Linker::link refuses a symbol defined by two
    // PTX or cubin inputs (nvJitLink 13.0 crashes on them once the process has run an LTO link).
    // LTO-IR inputs are not read for their symbols, so the LTO-IR object is added at most once.
    const core::ProgramOptions po{.arch = "sm_90"};
    const core::ObjectCode ltoir =
        core::Program("extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }", po)
            .compile(core::CodeType::ltoir);
    const core::ObjectCode ptx =
        core::Program("extern \"C\" __global__ void k2(float* x) { x[threadIdx.x] *= 2.0f; }", po)
            .compile(core::CodeType::ptx);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("LinkerOptions", i, t, [&] {
            core::LinkerOptions lo;
            if (fz.chance(10)) lo.name = fz.chance(50) ? "" : std::string("a\0b"sv);
            lo.arch = fz.chance(50) ? "sm_90" : arch(fz);
            if (fz.chance(20)) lo.optimization_level = fz.below(8) - 2;
            if (fz.chance(15)) lo.max_registers = fz.chance(50) ? fz.below(600) - 100 : std::numeric_limits<int>::max();
            if (fz.chance(20)) lo.extra.push_back(std::string(fz.pick(flags)));
            lo.debug = fz.chance(5);
            lo.lineinfo = fz.chance(10);
            core::Linker linker(lo);
            bool have_ltoir = false;
            for (int j = fz.below(3); j > 0; --j) {
                switch (fz.below(4)) {
                    case 0:
                        if (!std::exchange(have_ltoir, true)) linker.add(ltoir);
                        break;
                    case 1:
                        linker.add(ptx);
                        break;
                    case 2:
                        linker.add(junk_code(fz));
                        break;
                    default:
                        linker.add(core::ObjectCode{});
                }
            }
            (void)linker.link(fz.chance(70) ? core::CodeType::cubin : fz.enum_value<core::CodeType>(4));
        });
    }
    report("LinkerOptions", seed, n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, 0);
}

TEST(ValidationFuzz, TensorHelpers) {
    const std::uint64_t seed = fuzz_seed() + 34;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000);
    // Calls that pass validation allocate and copy on the device, through fake pointers for to_host:
    // those run only where there is none.
    const bool gpu = test::has_gpu();
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("TensorLayout::transposed", i, t, [&] {
            const TensorView v = fz.view(1, fz.layout());
            const TensorView tv = v.transposed();
            if (fz.chance(50)) (void)tv.data_as<float>();
            else (void)tv.data_as<double>();
        });
        if (gpu) continue;
        classify("Tensor::empty/from_host", i, t, [&] {
            static constexpr std::array<std::size_t, 7> alignments{256, 0, 3, 1, 4096, std::size_t(1) << 63, 100};
            const std::size_t alignment = fz.chance(60) ? 256 : fz.pick(alignments);
            if (fz.chance(50)) {
                (void)Tensor::empty(fz.layout(), {}, nullptr, alignment);
            } else {
                const std::vector<float> host(std::size_t(fz.below(30)));
                (void)Tensor::from_host(host, {fz.below(6), fz.below(6)});
            }
        });
#if defined(GPUMATH_HAS_DLPACK)
        classify("Tensor::to_host", i, t, [&] {
            // An adopted tensor over a fake pointer (managed or pinned: no device looked up), with
            // row-major, strided or broadcast strides.
            const TensorLayout l = fz.layout(1 + fz.below(3));
            std::vector<std::int64_t> shape(l.shape().begin(), l.shape().end());
            std::vector<std::int64_t> strides(l.strides().begin(), l.strides().end());
            DLManagedTensor managed{};
            managed.dl_tensor.data = fz.pointer(1);
            managed.dl_tensor.device.device_type = fz.chance(50) ? kDLCUDAManaged : kDLCUDAHost;
            managed.dl_tensor.ndim = l.rank();
            managed.dl_tensor.dtype = {kDLFloat, 32, 1};
            managed.dl_tensor.shape = shape.data();
            managed.dl_tensor.strides = fz.chance(30) ? nullptr : strides.data();
            const Tensor tensor = Tensor::from_dlpack(&managed);
            if (fz.chance(80)) (void)tensor.to_host<float>();
            else (void)tensor.to_host<double>();
        });
#endif
    }
    report("TensorLayout/TensorView/Tensor helpers", seed, 3 * n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, 0);
}

TEST(ValidationFuzz, CacheControls) {
    const std::uint64_t seed = fuzz_seed() + 35;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000) / 10;
    std::array<core::CacheControl*, 3> caches{&matmul_plan_cache(), &fft_plan_cache(), &core::compile_cache()};
    std::array<std::size_t, 3> before{};
    for (std::size_t c = 0; c < caches.size(); ++c) before[c] = caches[c]->capacity();
    static constexpr std::array<std::size_t, 6> capacities{
        0, 1, 2, 512, std::numeric_limits<std::size_t>::max(), std::size_t(1) << 40};
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("CacheControl", i, t, [&] {
            core::CacheControl& cache = *caches[std::size_t(fz.below(3))];
            switch (fz.below(4)) {
                case 0: {
                    const std::size_t c = fz.pick(capacities);
                    cache.set_capacity(c);
                    EXPECT_EQ(cache.capacity(), c);
                    break;
                }
                case 1:
                    cache.clear();
                    break;
                case 2:
                    cache.reset_stats();
                    break;
                default: {
                    const core::CacheStats s = cache.stats();
                    EXPECT_LE(s.size, s.capacity);
                }
            }
        });
    }
    for (std::size_t c = 0; c < caches.size(); ++c) caches[c]->set_capacity(before[c]);
    report("CacheControl", seed, n, t);
    EXPECT_EQ(t.passed, n);
}
