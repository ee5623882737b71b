// SPDX-License-Identifier: Apache-2.0
// A grouped product sliced into one matmul per group: each group's operands (views of A, B, D and
// the bias's row), the signature and problem of one group with its errors naming the group, and
// the scale placeholders that let one plan serve every group. Host only: no CUDA calls.
#include "matmul/grouped.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"
#include "matmul/types.hpp"

namespace gpumath::detail {

MatmulScales scale_placeholders(const GroupedScales& scales) noexcept {
    // An address 16 bytes past a 32-byte boundary: alignment class 16. Never read or written.
    alignas(32) static float stand_in[8] = {};
    float* const p = &stand_in[4];
    MatmulScales m;
    if (scales.a) m.a = p;
    if (scales.b) m.b = p;
    if (scales.d) m.d = p;
    if (scales.amax_d) m.amax_d = p;
    return m;
}

MatmulSignature group_signature(const TensorLayout& a, const TensorLayout& b) {
    MatmulSignature sig;
    sig.a = a;
    sig.b = b;
    sig.from_layouts = true;
    return sig;
}

MatmulProblem analyze_group(const MatmulSignature& sig, const MatmulOptions& options, std::int64_t group,
                            const char* api) {
    try {
        return analyze(sig, options, api);
    } catch (const InvalidArgument&) {
        rethrow_for_group(group);
    } catch (const NotSupported&) {
        rethrow_for_group(group);
    }
}

TensorLayout weights_of(const TensorLayout& b) {
    const std::int64_t shape[] = {b.shape(1), b.shape(2)};
    const std::int64_t strides[] = {b.stride(1), b.stride(2)};
    return TensorLayout(b.dtype(), shape, strides);
}

void groups_of(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
               const GroupedMatmulArgs& args, std::vector<GroupOperands>& out) {
    out.clear();
    for (std::size_t g = 0; g < a.size(); ++g) {
        if (a[g].shape(0) == 0) continue;
        GroupOperands& o = out.emplace_back();
        o.group = std::int64_t(g);
        o.a = a[g];
        o.b = b[g];
        o.d = d[g];
        o.scales = scale_placeholders(args.scales);
        if (args.bias) {
            const TensorView& bias = *args.bias;
            const std::int64_t shape[] = {bias.shape(1)};
            const std::int64_t strides[] = {bias.stride(1)};
            o.bias = TensorView(static_cast<unsigned char*>(bias.data()) +
                                    std::int64_t(g) * bias.stride(0) * std::int64_t(size_of(bias.dtype())),
                                bias.dtype(), shape, strides);
        }
    }
}

void groups_of(const TensorView& a, const TensorView& b, const TensorView& d, std::span<const std::int64_t> sizes,
               const GroupedMatmulArgs& args, std::vector<GroupOperands>& out) {
    out.clear();
    const TensorLayout bg = weights_of(b);
    const std::int64_t eb = std::int64_t(size_of(b.dtype()));
    std::int64_t row = 0;
    for (std::size_t g = 0; g < sizes.size(); ++g) {
        const std::int64_t M = sizes[g];
        if (M == 0) continue;
        GroupOperands& o = out.emplace_back();
        o.group = std::int64_t(g);
        o.a = rows_of(a, row, M);
        o.b = TensorView(static_cast<unsigned char*>(b.data()) + std::int64_t(g) * b.stride(0) * eb, bg);
        o.d = rows_of(d, row, M);
        o.scales = scale_placeholders(args.scales);
        row += M;
    }
    if (!args.bias) return;
    // The same bias rows as the per-group form.
    const TensorView& bias = *args.bias;
    const std::int64_t shape[] = {bias.shape(1)};
    const std::int64_t strides[] = {bias.stride(1)};
    for (GroupOperands& o : out)
        o.bias = TensorView(
            static_cast<unsigned char*>(bias.data()) + o.group * bias.stride(0) * std::int64_t(size_of(bias.dtype())),
            bias.dtype(), shape, strides);
}

std::optional<GroupOperands> batched_of(const TensorView& a, const TensorView& b, const TensorView& d,
                                        std::span<const std::int64_t> sizes, const GroupedMatmulArgs& args) {
    if (sizes.size() < 2 || sizes[0] == 0) return std::nullopt;
    // Each group's rows of d one block of the batch: a row-major d (a column-major one interleaves
    // the groups' outputs, and a batched product's outputs may not interleave).
    if (d.stride(1) != 1) return std::nullopt;
    // cuBLASLt scales a batch with one value per operand, and writes one amax.
    const GroupedScales& s = args.scales;
    auto per_group = [](const std::optional<TensorView>& t) { return t && t->stride(0) != 0; };
    if (per_group(s.a) || per_group(s.b) || per_group(s.d) || s.amax_d) return std::nullopt;
    const std::int64_t M = sizes[0];
    for (const std::int64_t m : sizes)
        if (m != M) return std::nullopt;
    const auto groups = std::int64_t(sizes.size());
    GroupOperands o;
    o.group = -1;
    const std::int64_t a_shape[] = {groups, M, a.shape(1)}, a_strides[] = {M * a.stride(0), a.stride(0), a.stride(1)};
    const std::int64_t d_shape[] = {groups, M, d.shape(1)}, d_strides[] = {M * d.stride(0), d.stride(0), d.stride(1)};
    o.a = TensorView(a.data(), a.dtype(), a_shape, a_strides);
    o.b = b;
    o.d = TensorView(d.data(), d.dtype(), d_shape, d_strides);
    o.scales = scale_placeholders(s);
    if (args.bias) {
        const TensorView& bias = *args.bias;
        const std::int64_t shape[] = {groups, 1, bias.shape(1)};
        // The middle extent is 1: its stride only has to be valid. A bias the products refuse (its
        // type, say) runs through the per-group path, which names the rule.
        std::int64_t row = 0;
        if (__builtin_mul_overflow(bias.shape(1), bias.stride(1), &row)) return std::nullopt;
        const std::int64_t strides[] = {bias.stride(0), row, bias.stride(1)};
        o.bias = TensorView(bias.data(), bias.dtype(), shape, strides);
    }
    return o;
}

MatmulSignature batched_signature(const TensorLayout& a, const TensorLayout& b, std::int64_t m,
                                  const GroupedShape& shape, Epilog epilog) {
    const std::int64_t groups = shape.groups;
    const std::int64_t a_shape[] = {groups, m, shape.k}, a_strides[] = {m * a.stride(0), a.stride(0), a.stride(1)};
    MatmulSignature sig;
    sig.a = TensorLayout(a.dtype(), a_shape, a_strides);
    sig.b = b;
    sig.d = TensorLayout(shape.result, {groups, m, shape.n});
    if (epilog_takes_bias(epilog))
        sig.bias = TensorLayout(default_bias_type(shape.input, shape.result), {groups, 1, shape.n});
    sig.from_layouts = true;
    return sig;
}

void rethrow_for_group(std::int64_t group) {
    auto with_group = [group](const Error& e) {
        const std::string what = e.what();
        const std::string prefix = e.api().empty() ? std::string() : e.api() + ": ";
        const std::string which =
            group < 0 ? std::string("all groups (strided-batched): ") : fmt::format("group {}: ", group);
        if (!prefix.empty() && what.compare(0, prefix.size(), prefix) == 0)
            return prefix + which + what.substr(prefix.size());
        return which + what;
    };
    try {
        throw;
    } catch (const InvalidArgument& e) {
        throw InvalidArgument(with_group(e), e.api());
    } catch (const NotSupported& e) {
        throw NotSupported(with_group(e), e.api(), e.status());
    }
}

}  // namespace gpumath::detail
