// SPDX-License-Identifier: Apache-2.0
// Every FP8 rule of matmul and of grouped products through every entry path (the constructors,
// execute, the allocating forms, autotune, plan, the stateless calls): bad input is InvalidArgument
// or NotSupported naming the operand before any CUDA call, so on a machine without a GPU it is
// never a CudaError. Pointers are fake device addresses, never dereferenced. The rules that need
// the device (compute capability >= 8.9, the TN rule before 10.x, 9.x for the finer scale modes)
// come after every other: without a device, a call breaking only those reports the missing
// device. quantize_fp8/dequantize_fp8's rules are in quantize_validation_test.cpp, through their
// public calls.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/fp8_test_util.hpp"
#include "matmul/grouped.hpp"
#include "matmul/problem.hpp"

using namespace gpumath;
using namespace gpumath::test::fp8;

namespace {

// Distinct, 256-byte aligned fake device addresses, 16 MiB apart.
void* addr(int slot, std::uintptr_t offset = 0) {
    return reinterpret_cast<void*>((std::uintptr_t(slot) + 1) * (std::uintptr_t(1) << 24) + offset);
}

TensorView v(int slot, DataType t, std::initializer_list<std::int64_t> shape,
             std::initializer_list<std::int64_t> strides = {}, std::uintptr_t offset = 0) {
    return TensorView(addr(slot, offset), t, shape, strides);
}

float* f(int slot, std::uintptr_t offset = 0) { return static_cast<float*>(addr(slot, offset)); }

enum class Kind : std::uint8_t { invalid, unsupported };

/// Asserts that `call` throws the exception of `kind` with every needle in its message. A
/// CudaError (a CUDA call made before the rule was checked) or another type fails.
void expect_rule(Kind kind, const std::function<void()>& call, const std::vector<std::string>& needles) {
    try {
        call();
        ADD_FAILURE() << "no exception; expected " << (kind == Kind::invalid ? "InvalidArgument" : "NotSupported");
        return;
    } catch (const InvalidArgument& e) {
        if (kind != Kind::invalid) {
            ADD_FAILURE() << "InvalidArgument where NotSupported was expected: " << e.what();
            return;
        }
        for (const std::string& n : needles)
            EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
                << "message: " << e.what() << "\nmissing: " << n;
    } catch (const NotSupported& e) {
        if (kind != Kind::unsupported) {
            ADD_FAILURE() << "NotSupported where InvalidArgument was expected: " << e.what();
            return;
        }
        for (const std::string& n : needles)
            EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
                << "message: " << e.what() << "\nmissing: " << n;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type (a CUDA call before the rule?): " << e.what();
    }
}

// ---- single products ------------------------------------------------------------------------------

// A valid FP8 product: a e4m3 (M, K) row-major, b e4m3 (K, N) column-major ("TN"), d bf16 (M, N).
constexpr std::int64_t M = 32, K = 64, N = 48;

struct Product {
    TensorView a = v(0, e4m3, {M, K});
    TensorView b = v(1, e4m3, {K, N}, {1, K});
    TensorView d = v(2, bf16, {M, N});
    MatmulArgs args{};
    MatmulOptions options{};
    std::optional<TensorLayout> c_layout{};  // the Matmul's C layout (args.c's)
};

/// Which entry paths a rule is reached through.
struct Paths {
    bool layouts = false;    // the rule shows in the layouts: the Matmul constructor refuses
    bool allocating = true;  // the allocating forms see the same call (d is what they would allocate)
};

struct ProductRule {
    const char* rule;
    Kind kind;
    std::vector<std::string> needles;
    Product p;
    Paths paths{};
};

Product with(const std::function<void(Product&)>& change) {
    Product p;
    change(p);
    return p;
}

std::vector<ProductRule> product_rules() {
    const Kind inv = Kind::invalid, ns = Kind::unsupported;
    const TensorLayout col_c(bf16, {M, N}, {1, M});  // a column-major C makes d column-major
    std::vector<ProductRule> r;
    // Types.
    r.push_back({"FP8 with a non-FP8 input",
                 inv,
                 {"b:", "f16", "FP8"},
                 with([](Product& p) {
                     p.b = v(1, f16, {K, N}, {1, K});
                 }),
                 {.layouts = true}});
    r.push_back({"both inputs e5m2",
                 ns,
                 {"e5m2", "e4m3"},
                 with([](Product& p) {
                     p.a = v(0, e5m2, {M, K});
                     p.b = v(1, e5m2, {K, N}, {1, K});
                 }),
                 {.layouts = true}});
    r.push_back({"an e5m2 result of e4m3 inputs",
                 inv,
                 {"e5m2", "allowed"},
                 with([](Product& p) {
                     p.d = v(2, e5m2, {M, N});
                     p.options.result_type = e5m2;
                 }),
                 {.layouts = true}});
    r.push_back({"a result type FP8 products lack (f64)",
                 inv,
                 {"f64"},
                 with([](Product& p) {
                     p.d = v(2, DataType::f64, {M, N});
                     p.options.result_type = DataType::f64;
                 }),
                 {.layouts = true}});
    r.push_back({"a compute type other than f32",
                 inv,
                 {"compute_type", "f16"},
                 with([](Product& p) { p.options.compute_type = ComputeType::f16; }),
                 {.layouts = true}});
    r.push_back({"fast_accumulation without FP8",
                 inv,
                 {"fast_accumulation", "FP8"},
                 with([](Product& p) {
                     p.a = v(0, bf16, {M, K});
                     p.b = v(1, bf16, {K, N}, {1, K});
                     p.options.fast_accumulation = true;
                 }),
                 {.layouts = true}});
    // Dimensions.
    r.push_back({"K a multiple of 16",
                 ns,
                 {"multiples of 16", "K = 40"},
                 with([](Product& p) {
                     p.a = v(0, e4m3, {M, 40});
                     p.b = v(1, e4m3, {40, N}, {1, 40});
                 }),
                 {.layouts = true}});
    r.push_back({"N a multiple of 16 (row-major d)",
                 ns,
                 {"K and N to be multiples of 16", "N = 24"},
                 with([](Product& p) {
                     p.b = v(1, e4m3, {K, 24}, {1, K});
                     p.d = v(2, bf16, {M, 24});
                 }),
                 {.layouts = true}});
    r.push_back({"M a multiple of 16 (column-major d)",
                 ns,
                 {"K and M to be multiples of 16", "M = 24"},
                 with([&](Product& p) {
                     p.a = v(0, e4m3, {24, K});
                     p.d = v(2, bf16, {24, N}, {1, 24});
                     p.args.c = v(3, bf16, {24, N}, {1, 24});
                     p.args.beta = 1.0;
                     p.c_layout = p.args.c->layout();
                 }),
                 {.layouts = true, .allocating = false}});
    // Operand pointers.
    r.push_back({"a 16-byte aligned", ns, {"a:", "8-byte aligned", "16-byte"}, with([](Product& p) {
                     p.a = v(0, e4m3, {M, K}, {}, 8);
                 })});
    r.push_back({"b 16-byte aligned", ns, {"b:", "8-byte aligned", "16-byte"}, with([](Product& p) {
                     p.b = v(1, e4m3, {K, N}, {1, K}, 8);
                 })});
    r.push_back({"c 16-byte aligned", ns, {"c:", "8-byte aligned", "16-byte"}, with([&](Product& p) {
                     p.args.c = v(3, bf16, {M, N}, {}, 8);
                     p.args.beta = 1.0;
                     p.c_layout = p.args.c->layout();
                 })});
    r.push_back({"d 16-byte aligned",
                 ns,
                 {"d:", "8-byte aligned", "16-byte"},
                 with([](Product& p) {
                     p.d = v(2, bf16, {M, N}, {}, 8);
                 }),
                 {.allocating = false}});
    // Per-tensor scales.
    r.push_back({"scales only with FP8 inputs", inv, {"scales.a", "FP8 inputs only"}, with([](Product& p) {
                     p.a = v(0, bf16, {M, K});
                     p.b = v(1, bf16, {K, N}, {1, K});
                     p.args.scales.a = f(9);
                 })});
    r.push_back({"no C scale", inv, {"scales.c", "FP8 c", "beta"}, with([](Product& p) { p.args.scales.c = f(9); })});
    r.push_back(
        {"scales.d needs an FP8 d", inv, {"scales.d", "FP8 result"}, with([](Product& p) { p.args.scales.d = f(9); })});
    r.push_back({"scales.amax_d needs an FP8 d", inv, {"scales.amax_d", "FP8 result"}, with([](Product& p) {
                     p.args.scales.amax_d = f(9);
                 })});
    r.push_back({"scale pointers aligned to an f32", inv, {"scales.b", "not aligned to 4 bytes"}, with([](Product& p) {
                     p.args.scales.b = f(9, 2);
                 })});
    r.push_back({"scale pointers 16-byte aligned", ns, {"scales:", "4-byte aligned", "16-byte"}, with([](Product& p) {
                     p.args.scales.a = f(9);
                     p.args.scales.b = f(9, 4);
                 })});
    r.push_back({"amax_d 16-byte aligned", ns, {"scales:", "8-byte aligned", "16-byte"}, with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.scales.amax_d = f(9, 8);
                 })});
    r.push_back({"no scale inside d",
                 inv,
                 {"scales.a", "d's memory"},
                 with([](Product& p) { p.args.scales.a = f(2, 64); }),
                 {.allocating = false}});
    r.push_back({"amax_d apart from the inputs", inv, {"scales.amax_d", "a's memory"}, with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.scales.amax_d = f(0, 256);
                 })});
    r.push_back({"amax_d apart from the scales", inv, {"scales.amax_d", "scales.b"}, with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.scales.b = f(9);
                     p.args.scales.amax_d = f(9);
                 })});
    // Bias and C types.
    r.push_back({"bias of a bf16 d is bf16", inv, {"bias:", "f32", "bf16"}, with([](Product& p) {
                     p.args.bias = v(4, f32, {N});
                     p.options.epilog = Epilog::bias;
                 })});
    r.push_back({"bias of an f32 d is bf16", inv, {"bias:", "f16", "bf16"}, with([](Product& p) {
                     p.d = v(2, f32, {M, N});
                     p.options.result_type = f32;
                     p.args.bias = v(4, f16, {N});
                     p.options.epilog = Epilog::bias;
                 })});
    r.push_back({"bias of an FP8 d is bf16 or f16", inv, {"bias:", "f32"}, with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.bias = v(4, f32, {N});
                     p.options.epilog = Epilog::bias;
                 })});
    r.push_back({"c of an FP8 d is bf16 or f16",
                 inv,
                 {"c:", "f32"},
                 with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.c = v(3, f32, {M, N});
                     p.args.beta = 1.0;
                     p.c_layout = p.args.c->layout();
                 }),
                 {.layouts = true}});
    r.push_back({"c in place only with d's dtype",
                 inv,
                 {"c:", "bf16 at d's address", "d's dtype"},
                 with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.c = v(2, bf16, {M, N});
                     p.args.beta = 1.0;
                     p.c_layout = p.args.c->layout();
                 }),
                 {.allocating = false}});
    // Epilogs.
    r.push_back({"no gradient epilogs",
                 ns,
                 {"epilog", "drelu_bgrad", "FP8"},
                 with([](Product& p) {
                     p.options.epilog = Epilog::drelu_bgrad;
                     p.args.aux = v(5, DataType::i8, {M, N});
                 }),
                 {.layouts = true}});
    r.push_back({"no bias-gradient epilogs",
                 ns,
                 {"epilog", "bgradb", "FP8"},
                 with([](Product& p) { p.options.epilog = Epilog::bgradb; }),
                 {.layouts = true}});
    r.push_back({"aux outputs need a non-FP8 d",
                 ns,
                 {"epilog", "relu_aux", "e4m3"},
                 with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.options.epilog = Epilog::relu_aux;
                 }),
                 {.layouts = true}});
    r.push_back({"SiLU (gpumath's pass) needs a 16- or 32-bit d",
                 ns,
                 {"epilog silu", "e4m3"},
                 with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.options.epilog = Epilog::silu;
                 }),
                 {.layouts = true}});
    r.push_back({"a user epilog function needs a 16- or 32-bit d",
                 ns,
                 {"options.epilog_function", "e4m3"},
                 with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.options.epilog_function =
                         MatmulEpilogFunction{.source =
                                                  "__device__ float f(float x, long long, long long, long "
                                                  "long, void*) { return x; }",
                                              .symbol = "f"};
                 }),
                 {.layouts = true}});
    r.push_back({"a bias along d's strided dimension (the pass) needs a 16- or 32-bit d",
                 ns,
                 {"bias", "e4m3"},
                 with([](Product& p) {
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                     p.args.bias = v(4, bf16, {M, 1});
                     p.options.epilog = Epilog::bias;
                 })});
    // The finer scale modes (a (M, K) = (32, 64): L = 1, L4 = 4; b (K, N) = (64, 48)).
    auto outer = [](Product& p) {
        p.args.scales.a_mode = ScaleMode::outer_vector;
        p.args.scales.b_mode = ScaleMode::outer_vector;
        p.args.scales.a_tensor = v(6, f32, {M});
        p.args.scales.b_tensor = v(7, f32, {N});
    };
    r.push_back({"a scale mode within ScaleMode", inv, {"scales.b_mode", "is not a ScaleMode"}, with([&](Product& p) {
                     outer(p);
                     p.args.scales.b_mode = static_cast<ScaleMode>(7);
                 })});
    r.push_back(
        {"a scale tensor only with a finer mode", inv, {"scales.a_tensor", "a_mode is tensor"}, with([](Product& p) {
             p.args.scales.a_tensor = v(6, f32, {M});
         })});
    r.push_back({"finer modes only with FP8 inputs", inv, {"scales.a_mode", "FP8 inputs only"}, with([&](Product& p) {
                     outer(p);
                     p.a = v(0, bf16, {M, K});
                     p.b = v(1, bf16, {K, N}, {1, K});
                 })});
    r.push_back({"no per-tensor scale with a finer mode",
                 inv,
                 {"scales.a:", "per-tensor", "scales.a_tensor"},
                 with([&](Product& p) {
                     outer(p);
                     p.args.scales.a = f(9);
                 })});
    r.push_back(
        {"the mode pairs cuBLASLt takes", ns, {"scales:", "a_mode outer_vector", "block_1x128"}, with([&](Product& p) {
             outer(p);
             p.args.scales.b_mode = ScaleMode::block_1x128;
             p.args.scales.b_tensor = v(7, f32, {1, N}, {N, 1});
         })});
    r.push_back({"no FP8 result with a finer mode", ns, {"d:", "e4m3", "bf16, f16 or f32"}, with([&](Product& p) {
                     outer(p);
                     p.d = v(2, e4m3, {M, N});
                     p.options.result_type = e4m3;
                 })});
    r.push_back({"the epilogs of the finer modes", ns, {"epilog:", "gelu_aux", "relu_aux"}, with([&](Product& p) {
                     outer(p);
                     p.options.epilog = Epilog::gelu_aux;
                 })});
    r.push_back({"a finer mode needs its tensor",
                 inv,
                 {"scales.b_tensor", "needs the scale tensor", "(48,)"},
                 with([&](Product& p) {
                     outer(p);
                     p.args.scales.b_tensor.reset();
                 })});
    r.push_back({"a scale tensor has its mode's layout",
                 inv,
                 {"scales.a_tensor", "(33,) strides (1,) given", "(32,)"},
                 with([&](Product& p) {
                     outer(p);
                     p.args.scales.a_tensor = v(6, f32, {M + 1});
                 })});
    r.push_back({"a scale tensor is f32", inv, {"scales.a_tensor", "f32"}, with([&](Product& p) {
                     outer(p);
                     p.args.scales.a_tensor = v(6, f16, {M});
                 })});
    r.push_back(
        {"a scale tensor 16-byte aligned", inv, {"scales.b_tensor", "8-byte aligned", "16-byte"}, with([&](Product& p) {
             outer(p);
             p.args.scales.b_tensor = v(7, f32, {N}, {}, 8);
         })});
    r.push_back({"a scale tensor apart from d",
                 inv,
                 {"scales.a_tensor", "overlaps d"},
                 with([&](Product& p) {
                     outer(p);
                     p.args.scales.a_tensor = v(2, f32, {M}, {}, 256);
                 }),
                 {.allocating = false}});
    r.push_back({"M a multiple of 16 with a finer mode", ns, {"finer than a tensor", "M = 24"}, with([&](Product& p) {
                     outer(p);
                     p.a = v(0, e4m3, {24, K});
                     p.d = v(2, bf16, {24, N});
                     p.args.scales.a_tensor = v(6, f32, {24});
                 })});
    r.push_back({"batch strides of the finer modes' products multiples of 16 bytes",
                 ns,
                 {"scales.a_tensor", "batch stride of 136 bytes", "multiple of 16"},
                 with([&](Product& p) {
                     outer(p);
                     p.a = v(0, e4m3, {2, M, K});
                     p.b = v(1, e4m3, {2, K, N}, {K * N, 1, K});
                     p.d = v(2, bf16, {2, M, N});
                     p.args.scales.a_tensor = v(6, f32, {2, M}, {M + 2, 1});
                     p.args.scales.b_tensor = v(7, f32, {2, N});
                 })});
    return r;
}

void run_product_rule(const ProductRule& r) {
    SCOPED_TRACE(r.rule);
    const Product& p = r.p;
    auto trace = [](const char* path) { return std::string("path: ") + path; };
    {
        SCOPED_TRACE(trace("matmul(a, b, d)"));
        expect_rule(
            r.kind, [&] { matmul(p.a, p.b, p.d, p.args, p.options); }, r.needles);
    }
    if (r.paths.allocating) {
        SCOPED_TRACE(trace("matmul(a, b) allocating"));
        expect_rule(
            r.kind, [&] { (void)matmul(p.a, p.b, p.args, p.options); }, r.needles);
    }
    auto construct = [&] {
        return p.c_layout ? Matmul(p.a, p.b, *p.c_layout, p.options) : Matmul(p.a, p.b, p.options);
    };
    if (r.paths.layouts) {
        SCOPED_TRACE(trace("Matmul constructor"));
        expect_rule(
            r.kind, [&] { (void)construct(); }, r.needles);
        return;
    }
    std::optional<Matmul> mm;
    try {
        mm.emplace(construct());
    } catch (const std::exception& e) {
        ADD_FAILURE() << "the Matmul constructor refused layouts that break no rule: " << e.what();
        return;
    }
    {
        SCOPED_TRACE(trace("Matmul::execute(a, b, d)"));
        expect_rule(
            r.kind, [&] { mm->execute(p.a, p.b, p.d, p.args); }, r.needles);
    }
    if (r.paths.allocating) {
        SCOPED_TRACE(trace("Matmul::execute(a, b) allocating"));
        expect_rule(
            r.kind, [&] { (void)mm->execute(p.a, p.b, p.args); }, r.needles);
    }
    {
        SCOPED_TRACE(trace("Matmul::autotune"));
        expect_rule(
            r.kind, [&] { (void)mm->autotune(p.a, p.b, p.d, p.args); }, r.needles);
    }
}

}  // namespace

TEST(Fp8Rules, SingleProductsBeforeAnyCudaCall) {
    for (const ProductRule& r : product_rules()) run_product_rule(r);
}

namespace {

// ---- grouped products ------------------------------------------------------------------------------

// A valid FP8 mixture of experts: a e4m3 (T, K) row-major sorted by group, weights e4m3 (G, K, N)
// with every B_g column-major, d bf16 (T, N); and the per-group form of the same groups.
constexpr std::int64_t G = 3, T = 48;

struct Grouped {
    std::vector<std::int64_t> sizes{16, 0, 32};
    TensorView a = v(0, e4m3, {T, K});
    TensorView b = v(1, e4m3, {G, K, N}, {K * N, 1, K});
    TensorView d = v(2, bf16, {T, N});
    std::vector<TensorView> ga{v(10, e4m3, {16, K}), v(11, e4m3, {0, K}), v(12, e4m3, {32, K})};
    std::vector<TensorView> gb{v(13, e4m3, {K, N}, {1, K}), v(14, e4m3, {K, N}, {1, K}), v(15, e4m3, {K, N}, {1, K})};
    std::vector<TensorView> gd{v(16, bf16, {16, N}), v(17, bf16, {0, N}), v(18, bf16, {32, N})};
    GroupedMatmulArgs args{};
    MatmulOptions options{};
    GroupedOptions grouped{};
    bool device_sizes = false;  // run the forms with device group sizes (and expect the rule there)

    [[nodiscard]] std::vector<TensorLayout> layouts(const std::vector<TensorView>& x) const {
        return {x.begin(), x.end()};
    }
    /// Every operand of both forms in `dtype` (the inputs) with D of `result`.
    void types(DataType input, DataType result, std::int64_t k = K, std::int64_t n = N) {
        a = v(0, input, {T, k});
        b = v(1, input, {G, k, n}, {k * n, 1, k});
        d = v(2, result, {T, n});
        for (std::size_t g = 0; g < ga.size(); ++g) {
            ga[g] = v(10 + int(g), input, {ga[g].shape(0), k});
            gb[g] = v(13 + int(g), input, {k, n}, {1, k});
            gd[g] = v(16 + int(g), result, {gd[g].shape(0), n});
        }
        options.result_type = result;
    }
};

struct GroupedRule {
    const char* rule;
    Kind kind;
    std::vector<std::string> needles;
    Grouped g;
    bool layouts = false;  // the constructors refuse
};

Grouped grouped_with(const std::function<void(Grouped&)>& change) {
    Grouped g;
    change(g);
    return g;
}

std::vector<GroupedRule> grouped_rules() {
    const Kind inv = Kind::invalid, ns = Kind::unsupported;
    std::vector<GroupedRule> r;
    r.push_back({"FP8 with a non-FP8 input",
                 inv,
                 {"b", "bf16", "differs"},
                 grouped_with([](Grouped& g) {
                     g.b = v(1, bf16, {G, K, N}, {K * N, 1, K});
                     for (std::size_t i = 0; i < g.gb.size(); ++i) g.gb[i] = v(13 + int(i), bf16, {K, N}, {1, K});
                 }),
                 true});
    r.push_back(
        {"both inputs e5m2", ns, {"e5m2", "e4m3"}, grouped_with([](Grouped& g) { g.types(e5m2, bf16); }), true});
    r.push_back({"an e5m2 result of e4m3 inputs",
                 inv,
                 {"e5m2", "allowed"},
                 grouped_with([](Grouped& g) { g.types(e4m3, e5m2); }),
                 true});
    r.push_back({"fast_accumulation without FP8",
                 inv,
                 {"fast_accumulation", "FP8"},
                 grouped_with([](Grouped& g) {
                     g.types(bf16, bf16);
                     g.options.fast_accumulation = true;
                 }),
                 true});
    r.push_back({"K a multiple of 16",
                 ns,
                 {"multiples of 16", "K = 40"},
                 grouped_with([](Grouped& g) { g.types(e4m3, bf16, 40, N); }),
                 true});
    r.push_back({"N a multiple of 16",
                 ns,
                 {"multiples of 16", "N = 24"},
                 grouped_with([](Grouped& g) { g.types(e4m3, bf16, K, 24); }),
                 true});
    r.push_back({"the cublas backend takes no FP8",
                 ns,
                 {"grouped.backend", "cublas", "e4m3"},
                 grouped_with([](Grouped& g) { g.grouped.backend = GroupedBackend::cublas; }),
                 true});
    r.push_back(
        {"per-group scales only with FP8 inputs", inv, {"scales.a", "FP8 inputs only"}, grouped_with([](Grouped& g) {
             g.types(bf16, bf16);
             g.args.scales.a = v(20, f32, {G});
         })});
    r.push_back({"per-group scales are (G,)", inv, {"scales.b", "(G,) = (3,)"}, grouped_with([](Grouped& g) {
                     g.args.scales.b = v(20, f32, {G + 1});
                 })});
    r.push_back({"per-group scales are f32", inv, {"scales.a", "f16", "f32"}, grouped_with([](Grouped& g) {
                     g.args.scales.a = v(20, f16, {G});
                 })});
    r.push_back({"per-group scales aligned to an f32", inv, {"scales.a", "4 bytes"}, grouped_with([](Grouped& g) {
                     g.args.scales.a = v(20, f32, {G}, {}, 2);
                 })});
    r.push_back({"scales.d needs an FP8 result", inv, {"scales.d", "FP8 result only"}, grouped_with([](Grouped& g) {
                     g.args.scales.d = v(20, f32, {G});
                 })});
    r.push_back(
        {"scales.amax_d needs an FP8 result", inv, {"scales.amax_d", "FP8 result only"}, grouped_with([](Grouped& g) {
             g.args.scales.amax_d = v(20, f32, {G});
         })});
    r.push_back({"amax_d has an element per group", inv, {"scales.amax_d", "stride 0"}, grouped_with([](Grouped& g) {
                     g.types(e4m3, e4m3);
                     g.args.scales.amax_d = v(20, f32, {G}, {0});
                 })});
    r.push_back(
        {"amax_d apart from the scales", inv, {"scales.amax_d", "overlaps scales.a"}, grouped_with([](Grouped& g) {
             g.types(e4m3, e4m3);
             g.args.scales.a = v(20, f32, {G});
             g.args.scales.amax_d = v(20, f32, {G}, {}, 4);
         })});
    r.push_back({"the bias of a bf16 result is bf16", inv, {"bias", "f32"}, grouped_with([](Grouped& g) {
                     g.options.epilog = Epilog::bias;
                     g.args.bias = v(21, f32, {G, N});
                 })});
    r.push_back({"device group sizes take no FP8", ns, {"a:", "e4m3", "device memory"}, grouped_with([](Grouped& g) {
                     g.device_sizes = true;
                 })});
    return r;
}

void run_grouped_rule(const GroupedRule& r) {
    SCOPED_TRACE(r.rule);
    const Grouped& g = r.g;
    auto trace = [](const char* path) { return std::string("path: ") + path; };
    const std::vector<TensorLayout> al = g.layouts(g.ga), bl = g.layouts(g.gb);
    const TensorView sizes = v(22, DataType::i32, {G});
    const DeviceGroupSizes device{.sizes = sizes, .max_total_rows = T};
    if (g.device_sizes) {
        {
            SCOPED_TRACE(trace("grouped_matmul(device sizes)"));
            expect_rule(
                r.kind, [&] { grouped_matmul(g.a, g.b, g.d, device, g.args, g.options); }, r.needles);
        }
        GroupedMatmul mm(g.a, g.b, g.sizes, g.options, g.grouped);
        SCOPED_TRACE(trace("GroupedMatmul::execute(device sizes)"));
        expect_rule(
            r.kind, [&] { mm.execute(g.a, g.b, g.d, device, g.args); }, r.needles);
        return;
    }
    if (g.grouped.backend == GroupedBackend::automatic) {
        {
            SCOPED_TRACE(trace("grouped_matmul(G views)"));
            expect_rule(
                r.kind, [&] { grouped_matmul(g.ga, g.gb, g.gd, g.args, g.options); }, r.needles);
        }
        for (const std::vector<std::int64_t>& sizes_of : {g.sizes, std::vector<std::int64_t>{16, 16, 16}}) {
            SCOPED_TRACE(trace(sizes_of[1] == 0 ? "grouped_matmul(host sizes)" : "grouped_matmul(equal sizes)"));
            expect_rule(
                r.kind, [&] { grouped_matmul(g.a, g.b, g.d, sizes_of, g.args, g.options); }, r.needles);
        }
    }
    if (r.layouts) {
        {
            SCOPED_TRACE(trace("GroupedMatmul(G layouts)"));
            expect_rule(
                r.kind, [&] { GroupedMatmul mm(al, bl, g.options, g.grouped); }, r.needles);
        }
        SCOPED_TRACE(trace("GroupedMatmul(mixture of experts)"));
        expect_rule(
            r.kind, [&] { GroupedMatmul mm(g.a, g.b, g.sizes, g.options, g.grouped); }, r.needles);
        return;
    }
    GroupedMatmul views(al, bl, g.options, g.grouped);
    GroupedMatmul moe(g.a, g.b, g.sizes, g.options, g.grouped);
    {
        SCOPED_TRACE(trace("GroupedMatmul::execute(G views)"));
        expect_rule(
            r.kind, [&] { views.execute(g.ga, g.gb, g.gd, g.args); }, r.needles);
    }
    for (const std::vector<std::int64_t>& sizes_of : {g.sizes, std::vector<std::int64_t>{16, 16, 16}}) {
        SCOPED_TRACE(
            trace(sizes_of[1] == 0 ? "GroupedMatmul::execute(host sizes)" : "GroupedMatmul::execute(equal sizes)"));
        expect_rule(
            r.kind, [&] { moe.execute(g.a, g.b, g.d, sizes_of, g.args); }, r.needles);
    }
}

}  // namespace

TEST(Fp8Rules, GroupedProductsBeforeAnyCudaCall) {
    for (const GroupedRule& r : grouped_rules()) run_grouped_rule(r);
}

// GroupedMatmul::plan() plans equal sizes as one strided batch, whose bias it names itself: the
// bias type of the FP8 rule (bf16, f16 with an f16 D), not the result type, which an f32 or FP8
// result does not take as a bias.
TEST(Fp8Rules, APlannedStridedBatchTakesTheFp8BiasType) {
    const std::int64_t sizes_k = 64, n = 48, groups = 3, m = 16;
    const TensorLayout a(e4m3, {groups * m, sizes_k});
    const TensorLayout b(e4m3, {groups, sizes_k, n}, {sizes_k * n, 1, sizes_k});
    for (const auto& [result, bias] :
         {std::pair{f32, bf16}, std::pair{e4m3, bf16}, std::pair{bf16, bf16}, std::pair{f16, f16}}) {
        SCOPED_TRACE(std::string("result ") + std::string(to_string(result)));
        const MatmulOptions options{.epilog = Epilog::bias, .result_type = result};
        const detail::GroupedShape shape = detail::check_moe_layouts(a, b, options, "test");
        const detail::MatmulSignature sig = detail::batched_signature(a, b, m, shape, options.epilog);
        ASSERT_TRUE(sig.bias.has_value());
        EXPECT_EQ(sig.bias->dtype(), bias);
        EXPECT_NO_THROW((void)detail::analyze(sig, options, "test"));
    }
    // Planning analyzes before it asks for the device: without one, the missing device is what is
    // reported (the products are valid).
    if (!test::has_gpu()) {
        const std::vector<std::int64_t> equal{m, m, m};
        GroupedMatmul mm(a, b, equal, {.epilog = Epilog::bias, .result_type = f32});
        test::expect_throw_with<CudaError>([&] { mm.plan(); }, {"no CUDA driver/device"});
    }
}

TEST(Fp8Rules, TheDeviceRulesComeLast) {
    if (test::has_gpu()) GTEST_SKIP() << "the fake pointers of these calls must not reach a real device";
    // K-contiguous operands are a rule of compute capability 8.9 to 9.x and 12.x (10.x takes every
    // layout), the finer scale modes one of 9.x: calls that break only those pass every host rule.
    const TensorView a_col = v(0, e4m3, {M, K}, {1, M});
    const TensorView b = v(1, e4m3, {K, N}, {1, K}), d = v(2, bf16, {M, N});
    test::expect_throw_with<CudaError>([&] { matmul(a_col, b, d); }, {"no CUDA driver/device"});
    Matmul mm(a_col, b);
    test::expect_throw_with<CudaError>([&] { mm.execute(a_col, b, d); }, {"no CUDA driver/device"});
    MatmulArgs outer;
    outer.scales = {.a_mode = ScaleMode::outer_vector,
                    .b_mode = ScaleMode::outer_vector,
                    .a_tensor = v(6, f32, {M}),
                    .b_tensor = v(7, f32, {N})};
    test::expect_throw_with<CudaError>([&] { matmul(v(0, e4m3, {M, K}), b, d, outer); }, {"no CUDA driver/device"});
}
