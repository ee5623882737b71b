// SPDX-License-Identifier: Apache-2.0
#include "matmul/row_parts.hpp"

#include <array>
#include <memory>

#include <gpumath/error.hpp>

#include "matmul/grouped.hpp"
#include "matmul/grouped_streams.hpp"
#include "matmul/internal.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {

bool runs_in_row_parts(const MatmulProblem& P, const TensorView& a, const TensorView& d,
                       const MatmulArgs& args) noexcept {
    if (!P.pass.on || P.pass.function || P.shape.batch != 1 || a.rank() != 2 || d.rank() != 2) return false;
    if (args.c || !(args.beta == Scalar(0.0)) || args.aux || args.bias_grad || P.inputs.aux != AuxKind::none ||
        P.inputs.bias_grad || P.inputs.c_from_bias || P.types.fp8 || P.sm_count_target != 0)
        return false;
    const std::int64_t rows = d.shape(0), cols = d.shape(1);
    // A row-major D (blocks of whole rows, each contiguous but for padding) that cuBLASLt writes as
    // Dᵀ, the arrangement measured and tested (only a single-column D, a matrix-vector product with
    // nothing to overlap, is arranged otherwise).
    if (!P.lt.swap || d.stride(1) != 1 || a.shape(0) != rows || rows % (row_part_count * 16) != 0) return false;
    const auto element = std::int64_t(size_of(d.dtype()));
    if (rows * cols * element < row_parts_min_bytes) return false;
    if (P.shape.k < row_parts_min_flops_per_byte / 2 * element) return false;
    if (args.bias) {
        const TensorView& bias = *args.bias;
        const bool per_column = bias.rank() == 1 || (bias.rank() == 2 && bias.shape(0) == 1);
        const bool per_row = bias.rank() == 2 && bias.shape(0) == rows && bias.shape(1) == 1;
        if (!per_column && !per_row) return false;
    }
    return true;
}

namespace {

/// The call in row parts; false, with nothing enqueued, when cuBLASLt has no algorithm for a block.
bool run_row_parts(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                   const MatmulOptions& options, core::StreamRef stream, int device, const char* api) {
    const std::int64_t rows = d.shape(0) / row_part_count;
    const bool bias_per_row = args.bias && args.bias->rank() == 2 && args.bias->shape(0) == d.shape(0);
    std::array<GroupOperands, row_part_count> parts;
    std::array<std::shared_ptr<MatmulPlan>, row_part_count> plans;
    for (std::int64_t i = 0; i < row_part_count; ++i) {
        GroupOperands& part = parts[std::size_t(i)];
        part.group = i;
        part.a = rows_of(a, i * rows, rows);
        part.b = b;
        part.d = rows_of(d, i * rows, rows);
        if (args.bias) part.bias = bias_per_row ? rows_of(*args.bias, i * rows, rows) : *args.bias;
        const MatmulArgs part_args{.alpha = args.alpha, .bias = part.bias};
        try {
            plans[std::size_t(i)] = cached_plan(call_of(part.a, b, &part.d, part_args), options, device, api);
        } catch (const NotSupported&) {
            return false;  // cuBLASLt has no algorithm for a block: the whole product runs
        }
    }
    // Alternating streams: part 0 and 2 on the caller's, 1 and 3 on the side stream (equal parts
    // go to the first stream of least work), so each pass runs beside the other stream's product.
    enqueue_streams(parts, plans, GroupCall{.alpha = args.alpha}, stream, device, 1);
    return true;
}

}  // namespace

MatmulOutputs run_whole_or_in_row_parts(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                                        const MatmulArgs& args, const MatmulOptions& options, core::StreamRef stream,
                                        int device, const char* api) {
    if (runs_in_row_parts(plan.problem(), a, d, args) && run_row_parts(a, b, d, args, options, stream, device, api))
        [[unlikely]]
        return {};
    return run_plan(plan, a, b, d, args, stream, device);
}

}  // namespace gpumath::detail
