// SPDX-License-Identifier: Apache-2.0
// Random hostile input for grouped products, GroupedMatmul and grouped_matmul in all three forms
// (per-group views, the mixture-of-experts form with host sizes, and with device sizes): group
// counts of 0, 1 and 2^40, group sizes that are negative, do not sum to A's rows or overflow, K and
// N that disagree, random strides and dtypes of A, B (G, K, N), D and the per-group views,
// column-major weights, out-of-range GroupedBackend and Epilog values, bias shapes, FP8 per-group
// scales of random shapes, strides and dtypes (overlapping each other or D), device sizes with a
// missing, zero, negative or huge bound or overlapping D, null and misaligned pointers. Accepted
// outcomes as in validation_fuzz_test.cpp; besides, a call that passes validation must have been
// given no misaligned operand, since the device would fault on it.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "fuzz/fuzz_util.hpp"

using namespace gpumath;
using namespace gpumath::test::fuzz;

namespace {

constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

/// Builds a grouped call from random parts, keeping every view it makes so that a call passing
/// validation can be checked for misaligned operands.
class GroupedFuzzer {
public:
    explicit GroupedFuzzer(Fuzzer& fz) : fz_(fz) {}

    DataType input_type() {
        static constexpr std::array<DataType, 5> types{DataType::f16, DataType::bf16, DataType::f32, DataType::e4m3,
                                                       DataType::bf16};
        return fz_.hostile(10) ? fz_.dtype() : fz_.pick(types);
    }

    std::int64_t dim() {
        static constexpr std::array<std::int64_t, 8> dims{8, 16, 32, 24, 64, 8, 1, 128};
        if (fz_.hostile(4)) return 0;
        if (fz_.hostile(3)) return std::int64_t(1) << (32 + fz_.below(20));
        return fz_.pick(dims);
    }

    std::int64_t rows() {
        static constexpr std::array<std::int64_t, 8> m{0, 1, 2, 3, 4, 7, 16, 33};
        return fz_.pick(m);
    }

    /// A (rows, cols) matrix: row-major, column-major, padded, or (hostile) odd strides.
    TensorLayout matrix(DataType t, std::int64_t r, std::int64_t c) {
        const std::int64_t shape[] = {r, c};
        switch (fz_.hostile_call() ? fz_.below(5) : fz_.below(3)) {
            case 0:
                return {t, shape};
            case 1: {
                const std::int64_t strides[] = {1, std::max<std::int64_t>(r, 1)};
                return {t, shape, strides};
            }
            case 2: {
                const std::int64_t strides[] = {std::max<std::int64_t>(c, 1) + fz_.below(9), 1};
                return {t, shape, strides};
            }
            case 3: {
                // Neither dimension of unit stride, or rows that share memory.
                const std::int64_t strides[] = {fz_.below(3) * std::max<std::int64_t>(c, 1), 2 - fz_.below(3)};
                return {t, shape, strides};
            }
            default:
                return fz_.layout(fz_.chance(80) ? 2 : -1);
        }
    }

    /// Weights (G, K, N): row-major, column-major per expert, shared (stride 0 along G), odd.
    TensorLayout weights(DataType t, std::int64_t g, std::int64_t k, std::int64_t n) {
        const std::int64_t shape[] = {g, k, n};
        switch (fz_.hostile_call() ? fz_.below(5) : fz_.below(3)) {
            case 0:
                return {t, shape};
            case 1: {
                const std::int64_t strides[] = {times(k, n), 1, std::max<std::int64_t>(k, 1)};
                return {t, shape, strides};
            }
            case 2: {
                const std::int64_t strides[] = {0, std::max<std::int64_t>(n, 1), 1};
                return {t, shape, strides};
            }
            case 3: {
                const std::int64_t strides[] = {fz_.below(2), 1, 1};
                return {t, shape, strides};
            }
            default:
                return fz_.layout(fz_.chance(80) ? 3 : -1);
        }
    }

    /// A view of `layout` at slot `slot`'s fake pointer (null, misaligned or shared sometimes).
    TensorView view(int slot, const TensorLayout& layout) {
        TensorView v = fz_.view(slot, layout);
        views_.push_back(v);
        return v;
    }

    /// Per-group FP8 scales (G,) f32: one value per group, shared (stride 0), or random.
    std::optional<TensorView> scale(int slot, std::int64_t groups) {
        if (!fz_.chance(60)) return std::nullopt;
        if (fz_.hostile(20)) return view(slot, fz_.layout(fz_.below(3)));
        const std::int64_t shape[] = {groups};
        const std::int64_t strides[] = {fz_.chance(30) ? 0 : fz_.chance(80) ? 1 : 4};
        return view(slot, TensorLayout(fz_.hostile(10) ? fz_.dtype() : DataType::f32, shape, strides));
    }

    GroupedMatmulArgs args(std::int64_t groups, std::int64_t n, DataType result, Epilog epilog, int d_slot) {
        GroupedMatmulArgs args;
        args.alpha = fz_.chance(80) ? Scalar(1.0) : fz_.scalar();
        const bool takes_bias = epilog == Epilog::bias || epilog == Epilog::relu_bias || epilog == Epilog::gelu_bias ||
                                epilog == Epilog::silu_bias;
        if (takes_bias ? !fz_.hostile(10) : fz_.hostile(10)) {
            const std::int64_t shape[] = {groups, n};
            if (fz_.hostile(20)) args.bias = view(60, fz_.layout(fz_.below(4)));
            else if (fz_.chance(30)) {
                const std::int64_t strides[] = {0, 1};  // one row shared by every group
                args.bias = view(60, TensorLayout(result, shape, strides));
            } else args.bias = view(60, TensorLayout(fz_.hostile(10) ? fz_.dtype() : result, shape));
        }
        if (is_fp8(input_) || fz_.hostile(10)) {
            // Slots 70-73, or (hostile) another scale's or D's memory.
            auto slot = [&](int own) { return fz_.hostile(10) ? (fz_.chance(50) ? d_slot : 70 + fz_.below(4)) : own; };
            args.scales.a = scale(slot(70), groups);
            args.scales.b = scale(slot(71), groups);
            if (is_fp8(result) || fz_.hostile(10)) {
                args.scales.d = scale(slot(72), groups);
                args.scales.amax_d = scale(slot(73), groups);
            }
        }
        return args;
    }

    /// Host group sizes summing to `total` (set here), or (hostile) negative, overflowing, too
    /// many or too few.
    std::vector<std::int64_t> sizes(std::int64_t groups, std::int64_t& total) {
        std::vector<std::int64_t> s(std::size_t(std::min<std::int64_t>(groups, 64)));
        total = 0;
        for (auto& m : s) total += (m = rows());
        if (!fz_.hostile(40) || s.empty()) return s;
        switch (fz_.below(7)) {
            case 0:
                s[std::size_t(fz_.below(int(s.size())))] = -1 - fz_.below(3);
                break;
            case 1:
                s[std::size_t(fz_.below(int(s.size())))] = fz_.chance(50) ? int64_max : int64_min;
                break;
            case 2:
                s.push_back(rows());
                break;
            case 3:
                s.pop_back();
                break;
            case 4:
                total += fz_.chance(50) ? 1 : -1;  // A's and D's rows differ from the sum
                break;
            case 5:
                // Sums that overflow int64 unless checked step by step.
                s[0] = int64_max;
                s.back() = int64_max;
                break;
            default:
                s[0] = -int64_max;
                s.back() = int64_max;
        }
        total = std::max<std::int64_t>(total, 0);
        return s;
    }

    /// Device sizes (G,) i32 and a host bound on their sum.
    DeviceGroupSizes device_sizes(std::int64_t groups, std::int64_t total, int d_slot) {
        DeviceGroupSizes s;
        const std::int64_t shape[] = {groups};
        const std::int64_t strides[] = {fz_.chance(20) ? 0 : 1};
        if (fz_.hostile(15)) s.sizes = view(80, fz_.layout(fz_.below(3)));
        else
            s.sizes = view(fz_.hostile(10) ? d_slot : 80,
                           TensorLayout(fz_.hostile(10) ? fz_.dtype() : DataType::i32, shape, strides));
        static constexpr std::array<std::int64_t, 6> odd{-1, 0, int64_min, int64_max, -7, 1};
        if (fz_.hostile(40)) s.max_total_rows = fz_.pick(odd);
        else if (fz_.hostile(20)) s.max_total_rows = total + 1;
        else s.max_total_rows = fz_.chance(70) ? total : fz_.below(int(std::min<std::int64_t>(total, 1000)) + 1);
        return s;
    }

    /// Takes `v` out of the views the call uses (it was made, then replaced).
    void unused(const TensorView& v) {
        for (auto it = views_.begin(); it != views_.end(); ++it)
            if (it->data() == v.data() && static_cast<const TensorLayout&>(*it) == v) {
                views_.erase(it);
                return;
            }
    }

    void set_input(DataType t) { input_ = t; }
    [[nodiscard]] const std::vector<TensorView>& views() const { return views_; }
    void clear() { views_.clear(); }

private:
    Fuzzer& fz_;
    DataType input_ = DataType::bf16;
    std::vector<TensorView> views_;
};

MatmulOptions grouped_options(Fuzzer& fz, DataType input) {
    static constexpr std::array<Epilog, 8> epilogs{Epilog::none,      Epilog::relu,     Epilog::gelu,
                                                   Epilog::silu,      Epilog::bias,     Epilog::relu_bias,
                                                   Epilog::gelu_bias, Epilog::silu_bias};
    MatmulOptions o;
    o.epilog = fz.hostile(15) ? fz.enum_value<Epilog>(18) : fz.chance(50) ? Epilog::none : fz.pick(epilogs);
    if (is_fp8(input) && fz.chance(40)) o.result_type = fz.chance(50) ? DataType::e4m3 : DataType::f32;
    if (fz.hostile(15)) o.result_type = fz.dtype();
    if (fz.hostile(10)) o.compute_type = fz.enum_value<ComputeType>(8);
    return o;
}

DataType result_type(const MatmulOptions& o, DataType input) {
    if (o.result_type) return *o.result_type;
    return is_fp8(input) ? DataType::bf16 : input;
}

std::string describe(const std::vector<TensorView>& views) {
    std::string s;
    for (const TensorView& v : views)
        s += std::to_string(reinterpret_cast<std::uintptr_t>(v.data())) + " " + to_string(v) + "\n";
    return s;
}

/// The first of `views` that is not empty and not aligned to its element size, described; empty
/// when there is none.
std::string misaligned(const std::vector<TensorView>& views) {
    for (std::size_t i = 0; i < views.size(); ++i) {
        const TensorView& v = views[i];
        if (v.size() > 0 && reinterpret_cast<std::uintptr_t>(v.data()) % size_of(v.dtype()) != 0)
            return describe(views) + "view " + std::to_string(i) + " at " +
                   std::to_string(reinterpret_cast<std::uintptr_t>(v.data())) + ": " + to_string(v);
    }
    return {};
}

}  // namespace

TEST(ValidationFuzz, Grouped) {
    // Calls that pass validation go on to the device with fake pointers: only where there is none.
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would run on fake pointers";
    const std::uint64_t seed = fuzz_seed() + 6;
    Fuzzer fz(seed);
    GroupedFuzzer gf(fz);
    Tally t;
    const int n = iterations(3000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        gf.clear();
        const bool passed = classify("grouped", i, t, [&] {
            const DataType input = gf.input_type();
            gf.set_input(input);
            const MatmulOptions o = grouped_options(fz, input);
            const DataType result = result_type(o, input);
            GroupedOptions go;
            if (fz.chance(40)) go.backend = fz.enum_value<GroupedBackend>(6);
            const std::int64_t k = gf.dim(), nn = gf.dim();
            const int form = fz.below(3);
            if (form == 0) {
                // Per-group views: G from 0 to 9, each A_g (M_g, K), B_g (K, N), D_g (M_g, N).
                const int groups = fz.hostile(10) ? (fz.chance(50) ? 0 : 9) : 1 + fz.below(4);
                std::vector<TensorView> a, b, d;
                for (int g = 0; g < groups; ++g) {
                    const std::int64_t m = gf.rows();
                    const std::int64_t kg = fz.hostile(5) ? k + 1 : k, ng = fz.hostile(5) ? nn * 2 : nn;
                    a.push_back(gf.view(10 + g, gf.matrix(fz.hostile(5) ? gf.input_type() : input, m, kg)));
                    b.push_back(gf.view(20 + g, gf.matrix(fz.hostile(5) ? gf.input_type() : input, kg, ng)));
                    const int d_slot = fz.hostile(10) ? 10 + fz.below(groups) : 40 + g;
                    d.push_back(gf.view(
                        d_slot, gf.matrix(fz.hostile(10) ? fz.dtype() : result, fz.hostile(5) ? m + 1 : m, nn)));
                }
                if (fz.hostile(5) && !b.empty()) b.pop_back();
                if (fz.hostile(5) && !d.empty()) d.pop_back();
                const GroupedMatmulArgs args = gf.args(groups, nn, result, o.epilog, 40);
                if (fz.chance(50)) {
                    grouped_matmul(a, b, d, args, o);
                    return;
                }
                std::vector<TensorLayout> al(a.begin(), a.end()), bl(b.begin(), b.end());
                if (fz.hostile(10) && !al.empty()) al[0] = gf.matrix(input, al[0].shape(0) + 1, k);
                GroupedMatmul mm(al, bl, o, go);
                EXPECT_EQ(mm.group_count(), groups);
                if (fz.hostile(5)) {
                    gf.clear();  // plan() takes no pointers (and stops at the device here)
                    mm.plan();
                }
                mm.execute(a, b, d, args);
                return;
            }
            // The mixture-of-experts form: A (T, K) rows sorted by group, B (G, K, N), D (T, N).
            const std::int64_t groups = fz.hostile(10) ? (fz.chance(30) ? 0 : std::int64_t(1) << 40) : 1 + fz.below(8);
            std::int64_t total = 0;
            const std::vector<std::int64_t> sizes = gf.sizes(groups, total);
            const TensorLayout al = gf.matrix(input, total, fz.hostile(5) ? k + 1 : k);
            const TensorLayout bl = gf.weights(fz.hostile(5) ? gf.input_type() : input, groups, k, nn);
            const TensorView a = gf.view(1, al), b = gf.view(2, bl);
            const int d_slot = fz.hostile(10) ? 1 + fz.below(2) : 3;
            const TensorView d = gf.view(d_slot, gf.matrix(fz.hostile(10) ? fz.dtype() : result, total, nn));
            const GroupedMatmulArgs args = gf.args(groups, nn, result, o.epilog, d_slot);
            if (form == 1) {
                if (fz.chance(50)) {
                    grouped_matmul(a, b, d, sizes, args, o);
                    return;
                }
                // Planned with one set of sizes, executed with another (of the same G) sometimes.
                GroupedMatmul mm(al, bl, sizes, o, go);
                if (fz.hostile(5)) {
                    gf.clear();  // plan() takes no pointers (and stops at the device here)
                    mm.plan();
                }
                if (fz.chance(20)) {
                    std::int64_t other = 0;
                    const std::vector<std::int64_t> s2 = gf.sizes(groups, other);
                    const TensorView a2 = gf.view(1, gf.matrix(input, other, k));
                    const TensorView d2 = gf.view(3, gf.matrix(result, other, nn));
                    gf.unused(a);
                    gf.unused(d);
                    mm.execute(a2, b, d2, s2, args);
                } else mm.execute(a, b, d, sizes, args);
                return;
            }
            const DeviceGroupSizes device = gf.device_sizes(groups, total, d_slot);
            if (fz.chance(50)) {
                grouped_matmul(a, b, d, device, args, o);
                return;
            }
            GroupedMatmul mm(al, bl, sizes, o, go);
            mm.execute(a, b, d, device, args);
        });
        if (passed) {
            EXPECT_EQ(misaligned(gf.views()), "")
                << "grouped #" << i << ": a call with an operand misaligned for its type passed validation";
        }
    }
    report("grouped_matmul/GroupedMatmul", seed, n, t);
    EXPECT_GT(t.passed, n / 100) << "too few calls passed validation: the generator reaches no deep checks";
    EXPECT_GT(t.rejected, n / 2);
}
