// SPDX-License-Identifier: Apache-2.0
// Random hostile input for FP8 quantization: fp8_scale_layout, quantize_fp8 (allocating and into
// the caller's memory) and dequantize_fp8 with random modes (out-of-range ones included), input
// types, ranks, extents up to what int64 counts hold (where scale counts overflow), row and batch
// strides, data and scale layouts, options.dtype, misaligned, null and overlapping outputs. Accepted
// outcomes as in validation_fuzz_test.cpp; besides, a call that passes validation must have been
// given x aligned to its element size and scales and amax aligned as the kernels read them.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "fuzz/fuzz_util.hpp"

using namespace gpumath;
using namespace gpumath::test::fuzz;

namespace {

constexpr std::array<ScaleMode, 4> modes{ScaleMode::tensor, ScaleMode::outer_vector, ScaleMode::block_1x128,
                                         ScaleMode::block_128x128};

/// x (..., R, C): rows of C elements with unit stride, padded or not, batches dense over the rows;
/// hostile: odd strides, extents at the edge of int64 (big_shape), random layouts.
TensorLayout input_layout(Fuzzer& fz, ScaleMode mode) {
    static constexpr std::array<DataType, 3> types{DataType::bf16, DataType::f16, DataType::f32};
    const DataType t = fz.hostile(10) ? fz.dtype() : fz.pick(types);
    if (fz.hostile(10)) return fz.layout();
    const int rank = fz.hostile(5) ? fz.below(4) : (mode == ScaleMode::tensor ? 1 : 2) + fz.below(3);
    std::vector<std::int64_t> shape;
    if (fz.hostile(30)) {
        // Near 2^62 elements: spread over every dimension, or over the batch dimensions of small
        // matrices (whose padded scale blocks outnumber the elements).
        const bool batches_only = rank > 2 && fz.chance(50);
        shape = fz.big_shape(batches_only ? rank - 2 : rank, 54 + fz.below(9));
        if (batches_only) {
            shape.push_back(1 + fz.below(3));
            shape.push_back(1 + fz.below(3));
        }
    } else {
        static constexpr std::array<std::int64_t, 10> extents{1, 2, 3, 4, 7, 128, 129, 256, 300, 64};
        for (int i = 0; i < rank; ++i) shape.push_back(fz.hostile(5) ? fz.extent() : fz.pick(extents));
    }
    if (rank < 2 || fz.chance(50)) return {t, shape};
    // Padded rows; batches dense over the padded matrices (or, hostile, not).
    std::vector<std::int64_t> strides(shape.size());
    strides.back() = fz.hostile(10) ? fz.below(3) : 1;
    std::int64_t s = shape.back() + fz.below(9);
    for (std::size_t i = shape.size() - 1; i-- > 0;) {
        strides[i] = fz.hostile(10) ? s + 1 : s;
        std::int64_t next = 0;
        if (__builtin_mul_overflow(s, std::max<std::int64_t>(shape[i], 1), &next)) next = s;
        s = next;
    }
    return {t, shape, strides};
}

/// The misaligned bytes of `p` for `alignment`, as the oracle sees them.
bool misaligned(const void* p, std::size_t alignment) { return reinterpret_cast<std::uintptr_t>(p) % alignment != 0; }

}  // namespace

TEST(ValidationFuzz, Quantize) {
    // Calls that pass validation go on to the device with fake pointers: only where there is none.
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would run on fake pointers";
    const std::uint64_t seed = fuzz_seed() + 7;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(3000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        const ScaleMode mode = fz.hostile(10) ? fz.enum_value<ScaleMode>(4) : fz.pick(modes);
        const int form = fz.below(4);
        // What the call was given, for the alignment oracle (set inside the call).
        std::optional<TensorView> x_given, scales_given;
        const float* amax_given = nullptr;
        const bool passed = classify("quantize", i, t, [&] {
            const TensorLayout xl = input_layout(fz, mode);
            const TensorView x = fz.view(1, xl);
            x_given = x;
            const DataType fp8 = fz.hostile(10) ? fz.dtype() : fz.chance(50) ? DataType::e4m3 : DataType::e5m2;
            if (form == 0) {
                const TensorLayout s = fp8_scale_layout(mode, xl);
                // The layout's own shape: rank 0 for tensor, x's batches and R for outer_vector, one
                // more dimension otherwise.
                const int expected = mode == ScaleMode::tensor         ? 0
                                     : mode == ScaleMode::outer_vector ? xl.rank() - 1
                                                                       : xl.rank();
                EXPECT_EQ(s.rank(), expected) << "fp8_scale_layout #" << i << ": " << to_string(xl);
                EXPECT_EQ(s.dtype(), DataType::f32);
                return;
            }
            if (form == 1) {
                (void)quantize_fp8(x, mode, {.dtype = fp8, .amax = fz.chance(30)});
                return;
            }
            // data: FP8 of x's shape, dense row-major; hostile: other types, shapes or strides.
            TensorLayout dl = fz.hostile(10) ? fz.layout(xl.rank()) : TensorLayout(fp8, xl.shape());
            if (fz.hostile(10)) dl = TensorLayout(fp8, xl.shape(), xl.strides());
            const TensorView data = fz.view(fz.hostile(10) ? 1 : 2, dl);
            // scales: fp8_scale_layout's layout (of x, or of data for dequantize) or random.
            const TensorLayout sl = fz.hostile(15) ? fz.layout(fz.below(5))
                                                   : fp8_scale_layout(fz.hostile(5) ? fz.pick(modes) : mode,
                                                                      form == 2 ? xl : TensorLayout(dl));
            const int scale_slot = fz.hostile(10) ? 1 + fz.below(2) : 3;
            const TensorView scales = fz.view(scale_slot, sl);
            scales_given = scales;
            if (form == 2) {
                float* amax = nullptr;
                if (fz.chance(50)) {
                    amax = static_cast<float*>(fz.pointer(fz.hostile(10) ? 1 + fz.below(3) : 4));
                    if (fz.hostile(10))
                        amax = reinterpret_cast<float*>(reinterpret_cast<char*>(amax) + 1 + fz.below(3));
                }
                amax_given = amax;
                quantize_fp8(x, mode, data, scales, amax);
                return;
            }
            static constexpr std::array<DataType, 3> results{DataType::bf16, DataType::f16, DataType::f32};
            (void)dequantize_fp8(data, scales, mode, fz.hostile(10) ? fz.dtype() : fz.pick(results));
        });
        if (!passed || !x_given) continue;
        // x is read by the kernels of quantize (fp8_scale_layout reads no memory; dequantize's data
        // is FP8, at any address).
        if (form == 1 || form == 2) {
            EXPECT_FALSE(x_given->size() > 0 && misaligned(x_given->data(), size_of(x_given->dtype())))
                << "quantize #" << i << ": a misaligned x passed validation";
        }
        if (form >= 2 && scales_given) {
            EXPECT_FALSE(scales_given->size() > 0 && misaligned(scales_given->data(), sizeof(float)))
                << "quantize #" << i << ": misaligned scales passed validation";
        }
        EXPECT_FALSE(misaligned(amax_given, sizeof(float))) << "quantize #" << i << ": a misaligned amax passed";
    }
    report("quantize_fp8/dequantize_fp8/fp8_scale_layout", seed, n, t);
    EXPECT_GT(t.passed, n / 100) << "too few calls passed validation: the generator reaches no deep checks";
    EXPECT_GT(t.rejected, n / 10);
}
