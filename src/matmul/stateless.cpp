// SPDX-License-Identifier: Apache-2.0
// The stateless gpumath::matmul(): a thread-safe LRU cache of plans keyed by device, layouts,
// dtypes, pointer alignment classes and options.
#include "matmul/internal.hpp"
#include "matmul/row_parts.hpp"

#include "detail/lru_cache.hpp"
#include "detail/status.hpp"
#include "core/stream_workspace.hpp"
#include <gpumath/matmul/plan_cache.hpp>

#include "detail/log.hpp"

namespace gpumath {
namespace detail {
namespace {

using PlanCache = ControlledLruCache<MatmulKey, MatmulPlan, MatmulKeyHash>;

PlanCache& plan_cache() {
    static auto* cache = new PlanCache(MatmulPlanCache::default_capacity);  // never destroyed: plans outlive exit
    return *cache;
}

/// Reports a failed cudaGetDevice (`status`) of a call: bad input first, as InvalidArgument or
/// NotSupported, so that it is reported as such on a machine without a device; else CudaError.
[[noreturn]] void throw_no_device(cudaError_t status, const MatmulSignature& sig, const MatmulOptions& options,
                                  const char* api) {
    (void)cudaGetLastError();
    (void)analyze(sig, options, api);
    throw_cuda(status, "cudaGetDevice", "finding the current device for a matmul");
}

}  // namespace

std::shared_ptr<MatmulPlan> cached_plan(const MatmulCall& call, const MatmulOptions& options, int device,
                                        const char* api, bool* created) {
    const MatmulKey key = make_key(call, options, device);
    return plan_cache().get_or_create(key, [&] {
        if (created != nullptr) *created = true;
        return std::make_shared<MatmulPlan>(analyze(MatmulSignature::of(call), options, api), options, device, 1);
    });
}

}  // namespace detail

namespace {

/// matmul() into `d` on the current device `device`, after the checks of the call.
MatmulOutputs matmul_on(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                        const MatmulOptions& options, core::StreamRef stream, int device, const char* api) {
    const detail::MatmulCall call = detail::call_of(a, b, &d, args);
    bool created = false;
    const std::shared_ptr<detail::MatmulPlan> plan = detail::cached_plan(call, options, device, api, &created);
    if (log_enabled(LogLevel::debug))
        detail::log(LogLevel::debug, "matmul plan cache {}: M={} N={} K={} epilog {} algorithm {}",
                    created ? "miss" : "hit", plan->problem().shape.m, plan->problem().shape.n, plan->problem().shape.k,
                    to_string(plan->problem().inputs.epilog), plan->infos()[plan->selected()].id);
    return detail::run_whole_or_in_row_parts(*plan, a, b, d, args, options, stream, device, api);
}

}  // namespace

MatmulOutputs matmul(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                     const MatmulOptions& options, core::StreamRef stream) {
    constexpr const char* api = "matmul";
    detail::check_options(options, api);
    detail::check_call(a, b, &d, args, options, api);
    // The key fixes everything analyze() decides, so the full analysis runs on a miss only (and
    // here, when there is no device, to report bad input as such); the pointer checks above depend
    // on the call's pointers and run on every call.
    int device = 0;
    if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) [[unlikely]]
        detail::throw_no_device(status, detail::MatmulSignature::of(detail::call_of(a, b, &d, args)), options, api);
    return matmul_on(a, b, d, args, options, stream, device, api);
}

MatmulResult matmul(const TensorView& a, const TensorView& b, const MatmulArgs& args, const MatmulOptions& options,
                    core::StreamRef stream) {
    constexpr const char* api = "matmul";
    detail::check_call(a, b, nullptr, args, options, api);
    const std::optional<TensorLayout> c = args.c ? std::optional<TensorLayout>(*args.c) : std::nullopt;
    const TensorLayout layout = detail::allocated_result_layout(a, b, c, options, api);
    // The whole call is validated before D is allocated, so bad input is InvalidArgument on any
    // machine and nothing is allocated for it.
    detail::MatmulSignature sig = detail::MatmulSignature::of(detail::call_of(a, b, nullptr, args));
    sig.d = layout;
    (void)detail::analyze(sig, options, api);
    const int device = detail::matmul_current_device();
    detail::reject_capture(stream, api,
                           "gpumath allocates no results during a capture: pass d (the form with a d view)");
    MatmulResult r;
    r.d = Tensor::empty(layout, stream, options.memory_resource);
    static_cast<MatmulOutputs&>(r) = matmul_on(a, b, r.d.view(), args, options, stream, device, api);
    return r;
}

MatmulPlanCache::MatmulPlanCache() : PlanCacheControl(detail::plan_cache()) {}

MatmulPlanCache& matmul_plan_cache() {
    static MatmulPlanCache cache;
    return cache;
}

}  // namespace gpumath
