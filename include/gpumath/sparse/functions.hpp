// SPDX-License-Identifier: Apache-2.0
/// @file
/// Stateless sparse products: spmv and spmm on plans kept in a per-process cache.
#pragma once

#include <cstddef>

#include <gpumath/core/cache.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/options.hpp>

namespace gpumath::sparse {

/// y = A·x on `stream` (see the full overload).
void spmv(const MatrixView& a, const TensorView& x, const TensorView& y,
          core::StreamRef stream = core::current_stream());

/// y = α·op(A)·x + β·y on `stream` through a cached SpMV plan. The plan is kept under A's pattern
/// (its array pointers, sizes and dtypes), x's and y's layouts, the options, the device and the
/// stream, so repeated calls with the same pattern plan once (the first call blocks while planning,
/// see SpMV::plan) and later ones only enqueue; a call with new values of a cached pattern runs
/// with those values. The same rules and errors as SpMV's constructor and execute. Capturable once
/// the plan is cached (a first call inside a capture plans on a private stream, outside it).
void spmv(const MatrixView& a, const TensorView& x, const TensorView& y, double alpha, double beta,
          const SpMVOptions& options = {}, core::StreamRef stream = core::current_stream());

/// C = A·B on `stream` (see the full overload).
void spmm(const MatrixView& a, const TensorView& b, const TensorView& c,
          core::StreamRef stream = core::current_stream());

/// C = α·op(A)·B + β·C on `stream` through a cached SpMM plan, kept as spmv's (B's and C's layouts,
/// strides included, in the key). The same rules and errors as SpMM's constructor and execute.
void spmm(const MatrixView& a, const TensorView& b, const TensorView& c, double alpha, double beta,
          const SpMMOptions& options = {}, core::StreamRef stream = core::current_stream());

/// The process-wide, thread-safe LRU cache of the plans behind spmv and spmm, reached through
/// `sparse_plan_cache()`. A plan is keyed as spmv describes.
class SparsePlanCache final : public gpumath::detail::PlanCacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 64;

    SparsePlanCache(const SparsePlanCache&) = delete;
    SparsePlanCache& operator=(const SparsePlanCache&) = delete;
    SparsePlanCache(SparsePlanCache&&) = delete;
    SparsePlanCache& operator=(SparsePlanCache&&) = delete;

private:
    friend SparsePlanCache& sparse_plan_cache();
    SparsePlanCache();
    ~SparsePlanCache() = default;
};

/// The process-wide sparse plan cache.
[[nodiscard]] SparsePlanCache& sparse_plan_cache();

}  // namespace gpumath::sparse
