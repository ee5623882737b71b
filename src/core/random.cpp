// SPDX-License-Identifier: Apache-2.0
// Random tensors: the checks, then one pass of gpumath's Philox4x32-10 kernel (random_flat in
// kernels/tensor_ops.cu), which computes each value from its seed and index alone. No generator
// state lives between calls, so a call never synchronizes, allocates or reseeds anything and may be
// captured into a CUDA graph (docs/design.md says why not cuRAND's host API).
#include <gpumath/tensor_ops.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "core/kernels/tensor_ops_params.hpp"
#include "core/stream_workspace.hpp"
#include "core/tensor_ops_internal.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

namespace {

using kernels::RandomDistribution;

const char* name_of(RandomDistribution d) {
    return d == kernels::random_uniform ? "uniform" : d == kernels::random_normal ? "normal" : "lognormal";
}

/// The rules of a random tensor that its layout and the parameters decide.
void check_random(const TensorLayout& out, RandomDistribution d, double a, double b, const char* api) {
    const DataType t = out.dtype();
    if (t != DataType::f16 && t != DataType::bf16 && t != DataType::f32 && t != DataType::f64)
        throw_invalid(fmt::format("out: {} elements; random::{} writes f16, bf16, f32 or f64 (cast the result for "
                                  "another type)",
                                  to_string(t), name_of(d)),
                      api);
    if (!out.is_contiguous())
        throw_invalid(fmt::format("out: strides {} are not row-major; random values fill contiguous tensors "
                                  "(copy them into a strided view after)",
                                  to_string(out.strides())),
                      api);
    if (!std::isfinite(a) || !std::isfinite(b))
        throw_invalid(fmt::format("{}: {} and {}: the parameters must be finite",
                                  d == kernels::random_uniform ? "low, high" : "mean, stddev", a, b),
                      api);
    if (d == kernels::random_uniform && a > b) throw_invalid(fmt::format("low: {} is above high ({})", a, b), api);
    if (d != kernels::random_uniform && b < 0) throw_invalid(fmt::format("stddev: {} is negative", b), api);
}

/// A sequence holds 2^64 values: the last ones a call draws must exist (with the block that holds
/// them).
void check_offset(std::uint64_t offset, std::int64_t count, const char* api) {
    constexpr std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
    if (offset > last - std::uint64_t(count) - 4)
        throw_invalid(fmt::format("options.offset: {} with {} values runs past the end of the seed's sequence "
                                  "(2^64 values); start lower or use another seed",
                                  offset, count),
                      api);
}

void draw(const TensorView& out, RandomDistribution d, double a, double b, const random::RandomOptions& o,
          core::StreamRef stream, const char* api) {
    check_written(out, "out", api);
    check_random(out, d, a, b, api);
    check_offset(o.offset, out.size(), api);
    random_flat(out.data(), out.dtype(), out.size(), d, o.seed, o.offset, a, b, stream);
}

Tensor allocate_and_draw(DataType dtype, std::initializer_list<std::int64_t> shape, RandomDistribution d, double a,
                         double b, const random::RandomOptions& o, core::StreamRef stream, const char* api) {
    const TensorLayout layout(dtype, shape);
    check_random(layout, d, a, b, api);
    check_offset(o.offset, layout.size(), api);
    reject_capture(stream, api, "gpumath allocates no results during a capture: fill a tensor made before");
    Tensor t = Tensor::empty(layout, stream);
    // A new row-major tensor passes what draw() would check again.
    random_flat(t.data(), dtype, t.view().size(), d, o.seed, o.offset, a, b, stream);
    return t;
}

}  // namespace

}  // namespace gpumath::detail

namespace gpumath::random {

void uniform(const TensorView& out, double low, double high, const RandomOptions& options, core::StreamRef stream) {
    detail::draw(out, kernels::random_uniform, low, high, options, stream, "gpumath::random::uniform");
}

void normal(const TensorView& out, double mean, double stddev, const RandomOptions& options, core::StreamRef stream) {
    detail::draw(out, kernels::random_normal, mean, stddev, options, stream, "gpumath::random::normal");
}

void lognormal(const TensorView& out, double mean, double stddev, const RandomOptions& options,
               core::StreamRef stream) {
    detail::draw(out, kernels::random_lognormal, mean, stddev, options, stream, "gpumath::random::lognormal");
}

Tensor uniform(DataType dtype, std::initializer_list<std::int64_t> shape, double low, double high,
               const RandomOptions& options, core::StreamRef stream) {
    return detail::allocate_and_draw(dtype, shape, kernels::random_uniform, low, high, options, stream,
                                     "gpumath::random::uniform");
}

Tensor normal(DataType dtype, std::initializer_list<std::int64_t> shape, double mean, double stddev,
              const RandomOptions& options, core::StreamRef stream) {
    return detail::allocate_and_draw(dtype, shape, kernels::random_normal, mean, stddev, options, stream,
                                     "gpumath::random::normal");
}

Tensor lognormal(DataType dtype, std::initializer_list<std::int64_t> shape, double mean, double stddev,
                 const RandomOptions& options, core::StreamRef stream) {
    return detail::allocate_and_draw(dtype, shape, kernels::random_lognormal, mean, stddev, options, stream,
                                     "gpumath::random::lognormal");
}

}  // namespace gpumath::random
