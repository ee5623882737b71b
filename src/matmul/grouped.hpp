// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: grouped products. The rules every group shares (grouped_checks.cpp), the
// slicing of a call into one matmul per group, and the loop backend: every group's plan is looked
// up (or made) before the first product is enqueued, then the products run in group order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/error.hpp>
#include <gpumath/matmul/grouped.hpp>
#include <gpumath/matmul/options.hpp>

#include "matmul/grouped_kernel.hpp"
#include "matmul/grouped_streams.hpp"
#include "matmul/internal.hpp"

namespace gpumath::detail {

/// What every group shares: G, N, K and the types.
struct GroupedShape {
    std::int64_t groups = 0;
    std::int64_t n = 0, k = 0;
    DataType input = DataType::f32;   // of every A and B
    DataType result = DataType::f32;  // of every D
    bool f16_scale = false;           // alpha is f16 (f16 inputs, compute type f16)
};

/// One non-empty group's operands, as one matmul sees them.
struct GroupOperands {
    std::int64_t group = 0;
    TensorView a, b, d;
    std::optional<TensorView> bias;  // (N,): row `group` of GroupedMatmulArgs::bias
    MatmulScales scales;             // FP8: the group's per-tensor scales (see scale_placeholders)
};

/// Per-tensor scale pointers that stand in for a group's scale slots until the call writes them
/// (grouped_scales.hpp): which scales a product has and their alignment (16 bytes, as the slots')
/// choose its plan, so every group is planned for the slots before any GPU work.
[[nodiscard]] MatmulScales scale_placeholders(const GroupedScales& scales) noexcept;

/// Options: every enum in range, an epilog without aux, bias gradient or user function.
void check_grouped_options(const MatmulOptions& options, const GroupedOptions& grouped, const char* api);

/// The per-group form's layouts: G > 0, rank 2, one input type of f16/bf16/f32, shared K and N.
/// Instantiated for TensorLayout and TensorView.
template <class L>
[[nodiscard]] GroupedShape check_group_layouts(std::span<const L> a, std::span<const L> b, const MatmulOptions& options,
                                               const char* api);

/// The mixture-of-experts form's layouts: a (T, K), b (G, K, N) with G > 0, one input type.
[[nodiscard]] GroupedShape check_moe_layouts(const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options,
                                             const char* api);

/// Host group sizes: G values, none negative, summing to `rows`.
void check_group_sizes(std::span<const std::int64_t> sizes, std::int64_t groups, std::int64_t rows, const char* api);

/// Everything about a per-group call but its a and b layouts (checked by the caller): d's count,
/// shapes and type, the bias, pointer alignment and alpha, and that no D overlaps another D or an
/// input.
void check_group_call(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                      const GroupedMatmulArgs& args, const GroupedShape& shape, Epilog epilog, const char* api);

/// The same for the mixture-of-experts form: d (rows, N) of the result type whose rows do not
/// overlap, the bias, alignment and alpha, no output overlapping an input.
void check_moe_call(const TensorView& a, const TensorView& b, const TensorView& d, std::int64_t rows,
                    const GroupedMatmulArgs& args, const GroupedShape& shape, Epilog epilog, const char* api);

/// Device group sizes: a (G,) i32 tensor and a bound within a's rows.
void check_device_sizes(const DeviceGroupSizes& sizes, const TensorView& d, const GroupedShape& shape,
                        std::int64_t rows, const char* api);

/// A device-sizes call for the grouped kernel.
struct GroupedKernelCall {
    GroupedKernelVariant variant;
    GroupedKernelParams params;
};

/// The grouped-kernel call of a validated device-sizes call (check_moe_call, check_device_sizes),
/// after the matmul rules of one group (layouts, types, epilog) and the bias's type.
[[nodiscard]] GroupedKernelCall device_sizes_call(const TensorView& a, const TensorView& b, const TensorView& d,
                                                  const DeviceGroupSizes& sizes, const GroupedMatmulArgs& args,
                                                  const GroupedShape& shape, const MatmulOptions& options,
                                                  const char* api);

/// A mixture-of-experts call with host group sizes as one launch of the grouped kernel (the
/// `kernel` backend): the sizes travel in the launch's parameters.
struct HostKernelCall {
    GroupedKernelCall call;
    GroupedInlineSizes sizes;
};

/// Enqueues `h`'s launch on `stream` (run_grouped_kernel with its sizes).
inline void run_host_kernel(const HostKernelCall& h, core::StreamRef stream, const char* api) {
    run_grouped_kernel(h.call.variant, h.call.params, stream, api, &h.sizes);
}

/// Why the `kernel` backend cannot run a call of `shape` over `rows` rows of A (empty when it can):
/// FP8 inputs, more groups than a launch carries, sizes past 32 bits.
[[nodiscard]] std::string host_kernel_refusal(const GroupedShape& shape, std::int64_t rows);

/// The kernel launch of a validated host-sizes call (check_moe_call, check_group_sizes): the bound
/// is A's rows. NotSupported naming host_kernel_refusal's reason or the kernel's grid limit.
[[nodiscard]] HostKernelCall host_sizes_call(const TensorView& a, const TensorView& b, const TensorView& d,
                                             std::span<const std::int64_t> sizes, const GroupedMatmulArgs& args,
                                             const GroupedShape& shape, const MatmulOptions& options, const char* api);

/// `automatic`'s `kernel` candidate for a validated host-sizes call on `device` (`calls`: the call
/// class of `sizes`): the launch, with key.device, key.calls and key.kernel filled in; none
/// (key.kernel -1) where the kernel cannot run the call (its refusal, or layouts the products
/// reject: the loop reports those), where the compute type asks for other than f32 accumulation,
/// or for f16 and bf16 before compute capability 8.0.
[[nodiscard]] std::optional<HostKernelCall> kernel_candidate(const TensorView& a, const TensorView& b,
                                                             const TensorView& d, std::span<const std::int64_t> sizes,
                                                             const GroupedCallClass& calls,
                                                             const GroupedMatmulArgs& args, const GroupedShape& shape,
                                                             const MatmulOptions& options, int device,
                                                             BackendChoiceKey& key, const char* api);

/// `automatic`'s kernel step for a validated host-sizes call that no strided-batched product takes:
/// where the call makes two products or more, the device is `current_device()` (none below 0) and
/// kernel_candidate gives a launch, that launch, enqueued on `stream` at once (`launched` true) where
/// `choices` remembers the kernel for its key; none otherwise. `key` as kernel_candidate fills it.
[[nodiscard]] std::optional<HostKernelCall> automatic_kernel_step(
    const TensorView& a, const TensorView& b, const TensorView& d, std::span<const std::int64_t> sizes,
    const GroupedMatmulArgs& args, const GroupedShape& shape, const MatmulOptions& options, int (*current_device)(),
    const BackendChoices& choices, BackendChoiceKey& key, core::StreamRef stream, bool& launched, const char* api);

/// The matmul signature of group `a` x `b` from layouts alone (d and bias take their defaults).
[[nodiscard]] MatmulSignature group_signature(const TensorLayout& a, const TensorLayout& b);

/// analyze() of one group, its InvalidArgument or NotSupported naming the group.
[[nodiscard]] MatmulProblem analyze_group(const MatmulSignature& sig, const MatmulOptions& options, std::int64_t group,
                                          const char* api);

/// The layout of every B_g of a (G, K, N) weights layout (only the pointer moves with g).
[[nodiscard]] TensorLayout weights_of(const TensorLayout& b);

/// The non-empty groups of a per-group call.
void groups_of(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
               const GroupedMatmulArgs& args, std::vector<GroupOperands>& out);
/// The non-empty groups of a mixture-of-experts call (rows of a and d sliced by `sizes`).
void groups_of(const TensorView& a, const TensorView& b, const TensorView& d, std::span<const std::int64_t> sizes,
               const GroupedMatmulArgs& args, std::vector<GroupOperands>& out);

/// A mixture-of-experts call whose G > 1 groups all have the same M > 0 rows, with a row-major d
/// and FP8 scales (if any) shared by every group without amax_d, as one strided-batched product
/// (`group` -1): a (G, M, K), b (G, K, N), d (G, M, N), bias (G, 1, N). Empty otherwise.
[[nodiscard]] std::optional<GroupOperands> batched_of(const TensorView& a, const TensorView& b, const TensorView& d,
                                                      std::span<const std::int64_t> sizes,
                                                      const GroupedMatmulArgs& args);

/// The signature a strided-batched call of the constructed layouts has (for planning ahead):
/// dense D and bias (of the type a call without C takes: bf16 or f16 for FP8 inputs), M rows per
/// group.
[[nodiscard]] MatmulSignature batched_signature(const TensorLayout& a, const TensorLayout& b, std::int64_t m,
                                                const GroupedShape& shape, Epilog epilog);

/// Rethrows the InvalidArgument or NotSupported being handled with "group <g>: " after its api
/// ("all groups (strided-batched): " for group -1).
[[noreturn]] void rethrow_for_group(std::int64_t group);

/// Every group's plan (`lookup(call)`), all found before any product is enqueued so that bad input
/// is reported first, with the group it is in.
template <class Lookup>
[[nodiscard]] std::vector<std::shared_ptr<MatmulPlan>> group_plans(std::span<const GroupOperands> groups,
                                                                   const Scalar& alpha, Lookup&& lookup) {
    std::vector<std::shared_ptr<MatmulPlan>> plans;
    plans.reserve(groups.size());
    for (const GroupOperands& g : groups) {
        const MatmulArgs args{.alpha = alpha, .bias = g.bias, .scales = g.scales};
        try {
            plans.push_back(lookup(call_of(g.a, g.b, &g.d, args)));
        } catch (const InvalidArgument&) {
            rethrow_for_group(g.group);
        } catch (const NotSupported&) {
            rethrow_for_group(g.group);
        }
    }
    return plans;
}

/// The current device for the products of `groups`; without one, bad input of any group is reported
/// first (InvalidArgument or NotSupported naming the group, as matmul() reports it), then CudaError.
[[nodiscard]] int grouped_device(std::span<const GroupOperands> groups, const MatmulOptions& options,
                                 const Scalar& alpha, const char* api);

/// The current device, or -1 without one (its error cleared; grouped_device reports it).
[[nodiscard]] int current_device_or_none();

/// A plan for `call` under `options` on `device`, made for `sm_count_target` SMs (0: the whole
/// device; MatmulProblem::sm_count_target), logged at debug level.
[[nodiscard]] std::shared_ptr<MatmulPlan> make_group_plan(const MatmulCall& call, const MatmulOptions& options,
                                                          int device, int sm_count_target, const char* api);

/// The PartitionedPlans of `groups`: each product's plan from `lookup(call, sm_count_target)`.
template <class Lookup>
class PartitionedLookup final : public PartitionedPlans {
public:
    PartitionedLookup(std::span<const GroupOperands> groups, const Scalar& alpha, Lookup lookup)
        : groups_(groups), alpha_(alpha), lookup_(std::move(lookup)) {}
    [[nodiscard]] std::vector<std::shared_ptr<MatmulPlan>> plans(int sm_count_target) override {
        return group_plans(groups_, alpha_, [&](const MatmulCall& call) { return lookup_(call, sm_count_target); });
    }

private:
    std::span<const GroupOperands> groups_;
    const Scalar& alpha_;
    Lookup lookup_;
};

/// The key of `automatic`'s measured choices for products of `shape` with `options`' epilog (device
/// and call class filled in per call).
[[nodiscard]] inline BackendChoiceKey choice_key(const GroupedShape& shape, const MatmulOptions& options) {
    return {.n = shape.n,
            .k = shape.k,
            .input = int(shape.input),
            .result = int(shape.result),
            .epilog = int(options.epilog),
            .calls = {}};
}

}  // namespace gpumath::detail
