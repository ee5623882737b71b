// SPDX-License-Identifier: Apache-2.0
// Random hostile input for the validators: thousands of random layouts, strides, dtypes, pointers,
// options and enum values (out-of-range ones included) thrown at Matmul/matmul, FFT/fft/ifft/rfft/
// irfft, Program/ObjectCode and the launch configuration checks. Each call must either pass
// validation (then, on a machine without a GPU, it stops at "no CUDA driver/device") or throw a
// gpumath exception whose message names an operand or field. A crash, a hang, a sanitizer report
// or a std:: exception escaping is a failure. Deterministic: the seed is printed and can be set
// with GPUMATH_FUZZ_SEED to replay a run; GPUMATH_FUZZ_ITERATIONS scales the work. The generator
// and the classification are in fuzz_util.hpp; grouped products, FP8 quantization, DLPack import and
// the option fields and helpers covered nowhere else have files of their own (grouped_, quantize_,
// dlpack_ and options_fuzz_test.cpp) in this binary.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/fft.hpp>
#include <gpumath/log.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "fuzz/fuzz_util.hpp"

using namespace gpumath;
using namespace gpumath::test::fuzz;

namespace {

/// The default result type of a matmul of `t` inputs (what a tame call asks for).
DataType result_of(DataType t) {
    if (t == DataType::i8) return DataType::i32;
    if (is_fp8(t)) return DataType::bf16;
    return t;
}

}  // namespace

TEST(ValidationFuzz, Layouts) {
    const std::uint64_t seed = fuzz_seed();
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("TensorLayout", i, t, [&] { (void)fz.view(1, fz.layout()); });
    }
    report("TensorLayout/TensorView", seed, n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, 0);
}

TEST(ValidationFuzz, Matmul) {
    // Calls that pass validation go on to the device with fake pointers: only where there is none.
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would run on fake pointers";
    const std::uint64_t seed = fuzz_seed() + 1;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(3000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("matmul", i, t, [&] {
            // Matching shapes most of the time, so the deeper checks are reached.
            const bool batched = fz.chance(30);
            const int rank = batched ? 3 : 2;
            TensorLayout a = fz.layout(fz.chance(90) ? rank : -1);
            TensorLayout b = fz.layout(fz.chance(90) ? rank : -1);
            if (fz.chance(70) && a.rank() >= 2 && b.rank() >= 2) {
                // b of shape (..., K, N) matching a; same dtype mostly
                std::vector<std::int64_t> shape(b.shape().begin(), b.shape().end());
                shape[shape.size() - 2] = a.shape(-1);
                const DataType bt = fz.chance(80) ? a.dtype() : fz.dtype();
                b = fz.chance(50) ? TensorLayout(bt, std::span<const std::int64_t>(shape))
                                  : TensorLayout(bt, std::span<const std::int64_t>(shape),
                                                 std::span<const std::int64_t>(b.strides()));
            }
            MatmulOptions o;
            o.epilog = fz.chance(60) ? Epilog::none : fz.enum_value<Epilog>(16);
            o.compute_type = fz.chance(60) ? ComputeType::automatic : fz.enum_value<ComputeType>(8);
            if (fz.chance(20)) o.result_type = fz.dtype();
            o.fast_accumulation = fz.chance(10);
            o.workspace_limit = fz.chance(10) ? 0 : default_workspace_limit;
            MatmulArgs args;
            args.alpha = fz.scalar();
            args.beta = fz.chance(70) ? Scalar(0.0) : fz.scalar();
            if (fz.chance(15)) args.c = fz.view(3, fz.layout(rank));
            if (fz.chance(15)) args.bias = fz.view(4, fz.layout(fz.below(3)));
            if (fz.hostile(15)) args.aux = fz.view(5, fz.layout(rank));
            if (fz.hostile(10)) args.bias_grad = fz.view(6, fz.layout(1));
            if (fz.hostile(10)) args.scales.a = static_cast<const float*>(fz.pointer(7));
            if (fz.hostile(5)) args.scales.d = static_cast<const float*>(fz.pointer(8));
            const TensorView av = fz.view(1, a), bv = fz.view(2, b);
            // D of the product's shape and default result type most of the time.
            TensorLayout d = fz.layout(rank);
            if (fz.chance(70) && a.rank() >= 2 && b.rank() >= 2) {
                std::vector<std::int64_t> shape(a.shape().begin(), a.shape().end());
                shape.back() = b.shape(-1);
                d = TensorLayout(fz.chance(80) ? result_of(a.dtype()) : fz.dtype(),
                                 std::span<const std::int64_t>(shape));
            }
            const TensorView dv = fz.view(9, d);
            switch (fz.below(4)) {
                case 0: {
                    Matmul mm = args.c ? Matmul(a, b, *args.c, o) : Matmul(a, b, o);
                    (void)mm.m();
                    mm.execute(av, bv, dv, args);
                    break;
                }
                case 1:
                    matmul(av, bv, dv, args, o);
                    break;
                case 2:
                    (void)matmul(av, bv, args, o);
                    break;
                default: {
                    Matmul mm(a, b, o);
                    (void)mm.load_tuning("/nonexistent-gpumath-fuzz/tuning.txt");
                    (void)mm.execute(av, bv, args);
                }
            }
        });
    }
    report("matmul", seed, n, t);
    EXPECT_GT(t.passed, n / 100) << "too few calls passed validation: the generator reaches no deep checks";
    EXPECT_GT(t.rejected, n / 2);
}

TEST(ValidationFuzz, Fft) {
    // Calls that pass validation go on to the device with fake pointers: only where there is none.
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would run on fake pointers";
    const std::uint64_t seed = fuzz_seed() + 2;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(3000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("fft", i, t, [&] {
            const TensorLayout in = fz.layout();
            FFTOptions o;
            if (fz.chance(40)) {
                std::vector<int> axes;
                const int count = fz.below(5);
                for (int j = 0; j < count; ++j) axes.push_back(fz.below(12) - 6);
                o.axes = FFTAxes(std::span<const int>(axes));
            }
            o.kind = fz.chance(60) ? FFTKind::automatic : fz.enum_value<FFTKind>(4);
            o.normalization = fz.enum_value<Normalization>(4);
            o.callback_mode = fz.enum_value<CallbackMode>(3);
            if (fz.chance(10)) o.last_axis_size = fz.extent();
            o.inplace = fz.chance(10);
            o.overwrite_input = fz.chance(10);
            if (fz.chance(5)) o.prolog.source = "garbage";
            if (fz.chance(5)) {
                o.epilog.code = core::ObjectCode::from_bytes(std::string_view("not code"),
                                                             fz.enum_value<core::CodeType>(4), "sm_90");
                o.epilog.symbol = "store";
            }
            const TensorView iv = fz.view(1, in);
            const TensorView ov = fz.chance(10) ? iv : fz.view(2, fz.chance(50) ? in : fz.layout(in.rank()));
            const auto dir = fz.enum_value<Direction>(2);
            switch (fz.below(6)) {
                case 0: {
                    FFT plan(in, o);
                    (void)plan.kind();
                    plan.execute(iv, ov, dir);
                    break;
                }
                case 1:
                    gpumath::fft(iv, ov, o);
                    break;
                case 2:
                    gpumath::ifft(iv, ov, o);
                    break;
                case 3:
                    gpumath::rfft(iv, ov, o);
                    break;
                case 4:
                    gpumath::irfft(iv, ov, o);
                    break;
                default:
                    (void)gpumath::rfft(iv, o);
            }
        });
    }
    report("fft", seed, n, t);
    EXPECT_GT(t.passed, n / 100) << "too few calls passed validation: the generator reaches no deep checks";
    EXPECT_GT(t.rejected, n / 2);
}

TEST(ValidationFuzz, ProgramAndObjectCode) {
    const std::uint64_t seed = fuzz_seed() + 3;
    Fuzzer fz(seed);
    Tally t;
    // NVRTC runs for the calls that pass validation (cached in memory), so fewer iterations.
    const int n = iterations(3000) / 10;
    static constexpr std::array<std::string_view, 6> archs{"", "sm_90", "sm_1", "compute_90", "banana", "sm_80"};
    static constexpr std::array<std::string_view, 5> stds{"c++17", "c++20", "c++3", "", "gnu++17"};
    static constexpr std::array<std::string_view, 4> sources{
        "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }", "", "this is not C++",
        "template <class T> __global__ void t(T* x) { x[0] = T(1); }"};
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("program", i, t, [&] {
            core::ProgramOptions po;
            po.arch = std::string(fz.pick(archs));
            if (po.arch.empty()) po.arch = "sm_90";  // an empty arch asks the device
            po.std = std::string(fz.pick(stds));
            po.max_registers = fz.chance(80) ? 0 : fz.below(600) - 100;
            if (fz.chance(10)) po.defines["BAD NAME"] = "1";
            if (fz.chance(10)) po.defines["N"] = "4";
            if (fz.chance(5)) po.extra.push_back("--not-an-option");
            if (fz.chance(5)) po.include_dirs.push_back("");
            const auto type = fz.enum_value<core::CodeType>(4);
            core::Program p(std::string(fz.pick(sources)), po);
            if (fz.chance(20)) p.add_name_expression(fz.chance(50) ? "t<float>" : "");
            const core::ObjectCode code = p.compile(type);
            (void)code.bytes();
        });
        classify("object_code", i, t, [&] {
            std::string bytes(std::size_t(fz.below(64)), '\0');
            for (char& ch : bytes) ch = char(fz.below(256));
            const core::ObjectCode code = core::ObjectCode::from_bytes(
                std::string_view(bytes), fz.enum_value<core::CodeType>(4), std::string(fz.pick(archs)));
            core::Linker linker({.arch = "sm_90"});
            linker.add(code);
            (void)linker.link(fz.enum_value<core::CodeType>(4));
        });
    }
    report("program/object_code/linker", seed, 2 * n, t);
    EXPECT_GT(t.rejected, 0);
}

TEST(ValidationFuzz, LaunchConfigurations) {
    const std::uint64_t seed = fuzz_seed() + 4;
    Fuzzer fz(seed);
    Tally t;
    detail::KernelState k;
    k.name = "_Z5saxpyPfid";
    k.display_name = "saxpy";
    k.cc_major = 9;
    k.multiprocessor_count = 132;
    k.shared_memory_optin = 232448;
    k.params_known = true;
    k.params = {{0, 8}, {8, 4}, {16, 8}};
    k.max_threads_per_block = 256;
    k.max_dynamic_shared.store(48 * 1024);
    static constexpr std::array<std::int64_t, 10> dims{1, 2, 32, 256, 1024, 0, -1, 65536, 2147483648LL, 3};
    const int n = iterations(4000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        classify("launch", i, t, [&] {
            core::LaunchConfig c;
            c.grid = core::Dim3{fz.pick(dims), fz.chance(70) ? 1 : fz.pick(dims), fz.chance(80) ? 1 : fz.pick(dims)};
            c.block = core::Dim3{fz.pick(dims), fz.chance(80) ? 1 : fz.pick(dims), 1};
            c.shared_memory = fz.chance(70) ? 0 : std::size_t(fz.below(300000));
            if (fz.chance(20)) c.cluster = core::Dim3{fz.pick(dims), 1, 1};
            c.cooperative = fz.chance(10);
            detail::check_config(k, c);
        });
    }
    report("launch", seed, n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, 0);
}

TEST(ValidationFuzz, LogLevels) {
    const std::uint64_t seed = fuzz_seed() + 5;
    Fuzzer fz(seed);
    Tally t;
    const LogLevel before = log_level();
    const int n = iterations(4000) / 10;
    for (int i = 0; i < n; ++i) {
        // LogLevel is an int enum: negative and large values too.
        const int v = fz.chance(50) ? fz.below(5) : fz.below(2000) - 1000;
        classify("log_level", i, t, [&] {
            set_log_level(static_cast<LogLevel>(v));
            EXPECT_EQ(static_cast<int>(log_level()), v);
        });
    }
    set_log_level(before);
    report("set_log_level", seed, n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, 0);
}
