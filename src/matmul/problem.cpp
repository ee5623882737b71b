// SPDX-License-Identifier: Apache-2.0
// analyze(): validation of a matmul problem and its arrangement on cuBLASLt, as a pipeline of
// stages (each in its own file). Host only: no CUDA calls, so bad input is reported on any machine
// before any GPU work.
#include "matmul/problem.hpp"

#include <fmt/format.h>

#include "matmul/arrangement.hpp"
#include "matmul/checks.hpp"
#include "matmul/epilog_inputs.hpp"
#include "matmul/epilog_pass.hpp"
#include "matmul/scales.hpp"
#include "matmul/shapes.hpp"
#include "matmul/types.hpp"

namespace gpumath::detail {

std::string MatmulProblem::describe() const {
    const MatmulSignature& s = signature;
    std::string text = fmt::format("M={} N={} K={} batch={}; a {}; b {}; d {}", shape.m, shape.n, shape.k, shape.batch,
                                   to_string(s.a), to_string(s.b), to_string(*s.d));
    if (inputs.c_from_bias) text += fmt::format("; bias (as c) {}", to_string(*s.bias));
    else if (s.c) text += fmt::format("; c {}", to_string(*s.c));
    const bool swap = lt.swap;
    text += fmt::format("; epilog {}; compute {}; cuBLASLt {} (D{} = {}{} x {}{}, epilogue {})",
                        to_string(inputs.epilog), to_string(types.compute), swap ? "swap" : "no swap", swap ? "^T" : "",
                        swap ? "B" : "A", lt.op_a == CUBLAS_OP_T ? "^T" : "", swap ? "A" : "B",
                        lt.op_b == CUBLAS_OP_T ? "^T" : "", lt_epilog_name(lt.epilog));
    if (scales.fine)
        text += fmt::format("; scales {} x {}{}", to_string(scales.a), to_string(scales.b),
                            lt.loop.on ? ", one cuBLASLt call per product" : "");
    if (pass.on) {
        text += fmt::format("; elementwise pass:{}{}{}", pass.bias ? " bias" : "",
                            pass.act == EpilogPass::Activation::relu   ? " relu"
                            : pass.act == EpilogPass::Activation::gelu ? " gelu"
                            : pass.act == EpilogPass::Activation::silu ? " silu"
                                                                       : "",
                            pass.function ? " function" : "");
    }
    return text;
}

MatmulProblem analyze(const MatmulSignature& sig, const MatmulOptions& options, const char* api) {
    check_options(options, api);
    MatmulProblem P;
    P.api = api;
    P.shape = shape_stage(sig.a, sig.b, api);
    P.types = types_stage(sig, options, api);
    check_scales(sig, P.types, api);
    P.inputs.epilog = options.epilog;
    check_epilog_operands(sig, P.types, options.epilog, P.shape.k, api);

    // The user's facts, with D concrete; the planned bias and aux are filled in below.
    MatmulSignature& s = P.signature;
    s = sig;
    s.from_layouts = false;
    s.d = result_stage(sig, P.shape, P.types, api);

    const BiasInput bias = bias_stage(sig, *s.d, P.shape, P.types, options.epilog, api);
    epilog_pass_route(bias, options, P);
    // A bias the elementwise pass adds does not constrain cuBLASLt's arrangement.
    arrangement_stage(sig, P.pass.bias ? BiasInput{} : bias, P);
    if (P.types.fp8) check_fp8_operands(sig, P.shape, P.lt.swap, api);
    epilog_vectors_stage(sig, bias, P);
    epilog_pass_stage(bias, P);
    lt_epilog_stage(P);
    scale_stage(sig, P);

    if (bias.present) s.bias = bias.layout;
    if (!sig.aux && epilog_reads_aux(options.epilog)) s.aux = P.inputs.aux_view;  // planning from layouts
    return P;
}

TensorLayout allocated_result_layout(const TensorLayout& a, const TensorLayout& b, const std::optional<TensorLayout>& c,
                                     const MatmulOptions& options, const char* api) {
    check_options(options, api);
    TensorLayout d;
    const auto result = options.result_type ? options.result_type : default_result(a.dtype());
    std::optional<BatchShape> batch;
    // The common case without analysis: rank >= 2, matching K, broadcastable batches.
    if (a.rank() >= 2 && b.rank() >= 2 && a.shape(-1) == b.shape(-2)) batch = broadcast_batch(a, b, nullptr);
    if (batch && result) {
        check_result_size(*result, *batch, a.shape(-2), b.shape(-1), a, b, api);
        d = default_result_layout(*result, *batch, a.shape(-2), b.shape(-1), c ? &*c : nullptr);
    } else {
        MatmulSignature sig;
        sig.a = a;
        sig.b = b;
        sig.c = c;
        sig.from_layouts = true;
        d = *analyze(sig, options, api).signature.d;  // throws the precise error
    }
    if (!(d == TensorLayout(d.dtype(), d.shape())))
        invalid(api,
                "c: strides {} make d column-major (cuBLASLt reads c and writes d along one unit-stride "
                "dimension), and the allocating calls return a row-major Tensor; pass a d view laid out as {} "
                "(Matmul::result_layout())",
                strides_text(*c), to_string(d));
    return d;
}

}  // namespace gpumath::detail
