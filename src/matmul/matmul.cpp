// SPDX-License-Identifier: Apache-2.0
// gpumath::Matmul: validation at construction, a primary plan read without locks on the hot path,
// and a few variant plans for calls whose d, bias, aux or alignment differ from it.
#include "matmul/internal.hpp"
#include "matmul/row_parts.hpp"
#include "matmul/tuning.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "detail/log.hpp"
#include "detail/status.hpp"
#include "core/stream_workspace.hpp"

namespace gpumath {
namespace detail {

class MatmulState {
public:
    MatmulState(const TensorLayout& a, const TensorLayout& b, const std::optional<TensorLayout>& c,
                const MatmulOptions& options)
        : options_(options), a_(a), b_(b), c_(c) {
        MatmulSignature sig;
        sig.a = a;
        sig.b = b;
        sig.c = c;
        sig.from_layouts = true;
        base_ = analyze(sig, options, "Matmul");
        base_key_ = make_key(base_.signature.call(), options, -1);
    }

    const std::vector<AlgorithmInfo>& plan(const PlanPreferences& preferences) {
        check_preferences(preferences, "Matmul::plan");
        std::lock_guard lock(mutex_);
        preferences_ = preferences;
        const int device = matmul_current_device();
        publish(make_plan(base_, device, preferences.max_algorithms));
        return primary_->infos();
    }

    // The accessors take the lock: execute() may make the first plan on another thread meanwhile.
    const std::vector<AlgorithmInfo>& algorithms() const {
        static const std::vector<AlgorithmInfo> none;
        std::lock_guard lock(mutex_);
        return primary_ ? primary_->infos() : none;
    }

    const AlgorithmInfo& algorithm() const {
        std::lock_guard lock(mutex_);
        if (!primary_)
            throw_invalid("not planned yet; call plan(), autotune() or execute() first", "Matmul::algorithm");
        return primary_->infos()[primary_->selected()];
    }

    void select_algorithm(std::size_t index) {
        std::lock_guard lock(mutex_);
        if (!primary_)
            throw_invalid("not planned yet; call plan(), autotune() or execute() first", "Matmul::select_algorithm");
        primary_->select(index);
    }

    MatmulOutputs execute(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                          core::StreamRef stream) {
        check_call(a, b, &d, args, options_, "Matmul::execute");
        return execute_checked(a, b, d, args, stream);
    }

    /// execute() after check_call.
    MatmulOutputs execute_checked(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                                  core::StreamRef stream) {
        const MatmulCall call = call_of(a, b, &d, args);
        MatmulPlan* p = fast_.load(std::memory_order_acquire);
        if (p != nullptr && plan_serves(p->call(), call))
            return run_whole_or_in_row_parts(*p, a, b, d, args, options_, stream, matmul_current_device(),
                                             "Matmul::execute");
        int device = -1;  // asked for only after the operands passed validation
        const std::shared_ptr<MatmulPlan> plan = slow_plan(call, device);
        if (device < 0) device = matmul_current_device();
        return run_whole_or_in_row_parts(*plan, a, b, d, args, options_, stream, device, "Matmul::execute");
    }

    MatmulResult execute_allocating(const TensorView& a, const TensorView& b, const MatmulArgs& args,
                                    core::StreamRef stream) {
        constexpr const char* api = "Matmul::execute";
        const TensorLayout layout = allocated_result_layout(a_, b_, c_, options_, api);
        check_call(a, b, nullptr, args, options_, api);
        // The whole call is validated before D is allocated (bias, aux and the rest included).
        MatmulSignature sig = MatmulSignature::of(call_of(a, b, nullptr, args));
        sig.d = layout;
        check_operands(sig, api);
        (void)analyze(sig, options_, api);
        reject_capture(stream, api, "gpumath allocates no results during a capture: pass d (the form with a d view)");
        MatmulResult r;
        r.d = Tensor::empty(layout, stream, options_.memory_resource);
        static_cast<MatmulOutputs&>(r) = execute_checked(a, b, r.d.view(), args, stream);
        return r;
    }

    const std::vector<AlgorithmInfo>& autotune(const TensorView& a, const TensorView& b, const TensorView& d,
                                               const MatmulArgs& args, core::StreamRef stream, int iterations) {
        if (iterations < 1 || iterations > 10000)
            throw_invalid(fmt::format("iterations: {} given; autotune takes 1 to 10000 (a median settles within a few "
                                      "dozen)",
                                      iterations),
                          "Matmul::autotune");
        check_call(a, b, &d, args, options_, "Matmul::autotune");
        const MatmulSignature sig = MatmulSignature::of(call_of(a, b, &d, args));
        check_operands(sig, "Matmul::autotune");
        MatmulProblem problem = analyze(sig, options_, "Matmul::autotune");
        reject_capture(
            stream, "Matmul::autotune",
            "autotune times candidates and synchronizes: autotune before the capture, then capture execute()");
        std::lock_guard lock(mutex_);
        const int device = matmul_current_device();
        auto plan = std::make_shared<MatmulPlan>(problem, options_, device, preferences_.max_algorithms);
        autotune_plan(*plan, a, b, d, args, stream, iterations);
        publish(std::move(plan));
        return primary_->infos();
    }

    void save_tuning(const std::string& path) const {
        std::shared_ptr<const MatmulPlan> plan;
        {
            std::lock_guard lock(mutex_);
            plan = primary_;
        }
        if (!plan)
            throw_invalid("not planned yet; nothing to save (call autotune() or plan() first)", "Matmul::save_tuning");
        save_tuning_entry(path, *plan);
    }

    bool load_tuning(const std::string& path) {
        std::lock_guard lock(mutex_);
        std::vector<TuningEntry> entries = read_tuning_entries(path, "Matmul::load_tuning");
        bool matched_problem = false;
        for (TuningEntry& e : entries) {
            if (!e.key.same_problem(base_key_)) continue;
            matched_problem = true;
            tuned_.insert_or_assign(e.key, e);  // a later line for the same key wins
        }
        if (!primary_) return matched_problem;
        return apply_tuned(*primary_);
    }

    [[nodiscard]] const MatmulProblem& base() const noexcept { return base_; }
    [[nodiscard]] const MatmulOptions& options() const noexcept { return options_; }

private:
    static void check_preferences(const PlanPreferences& p, const char* api) {
        if (p.max_algorithms < 1 || p.max_algorithms > 64)
            throw_invalid(fmt::format("max_algorithms: {} given; allowed 1..64", p.max_algorithms), api);
    }

    void check_operands(const MatmulSignature& sig, const char* api) const {
        if (!(sig.a == a_))
            throw_invalid(fmt::format("a: layout {} differs from the layout this Matmul was built for ({}); build a "
                                      "Matmul for it or use gpumath::matmul()",
                                      to_string(sig.a), to_string(a_)),
                          api);
        if (!(sig.b == b_))
            throw_invalid(fmt::format("b: layout {} differs from the layout this Matmul was built for ({}); build a "
                                      "Matmul for it or use gpumath::matmul()",
                                      to_string(sig.b), to_string(b_)),
                          api);
        if (sig.c.has_value() != c_.has_value())
            throw_invalid(
                c_ ? fmt::format("c: this Matmul was built with a c layout ({}); pass MatmulArgs::c", to_string(*c_))
                   : std::string("c: this Matmul was built without c; build it with a c layout to pass one"),
                api);
        if (c_ && !(*sig.c == *c_))
            throw_invalid(fmt::format("c: layout {} differs from the layout this Matmul was built for ({})",
                                      to_string(*sig.c), to_string(*c_)),
                          api);
    }

    std::shared_ptr<MatmulPlan> make_plan(const MatmulProblem& problem, int device, int max_algorithms) {
        auto plan = std::make_shared<MatmulPlan>(problem, options_, device, max_algorithms);
        apply_tuned(*plan);
        return plan;
    }

    bool apply_tuned(MatmulPlan& plan) {
        const auto it = tuned_.find(plan.key());
        if (it == tuned_.end()) return false;
        if (plan.adopt(it->second.algo)) {
            detail::log(LogLevel::debug, "Matmul: using the tuned algorithm {} from a tuning file",
                        plan.infos()[plan.selected()].id);
            return true;
        }
        detail::log(LogLevel::debug, "Matmul: cuBLASLt rejected a tuned algorithm from a tuning file; ignored");
        return false;
    }

    void publish(std::shared_ptr<MatmulPlan> plan) {
        // No execute() runs meanwhile (plan and autotune must not overlap other calls), and nothing
        // enqueued needs the replaced plan: its descriptors are read only while cublasLtMatmul enqueues.
        primary_ = std::move(plan);
        fast_.store(primary_.get(), std::memory_order_release);
    }

    /// The plan for a call that the primary plan does not match: a variant planned before, or a
    /// new one (the signature is built only then; `device` is set to the current device then).
    std::shared_ptr<MatmulPlan> slow_plan(const MatmulCall& call, int& device) {
        const MatmulKey key = make_key(call, options_, -1);
        std::lock_guard lock(mutex_);
        // A plan with these layouts exists only for operands that passed check_operands.
        if (primary_ && primary_->key().same_layouts(key) && primary_->key().aligned_enough(key.align)) return primary_;
        for (const auto& v : variants_)
            if (v->key().same_layouts(key) && v->key().aligned_enough(key.align)) return v;
        const MatmulSignature sig = MatmulSignature::of(call);
        check_operands(sig, "Matmul::execute");
        MatmulProblem problem = analyze(sig, options_, "Matmul::execute");
        device = matmul_current_device();
        if (!primary_) {
            publish(make_plan(problem, device, preferences_.max_algorithms));
            return primary_;
        }
        if (log_enabled(LogLevel::debug))
            detail::log(LogLevel::debug, "Matmul: operands differ from the plan ({}); planning for them: {}",
                        primary_->key().same_layouts(key) ? "a pointer is less aligned than planned"
                                                          : "d, bias, aux or bias_grad layout",
                        problem.describe());
        auto plan = make_plan(problem, device, 1);
        constexpr std::size_t max_variants = 16;
        if (variants_.size() >= max_variants) variants_.erase(variants_.begin());
        variants_.push_back(plan);
        return plan;
    }

    MatmulOptions options_;
    TensorLayout a_, b_;
    std::optional<TensorLayout> c_;
    MatmulProblem base_;
    MatmulKey base_key_;
    PlanPreferences preferences_;

    mutable std::mutex mutex_;
    std::shared_ptr<MatmulPlan> primary_;
    std::atomic<MatmulPlan*> fast_{nullptr};
    std::vector<std::shared_ptr<MatmulPlan>> variants_;
    std::unordered_map<MatmulKey, TuningEntry, MatmulKeyHash> tuned_;  // loaded entries of this problem, by key
};

}  // namespace detail

Matmul::Matmul(const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options)
    : state_(std::make_unique<detail::MatmulState>(a, b, std::nullopt, options)) {}

Matmul::Matmul(const TensorLayout& a, const TensorLayout& b, const TensorLayout& c, const MatmulOptions& options)
    : state_(std::make_unique<detail::MatmulState>(a, b, c, options)) {}

Matmul::Matmul(Matmul&&) noexcept = default;
Matmul& Matmul::operator=(Matmul&&) noexcept = default;
Matmul::~Matmul() = default;

namespace {

const detail::MatmulProblem* base_or_null(const std::unique_ptr<detail::MatmulState>& s) noexcept {
    return s ? &s->base() : nullptr;
}

}  // namespace

detail::MatmulState& Matmul::state(const char* api) const {
    if (!state_) [[unlikely]]
        detail::throw_moved_from("Matmul", api);
    return *state_;
}

const std::vector<AlgorithmInfo>& Matmul::plan(const PlanPreferences& preferences) {
    return state("Matmul::plan").plan(preferences);
}
const std::vector<AlgorithmInfo>& Matmul::algorithms() const { return state("Matmul::algorithms").algorithms(); }
const AlgorithmInfo& Matmul::algorithm() const { return state("Matmul::algorithm").algorithm(); }
void Matmul::select_algorithm(std::size_t index) { state("Matmul::select_algorithm").select_algorithm(index); }

const std::vector<AlgorithmInfo>& Matmul::autotune(const TensorView& a, const TensorView& b, const TensorView& d,
                                                   const MatmulArgs& args, core::StreamRef stream, int iterations) {
    return state("Matmul::autotune").autotune(a, b, d, args, stream, iterations);
}

void Matmul::save_tuning(const std::string& path) const { state("Matmul::save_tuning").save_tuning(path); }
bool Matmul::load_tuning(const std::string& path) { return state("Matmul::load_tuning").load_tuning(path); }

MatmulOutputs Matmul::execute(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                              core::StreamRef stream) {
    return state("Matmul::execute").execute(a, b, d, args, stream);
}

MatmulResult Matmul::execute(const TensorView& a, const TensorView& b, const MatmulArgs& args, core::StreamRef stream) {
    return state("Matmul::execute").execute_allocating(a, b, args, stream);
}

std::int64_t Matmul::m() const noexcept { return state_ ? state_->base().shape.m : 0; }
std::int64_t Matmul::n() const noexcept { return state_ ? state_->base().shape.n : 0; }
std::int64_t Matmul::k() const noexcept { return state_ ? state_->base().shape.k : 0; }
std::int64_t Matmul::batch_count() const noexcept { return state_ ? state_->base().shape.batch : 0; }
const TensorLayout& Matmul::result_layout() const noexcept {
    static const TensorLayout none;
    const detail::MatmulProblem* p = base_or_null(state_);
    return p ? *p->signature.d : none;
}
ComputeType Matmul::compute_type() const noexcept {
    return state_ ? state_->base().types.compute : ComputeType::automatic;
}
const MatmulOptions& Matmul::options() const noexcept {
    static const MatmulOptions none;
    return state_ ? state_->options() : none;
}

}  // namespace gpumath
