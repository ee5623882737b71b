// SPDX-License-Identifier: Apache-2.0
// The types stage: what the dtypes and options decide, read from one table (types.hpp).
#include "matmul/types.hpp"

#include <algorithm>
#include <string>

#include "matmul/checks.hpp"

namespace gpumath::detail {
namespace {

struct ResultList {
    std::array<DataType, 5> types{};
    std::size_t count = 0;
    [[nodiscard]] bool contains(DataType t) const {
        return std::find(types.begin(), types.begin() + std::ptrdiff_t(count), t) !=
               types.begin() + std::ptrdiff_t(count);
    }
};

ResultList allowed_results(const TypeRule& rule, DataType a, DataType b) {
    ResultList r;
    for (std::size_t i = 0; i < rule.result_count; ++i) {
        const DataType t = rule.results[i];
        if (t == DataType::e5m2 && a != DataType::e5m2 && b != DataType::e5m2) continue;
        r.types[r.count++] = t;
    }
    return r;
}

std::string results_text(const ResultList& v) {
    std::string s;
    for (std::size_t i = 0; i < v.count; ++i) s += (s.empty() ? "" : ", ") + std::string(to_string(v.types[i]));
    return s;
}

std::string computes_text(std::span<const TypeRule> rules) {
    std::string s;
    for (const TypeRule& r : rules) s += (s.empty() ? "" : ", ") + std::string(to_string(r.compute));
    return s;
}

/// The dtypes of a and b: matmul inputs, equal unless both are FP8 (and not both e5m2).
void check_inputs(DataType at, DataType bt, const char* api) {
    if (!default_result(at))
        invalid(api, "a: dtype {} is not a matmul input; inputs are f16, bf16, f32, f64, c32, c64, i8, e4m3, e5m2",
                to_string(at));
    if (is_fp8(at) || is_fp8(bt)) {
        if (!is_fp8(at) || !is_fp8(bt))
            invalid(api, "b: dtype {} with a of dtype {}; FP8 products need both inputs in FP8 (e4m3 or e5m2)",
                    to_string(bt), to_string(at));
        if (at == DataType::e5m2 && bt == DataType::e5m2)
            unsupported(api, "a, b: both e5m2; cuBLASLt's FP8 products need at least one e4m3 input");
    } else if (at != bt) {
        invalid(api, "b: dtype {} differs from a's {}; a and b must have the same dtype (only FP8 e4m3/e5m2 mix)",
                to_string(bt), to_string(at));
    }
}

}  // namespace

std::span<const TypeRule> type_rules(DataType input) noexcept {
    const auto* first = std::find_if(std::begin(type_table::rows), std::end(type_table::rows),
                                     [&](const TypeRule& r) { return r.input == input; });
    const auto* last =
        std::find_if(first, std::end(type_table::rows), [&](const TypeRule& r) { return r.input != input; });
    return {first, last};
}

std::optional<DataType> default_result(DataType input) noexcept {
    const auto rules = type_rules(input);
    if (rules.empty()) return std::nullopt;
    return rules.front().results[0];
}

const TypeRule& type_rule(DataType input, ComputeType compute) noexcept {
    const auto rules = type_rules(input);
    for (const TypeRule& r : rules)
        if (r.compute == compute) return r;
    return rules.front();
}

DataType default_bias_type(DataType input, DataType result) noexcept {
    if (!is_fp8(input)) return result;
    return result == DataType::f16 ? DataType::f16 : DataType::bf16;
}

ProblemTypes types_stage(const MatmulSignature& sig, const MatmulOptions& options, const char* api) {
    ProblemTypes t;
    t.a = sig.a.dtype();
    t.b = sig.b.dtype();
    check_inputs(t.a, t.b, api);
    t.fp8 = is_fp8(t.a);

    const auto rules = type_rules(t.a);
    t.compute = options.compute_type == ComputeType::automatic ? rules.front().compute : options.compute_type;
    if (std::none_of(rules.begin(), rules.end(), [&](const TypeRule& r) { return r.compute == t.compute; }))
        invalid(api, "compute_type: {} is not available for {} inputs; allowed: automatic, {}",
                to_string(options.compute_type), to_string(t.a), computes_text(rules));

    t.d = *default_result(t.a);
    const char* d_source = "result_type";
    if (sig.d) {
        if (options.result_type && *options.result_type != sig.d->dtype())
            invalid(api, "result_type: {} given, but d has dtype {}; leave result_type empty or make them agree",
                    to_string(*options.result_type), to_string(sig.d->dtype()));
        t.d = sig.d->dtype();
        d_source = "d";
    } else if (options.result_type) {
        t.d = *options.result_type;
    }
    const ResultList results = allowed_results(type_rule(t.a, t.compute), t.a, t.b);
    if (!results.contains(t.d))
        invalid(api, "{}: dtype {} is not a result of {} x {} products with compute type {}; allowed: {}", d_source,
                to_string(t.d), to_string(t.a), to_string(t.b), to_string(t.compute), results_text(results));

    // FP8 C and bias types: bf16 or f16 (cuBLASLt's FP8 table); otherwise the result type.
    t.c = t.d;
    if (is_fp8(t.d)) {
        t.c = DataType::bf16;
        if (sig.c) t.c = sig.c->dtype();
        else if (sig.bias) t.c = sig.bias->dtype();
        if (t.c != DataType::bf16 && t.c != DataType::f16)
            invalid(api,
                    "{}: dtype {} with an FP8 result; C and bias of FP8 products with an {} result are bf16 or f16",
                    sig.c ? "c" : "bias", to_string(t.c), to_string(t.d));
    }
    // An FP8 D takes the C type as its bias type (the one given, or the default bf16).
    t.bias = t.fp8 && is_fp8(t.d) ? t.c : default_bias_type(t.a, t.d);
    t.aux = t.d;

    if (options.fast_accumulation && !t.fp8)
        invalid(api, "fast_accumulation: applies to FP8 inputs only; a is {}", to_string(t.a));
    t.fast_accumulation = options.fast_accumulation;
    return t;
}

const char* cuda_element_type(DataType t) noexcept {
    switch (t) {
        case DataType::f16:
            return "__half";
        case DataType::bf16:
            return "__nv_bfloat16";
        case DataType::f32:
            return "float";
        default:
            return nullptr;
    }
}

}  // namespace gpumath::detail
