// SPDX-License-Identifier: Apache-2.0
// The stateless sparse products: plans from a thread-safe LRU cache keyed by A's pattern, the
// dense operands' layouts, the options, the device and the stream.
#include <gpumath/sparse/functions.hpp>

#include <optional>
#include <string>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/sparse/spmm.hpp>
#include <gpumath/sparse/spmv.hpp>
#include "detail/lru_cache.hpp"
#include "sparse/products.hpp"

namespace gpumath {
namespace detail {
namespace {

/// One cached plan.
struct SparsePlan {
    std::optional<sparse::SpMV> spmv;
    std::optional<sparse::SpMM> spmm;
};

using PlanCache = ControlledLruCache<std::string, SparsePlan>;

PlanCache& plan_cache() {
    static auto* cache = new PlanCache(sparse::SparsePlanCache::default_capacity);  // never destroyed
    return *cache;
}

/// A's pattern: format, sizes, block, the pattern arrays' addresses and dtypes, the values' layout.
std::string pattern_key(const sparse::MatrixView& a) {
    return fmt::format("{}|{}x{}|b{}{}|{}|{}|{}|{}|{}", sparse::to_string(a.format()), a.rows(), a.cols(), a.block(),
                       sparse::to_string(a.block_order()), a.offsets().data(), a.indices().data(),
                       a.row_indices().data(), to_string(a.index_type()), gpumath::to_string(a.values().layout()));
}

/// The plan's key: the operation, A's pattern, the dense layouts, the options, the device and the
/// stream (a plan's buffer serves one stream at a time).
std::string key_of(const char* operation, const sparse::MatrixView& a, const TensorLayout& in, const TensorLayout& out,
                   int op, int algorithm, const void* resource, core::StreamRef stream) {
    return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", operation, pattern_key(a), gpumath::to_string(in),
                       gpumath::to_string(out), op, algorithm, resource, current_device(), stream_identity(stream));
}

}  // namespace
}  // namespace detail

namespace sparse {

void spmv(const MatrixView& a, const TensorView& x, const TensorView& y, core::StreamRef stream) {
    spmv(a, x, y, 1.0, 0.0, SpMVOptions{}, stream);
}

void spmv(const MatrixView& a, const TensorView& x, const TensorView& y, double alpha, double beta,
          const SpMVOptions& options, core::StreamRef stream) {
    SpMV fresh(a, x, y, options);  // validated in full before any CUDA call
    const std::string key =
        detail::key_of("spmv", a, x, y, int(options.op), int(options.algorithm), options.memory_resource.get(), stream);
    const auto plan = detail::plan_cache().get_or_create(key, [&] {
        auto p = std::make_shared<detail::SparsePlan>();
        p->spmv.emplace(std::move(fresh));
        p->spmv->plan();
        return p;
    });
    plan->spmv->execute(a, x, y, alpha, beta, stream);
}

void spmm(const MatrixView& a, const TensorView& b, const TensorView& c, core::StreamRef stream) {
    spmm(a, b, c, 1.0, 0.0, SpMMOptions{}, stream);
}

void spmm(const MatrixView& a, const TensorView& b, const TensorView& c, double alpha, double beta,
          const SpMMOptions& options, core::StreamRef stream) {
    SpMM fresh(a, b, c, options);
    const std::string key =
        detail::key_of("spmm", a, b, c, int(options.op), int(options.algorithm), options.memory_resource.get(), stream);
    const auto plan = detail::plan_cache().get_or_create(key, [&] {
        auto p = std::make_shared<detail::SparsePlan>();
        p->spmm.emplace(std::move(fresh));
        p->spmm->plan();
        return p;
    });
    plan->spmm->execute(a, b, c, alpha, beta, stream);
}

SparsePlanCache::SparsePlanCache() : PlanCacheControl(detail::plan_cache()) {}

SparsePlanCache& sparse_plan_cache() {
    static SparsePlanCache cache;
    return cache;
}

}  // namespace sparse
}  // namespace gpumath
