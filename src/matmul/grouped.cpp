// SPDX-License-Identifier: Apache-2.0
// gpumath::GroupedMatmul: validation at construction, then the loop backend with the plans of this
// object in a cache of its own, keyed as matmul()'s plans are (one plan per group shape, layout and
// pointer alignment, so groups of equal M share one).
#include "matmul/grouped.hpp"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "detail/lru_cache.hpp"
#include "matmul/checks.hpp"
#include "matmul/grouped_cublas.hpp"
#include "matmul/grouped_scales.hpp"

namespace gpumath {
namespace detail {

class GroupedState {
public:
    /// Plans kept per object: one per distinct group shape and alignment seen.
    static constexpr std::size_t plan_capacity = 1024;

    GroupedState(std::span<const TensorLayout> a, std::span<const TensorLayout> b, const MatmulOptions& options,
                 const GroupedOptions& grouped)
        : options_(options) {
        constexpr const char* api = "GroupedMatmul";
        check_grouped_options(options, grouped, api);
        if (grouped.backend == GroupedBackend::strided_batched)
            unsupported(api,
                        "grouped.backend: strided_batched needs the mixture-of-experts form (one A, weights "
                        "(G, K, N), one D); per-group views need not form one strided batch");
        shape_ = check_group_layouts(a, b, options, api);
        a_.assign(a.begin(), a.end());
        b_.assign(b.begin(), b.end());
        for (std::size_t g = 0; g < a_.size(); ++g)
            if (a_[g].shape(0) > 0) (void)analyze_group(group_signature(a_[g], b_[g]), options_, std::int64_t(g), api);
        resolve_backend(grouped);
    }

    GroupedState(const TensorLayout& a, const TensorLayout& b, std::span<const std::int64_t> sizes,
                 const MatmulOptions& options, const GroupedOptions& grouped)
        : options_(options), contiguous_(true) {
        constexpr const char* api = "GroupedMatmul";
        check_grouped_options(options, grouped, api);
        shape_ = check_moe_layouts(a, b, options, api);
        check_group_sizes(sizes, shape_.groups, a.shape(0), api);
        a_ = {a};
        b_ = {b};
        sizes_.assign(sizes.begin(), sizes.end());
        const TensorLayout bg = weights_of(b);
        for (std::size_t g = 0; g < sizes_.size(); ++g)
            if (sizes_[g] > 0)
                (void)analyze_group(group_signature(moe_a(sizes_[g]), bg), options_, std::int64_t(g), api);
        resolve_backend(grouped);
    }

    void plan() {
        constexpr const char* api = "GroupedMatmul::plan";
        if (backend_ == GroupedBackend::kernel) {
            plan_kernel(api);
            return;
        }
        // Every product analyzed before the device is asked for: a rule broken here is reported as
        // such on any machine.
        const auto problems = planned_problems(api);
        const int device = matmul_current_device();
        if (backend_ == GroupedBackend::cublas) prepare_cublas(device);
        for (const auto& planned_product : problems) {
            const MatmulProblem& P = planned_product.second;
            (void)plans_.get_or_create(planned_product.first,
                                       [&] { return std::make_shared<MatmulPlan>(P, options_, device, 1); });
        }
    }

    void execute(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                 const GroupedMatmulArgs& args, core::StreamRef stream) {
        constexpr const char* api = "GroupedMatmul::execute";
        if (contiguous_)
            invalid(api,
                    "a: G views given, but this GroupedMatmul was built in the mixture-of-experts form; pass one a "
                    "(T, K), b (G, K, N), d (T, N) and the group sizes");
        if (std::int64_t(a.size()) != shape_.groups || std::int64_t(b.size()) != shape_.groups)
            invalid(api, "a, b: {} and {} views for the G = {} groups this GroupedMatmul was built for", a.size(),
                    b.size(), shape_.groups);
        for (std::size_t g = 0; g < a.size(); ++g) {
            if (!(static_cast<const TensorLayout&>(a[g]) == a_[g]))
                invalid(api, "a[{}]: layout {} differs from the layout this GroupedMatmul was built for ({})", g,
                        to_string(a[g]), to_string(a_[g]));
            if (!(static_cast<const TensorLayout&>(b[g]) == b_[g]))
                invalid(api, "b[{}]: layout {} differs from the layout this GroupedMatmul was built for ({})", g,
                        to_string(b[g]), to_string(b_[g]));
        }
        check_group_call(a, b, d, args, shape_, options_.epilog, api);
        std::vector<GroupOperands> groups;
        groups_of(a, b, d, args, groups);
        run(groups, args, stream, api, nullptr, choice_key(shape_, options_));
    }

    void execute(const TensorView& a, const TensorView& b, const TensorView& d, std::span<const std::int64_t> sizes,
                 const GroupedMatmulArgs& args, core::StreamRef stream) {
        constexpr const char* api = "GroupedMatmul::execute";
        check_moe_operands(a, b, api);
        check_group_sizes(sizes, shape_.groups, a.shape(0), api);
        check_moe_call(a, b, d, a.shape(0), args, shape_, options_.epilog, api);
        if (backend_ == GroupedBackend::kernel) {
            run_host_kernel(host_sizes_call(a, b, d, sizes, args, shape_, options_, api), stream, api);
            return;
        }
        std::vector<GroupOperands> groups;
        std::optional<GroupOperands> batched;
        if (backend_ != GroupedBackend::loop) batched = batched_of(a, b, d, sizes, args);
        if (backend_ == GroupedBackend::strided_batched && !batched)
            unsupported(api,
                        "group_sizes: grouped.backend strided_batched needs every group to have the same number of "
                        "rows (more than 0, G > 1), a row-major d and FP8 scales (if any) shared by every group "
                        "(stride 0) without amax_d; use automatic or loop otherwise");
        // automatic: the grouped kernel is a candidate too, and runs at once where it was chosen.
        std::optional<HostKernelCall> kernel;
        BackendChoiceKey key = choice_key(shape_, options_);
        if (backend_ == GroupedBackend::automatic && !batched) {
            bool launched = false;
            // Without a device there is no candidate: run() reports bad input first, then that.
            kernel = automatic_kernel_step(a, b, d, sizes, args, shape_, options_, &current_device_or_none, choices_,
                                           key, stream, launched, api);
            if (launched) return;
        }
        if (batched) groups.push_back(*batched);
        else groups_of(a, b, d, sizes, args, groups);
        run(groups, args, stream, api, kernel ? &*kernel : nullptr, key);
    }

    void execute(const TensorView& a, const TensorView& b, const TensorView& d, const DeviceGroupSizes& sizes,
                 const GroupedMatmulArgs& args, core::StreamRef stream) {
        constexpr const char* api = "GroupedMatmul::execute";
        check_moe_operands(a, b, api);
        check_moe_call(a, b, d, a.shape(0), args, shape_, options_.epilog, api);
        check_device_sizes(sizes, d, shape_, a.shape(0), api);
        const GroupedKernelCall call = device_sizes_call(a, b, d, sizes, args, shape_, options_, api);
        run_grouped_kernel(call.variant, call.params, stream, api);
    }

    [[nodiscard]] const GroupedShape& shape() const noexcept { return shape_; }
    [[nodiscard]] bool contiguous() const noexcept { return contiguous_; }
    [[nodiscard]] GroupedBackend backend() const noexcept { return backend_; }
    [[nodiscard]] const MatmulOptions& options() const noexcept { return options_; }

private:
    /// The constructed A's layout with M rows (same strides).
    [[nodiscard]] TensorLayout moe_a(std::int64_t M) const {
        const TensorLayout& a = a_[0];
        const std::int64_t shape[] = {M, a.shape(1)};
        const std::int64_t strides[] = {a.stride(0), a.stride(1)};
        return TensorLayout(a.dtype(), shape, strides);
    }

    void resolve_backend(const GroupedOptions& grouped) {
        constexpr const char* api = "GroupedMatmul";
        if (grouped.backend == GroupedBackend::cublas && is_fp8(shape_.input))
            unsupported(api,
                        "grouped.backend: cublas with {} inputs; cublasGemmGroupedBatchedEx takes f16, bf16 and f32 "
                        "(FP8 runs with loop, streams, strided_batched or automatic)",
                        to_string(shape_.input));
        if (grouped.backend == GroupedBackend::kernel) {
            if (!contiguous_)
                unsupported(api,
                            "grouped.backend: kernel needs the mixture-of-experts form (one A, weights (G, K, N), one "
                            "D); per-group views run with loop, streams, streams_partitioned, cublas or automatic");
            if (std::string why = host_kernel_refusal(shape_, a_[0].shape(0)); !why.empty())
                unsupported(api, "grouped.backend: kernel cannot run these products: {}", why);
        }
        backend_ = grouped.backend;
    }

    /// The `kernel` backend's plan(): the grouped kernel for the constructed layouts (D row-major
    /// and dense, pointers 256-byte aligned) compiled and loaded.
    void plan_kernel(const char* api) const {
        // Distinct 256-byte aligned stand-ins: they only choose the kernel, nothing is read.
        alignas(256) static const unsigned char stand_in[4 * 256] = {};
        auto at = [](std::size_t slot) -> const void* { return stand_in + 256 * (slot - 1); };
        const TensorView a(at(1), a_[0]), b(at(2), b_[0]);
        const std::int64_t d_shape[] = {a_[0].shape(0), shape_.n};
        const TensorView d(at(3), TensorLayout(shape_.result, d_shape));
        GroupedMatmulArgs args;
        const std::int64_t bias_shape[] = {shape_.groups, shape_.n};
        if (epilog_takes_bias(options_.epilog)) args.bias = TensorView(at(4), TensorLayout(shape_.result, bias_shape));
        const HostKernelCall h = host_sizes_call(a, b, d, sizes_, args, shape_, options_, api);
        load_grouped_kernel(h.call.variant, h.call.params, api);
    }

    /// What plan() plans, each product once with its key: one strided-batched product when the
    /// constructed sizes are equal and the backend may batch them, else every non-empty group.
    [[nodiscard]] std::vector<std::pair<MatmulKey, MatmulProblem>> planned_problems(const char* api) const {
        std::vector<std::pair<MatmulKey, MatmulProblem>> problems;
        std::unordered_set<MatmulKey, MatmulKeyHash> seen;
        auto add = [&](const MatmulSignature& sig, std::int64_t group) {
            const MatmulProblem P = analyze_group(sig, options_, group, api);
            const MatmulKey key = make_key(P.signature.call(), options_, -1);
            if (seen.insert(key).second) problems.emplace_back(key, P);
        };
        if (contiguous_ && backend_ != GroupedBackend::loop && batched_sizes(sizes_)) {
            add(planned(batched_signature(a_[0], b_[0], sizes_[0], shape_, options_.epilog)), -1);
            return problems;
        }
        const TensorLayout bg = contiguous_ ? weights_of(b_[0]) : TensorLayout{};
        for (std::size_t g = 0; g < std::size_t(shape_.groups); ++g) {
            const std::int64_t M = contiguous_ ? sizes_[g] : a_[g].shape(0);
            if (M == 0) continue;
            add(planned(contiguous_ ? group_signature(moe_a(M), bg) : group_signature(a_[g], b_[g])), std::int64_t(g));
        }
        return problems;
    }

    /// The signature plan() plans a group with: FP8 with per-group scales a and b (and d for an FP8
    /// result), as execute() passes them most often.
    [[nodiscard]] MatmulSignature planned(MatmulSignature sig) const {
        if (!is_fp8(shape_.input)) return sig;
        GroupedScales scales;
        const TensorView any;  // only presence matters to scale_placeholders
        scales.a = any;
        scales.b = any;
        if (is_fp8(shape_.result)) scales.d = any;
        const MatmulScales m = scale_placeholders(scales);
        sig.scales = scales_mask(m);
        sig.align[slot_scales] = scales_alignment(m);
        return sig;
    }

    /// True when sizes fit a strided-batched product: G > 1 groups of one M > 0.
    static bool batched_sizes(const std::vector<std::int64_t>& sizes) {
        return sizes.size() > 1 && sizes[0] > 0 &&
               std::all_of(sizes.begin(), sizes.end(), [&](std::int64_t m) { return m == sizes[0]; });
    }

    void check_moe_operands(const TensorView& a, const TensorView& b, const char* api) const {
        if (!contiguous_)
            invalid(api,
                    "a: one A given, but this GroupedMatmul was built from per-group layouts; pass G views of a, b "
                    "and d");
        const TensorLayout& ca = a_[0];
        if (a.rank() != 2 || a.dtype() != ca.dtype() || a.shape(1) != ca.shape(1) || a.stride(0) != ca.stride(0) ||
            a.stride(1) != ca.stride(1))
            invalid(api,
                    "a: layout {} differs from the layout this GroupedMatmul was built for ({}) in more than its "
                    "number of rows",
                    to_string(a), to_string(ca));
        if (!(static_cast<const TensorLayout&>(b) == b_[0]))
            invalid(api, "b: layout {} differs from the layout this GroupedMatmul was built for ({})", to_string(b),
                    to_string(b_[0]));
    }

    void run(std::vector<GroupOperands>& groups, const GroupedMatmulArgs& args, core::StreamRef stream, const char* api,
             const HostKernelCall* kernel, const BackendChoiceKey& key) {
        if (groups.empty() && !args.scales.amax_d) return;
        const int device = grouped_device(groups, options_, args.alpha, api);
        const auto plans = group_plans(groups, args.alpha, [&](const MatmulCall& call) {
            return plans_.get_or_create(make_key(call, options_, -1),
                                        [&] { return make_group_plan(call, options_, device, 0, api); });
        });
        PartitionedLookup partitioned(groups, args.alpha, [&](const MatmulCall& call, int sm_count_target) {
            return plans_.get_or_create(partitioned_key(make_key(call, options_, -1), sm_count_target),
                                        [&] { return make_group_plan(call, options_, device, sm_count_target, api); });
        });
        enqueue_grouped_call(groups, plans, partitioned, args, shape_.groups, stream, device, backend_, choices_, key,
                             kernel, api);
    }

    MatmulOptions options_;
    GroupedShape shape_;
    bool contiguous_ = false;
    GroupedBackend backend_ = GroupedBackend::automatic;
    std::vector<TensorLayout> a_, b_;  // per group; the mixture-of-experts form: a_[0] (T, K), b_[0] (G, K, N)
    std::vector<std::int64_t> sizes_;  // the mixture-of-experts form's planned sizes
    LruCache<MatmulKey, MatmulPlan, MatmulKeyHash> plans_{plan_capacity};
    BackendChoices choices_;
};

}  // namespace detail

GroupedMatmul::GroupedMatmul(std::span<const TensorLayout> a, std::span<const TensorLayout> b,
                             const MatmulOptions& options, const GroupedOptions& grouped)
    : state_(std::make_unique<detail::GroupedState>(a, b, options, grouped)) {}

GroupedMatmul::GroupedMatmul(const TensorLayout& a, const TensorLayout& b, std::span<const std::int64_t> group_sizes,
                             const MatmulOptions& options, const GroupedOptions& grouped)
    : state_(std::make_unique<detail::GroupedState>(a, b, group_sizes, options, grouped)) {}

GroupedMatmul::GroupedMatmul(GroupedMatmul&&) noexcept = default;
GroupedMatmul& GroupedMatmul::operator=(GroupedMatmul&&) noexcept = default;
GroupedMatmul::~GroupedMatmul() = default;

detail::GroupedState& GroupedMatmul::state(const char* api) const {
    if (!state_) [[unlikely]]
        detail::throw_moved_from("GroupedMatmul", api);
    return *state_;
}

void GroupedMatmul::plan() { state("GroupedMatmul::plan").plan(); }

void GroupedMatmul::execute(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                            const GroupedMatmulArgs& args, core::StreamRef stream) {
    state("GroupedMatmul::execute").execute(a, b, d, args, stream);
}

void GroupedMatmul::execute(const TensorView& a, const TensorView& b, const TensorView& d,
                            std::span<const std::int64_t> group_sizes, const GroupedMatmulArgs& args,
                            core::StreamRef stream) {
    state("GroupedMatmul::execute").execute(a, b, d, group_sizes, args, stream);
}

void GroupedMatmul::execute(const TensorView& a, const TensorView& b, const TensorView& d,
                            const DeviceGroupSizes& group_sizes, const GroupedMatmulArgs& args,
                            core::StreamRef stream) {
    state("GroupedMatmul::execute").execute(a, b, d, group_sizes, args, stream);
}

std::int64_t GroupedMatmul::group_count() const noexcept { return state_ ? state_->shape().groups : 0; }
std::int64_t GroupedMatmul::n() const noexcept { return state_ ? state_->shape().n : 0; }
std::int64_t GroupedMatmul::k() const noexcept { return state_ ? state_->shape().k : 0; }
bool GroupedMatmul::contiguous() const noexcept { return state_ && state_->contiguous(); }
GroupedBackend GroupedMatmul::backend() const noexcept {
    return state_ ? state_->backend() : GroupedBackend::automatic;
}
DataType GroupedMatmul::result_type() const noexcept { return state_ ? state_->shape().result : DataType::f32; }
const MatmulOptions& GroupedMatmul::options() const noexcept {
    static const MatmulOptions none;
    return state_ ? state_->options() : none;
}

}  // namespace gpumath
