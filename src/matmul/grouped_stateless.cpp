// SPDX-License-Identifier: Apache-2.0
// The stateless gpumath::grouped_matmul(): the automatic backend with each group's plan from
// matmul()'s plan cache, so a group and a matmul() call of the same operands share one plan.
#include "matmul/grouped.hpp"

#include "core/stream_workspace.hpp"
#include "detail/lru_cache.hpp"
#include "detail/status.hpp"
#include "matmul/grouped_scales.hpp"
#include "matmul/problem.hpp"

namespace gpumath {
namespace {

/// The plans of stateless calls' streams_partitioned products (never destroyed: used until exit).
detail::LruCache<detail::MatmulKey, detail::MatmulPlan, detail::MatmulKeyHash>& partitioned_cache() {
    static auto* cache = new detail::LruCache<detail::MatmulKey, detail::MatmulPlan, detail::MatmulKeyHash>(512);
    return *cache;
}

/// The measured choices of every stateless call's `automatic` backend.
detail::BackendChoices& stateless_choices() {
    static auto* choices = new detail::BackendChoices;  // NOLINT: never destroyed (used until exit)
    return *choices;
}

void run_stateless(std::vector<detail::GroupOperands>& groups, const detail::GroupedShape& shape,
                   const GroupedMatmulArgs& args, const MatmulOptions& options, core::StreamRef stream,
                   const detail::HostKernelCall* kernel, const detail::BackendChoiceKey& key, const char* api) {
    if (groups.empty() && !args.scales.amax_d) return;  // amax_d gets 0 for every group even then
    const int device = detail::grouped_device(groups, options, args.alpha, api);
    const auto plans = detail::group_plans(groups, args.alpha, [&](const detail::MatmulCall& call) {
        return detail::cached_plan(call, options, device, api);
    });
    // Plans for streams_partitioned: their own process-wide cache (matmul() never uses them).
    detail::PartitionedLookup partitioned(groups, args.alpha, [&](const detail::MatmulCall& call, int sm_count_target) {
        return partitioned_cache().get_or_create(
            detail::partitioned_key(detail::make_key(call, options, device), sm_count_target),
            [&] { return detail::make_group_plan(call, options, device, sm_count_target, api); });
    });
    detail::enqueue_grouped_call(groups, plans, partitioned, args, shape.groups, stream, device,
                                 GroupedBackend::automatic, stateless_choices(), key, kernel, api);
}

}  // namespace

void grouped_matmul(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                    const GroupedMatmulArgs& args, const MatmulOptions& options, core::StreamRef stream) {
    constexpr const char* api = "grouped_matmul";
    detail::check_grouped_options(options, {}, api);
    const detail::GroupedShape shape = detail::check_group_layouts(a, b, options, api);
    detail::check_group_call(a, b, d, args, shape, options.epilog, api);
    std::vector<detail::GroupOperands> groups;
    detail::groups_of(a, b, d, args, groups);
    run_stateless(groups, shape, args, options, stream, nullptr, detail::choice_key(shape, options), api);
}

void grouped_matmul(const TensorView& a, const TensorView& b, const TensorView& d,
                    std::span<const std::int64_t> group_sizes, const GroupedMatmulArgs& args,
                    const MatmulOptions& options, core::StreamRef stream) {
    constexpr const char* api = "grouped_matmul";
    detail::check_grouped_options(options, {}, api);
    const detail::GroupedShape shape = detail::check_moe_layouts(a, b, options, api);
    detail::check_group_sizes(group_sizes, shape.groups, a.shape(0), api);
    detail::check_moe_call(a, b, d, a.shape(0), args, shape, options.epilog, api);
    std::vector<detail::GroupOperands> groups;
    detail::BackendChoiceKey key = detail::choice_key(shape, options);
    std::optional<detail::HostKernelCall> kernel;
    if (std::optional<detail::GroupOperands> batched = detail::batched_of(a, b, d, group_sizes, args)) {
        groups.push_back(*batched);  // equal sizes: one strided-batched product
    } else {
        // The grouped kernel is a candidate of automatic's, and runs at once where it was chosen.
        // Without a current device there is no candidate: run_stateless reports that after any bad
        // input.
        bool launched = false;
        kernel =
            detail::automatic_kernel_step(a, b, d, group_sizes, args, shape, options, &detail::current_device_or_none,
                                          stateless_choices(), key, stream, launched, api);
        if (launched) return;
        detail::groups_of(a, b, d, group_sizes, args, groups);
    }
    run_stateless(groups, shape, args, options, stream, kernel ? &*kernel : nullptr, key, api);
}

Tensor grouped_matmul(const TensorView& a, const TensorView& b, std::span<const std::int64_t> group_sizes,
                      const GroupedMatmulArgs& args, const MatmulOptions& options, core::StreamRef stream) {
    constexpr const char* api = "grouped_matmul";
    detail::check_grouped_options(options, {}, api);
    const detail::GroupedShape shape = detail::check_moe_layouts(a, b, options, api);
    detail::check_group_sizes(group_sizes, shape.groups, a.shape(0), api);
    // D as matmul's allocating form makes it for one group: a (T, K) times b[g] (K, N).
    const TensorLayout group_b(b.dtype(), {b.shape(1), b.shape(2)}, {b.stride(1), b.stride(2)});
    const TensorLayout layout = detail::allocated_result_layout(a, group_b, std::nullopt, options, api);
    detail::reject_capture(stream, api,
                           "gpumath allocates no results during a capture: pass d (the form with a d view)");
    Tensor d = Tensor::empty(layout, stream, options.memory_resource);
    grouped_matmul(a, b, d.view(), group_sizes, args, options, stream);
    return d;
}

void grouped_matmul(const TensorView& a, const TensorView& b, const TensorView& d, const DeviceGroupSizes& group_sizes,
                    const GroupedMatmulArgs& args, const MatmulOptions& options, core::StreamRef stream) {
    constexpr const char* api = "grouped_matmul";
    detail::check_grouped_options(options, {}, api);
    const detail::GroupedShape shape = detail::check_moe_layouts(a, b, options, api);
    detail::check_moe_call(a, b, d, a.shape(0), args, shape, options.epilog, api);
    detail::check_device_sizes(group_sizes, d, shape, a.shape(0), api);
    const detail::GroupedKernelCall call = detail::device_sizes_call(a, b, d, group_sizes, args, shape, options, api);
    detail::run_grouped_kernel(call.variant, call.params, stream, api);
}

}  // namespace gpumath
