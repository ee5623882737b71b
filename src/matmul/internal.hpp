// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: cuBLASLt plans and per-device state (the call description is in
// call.hpp, the validated problem in problem.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cublasLt.h>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include "core/stream_workspace.hpp"
#include <gpumath/layout.hpp>
#include <gpumath/matmul/matmul.hpp>
#include <gpumath/matmul/options.hpp>

#include "matmul/call.hpp"
#include "matmul/epilog_pass.hpp"
#include "matmul/problem.hpp"

namespace gpumath::detail {

// ---------------------------------------------------------------------------------------------
// Per-device state.

/// The cuBLASLt handle of `device`, created on first use (thread-safe) and kept for the life of
/// the process.
[[nodiscard]] cublasLtHandle_t lt_handle(int device);
/// cuBLASLt's version (cublasLtGetVersion) and the device's name and compute capability.
struct DeviceIdentity {
    std::string name;
    int cc_major = 0;
    int cc_minor = 0;
    std::size_t lt_version = 0;
    int l2_bytes = 0;
};
[[nodiscard]] const DeviceIdentity& device_identity(int device);

// ---------------------------------------------------------------------------------------------
// Plans.

/// Scratch memory a caller already holds (a StreamWorkspace lease for the stream the product runs
/// on), for a plan to use instead of acquiring its own: a grouped call that keeps data of its own in
/// the same area cannot let each product lock the area again.
struct WorkspaceArea {
    void* data = nullptr;
    std::size_t bytes = 0;
};

struct MatmulPointers {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;
    void* d = nullptr;
    const void* bias = nullptr;
    void* aux = nullptr;
    void* bias_grad = nullptr;
    MatmulScales scales;
    const void* a_scale = nullptr;  // scale tensors of the finer FP8 scale modes
    const void* b_scale = nullptr;
    const void* pass_bias = nullptr;  // a bias the elementwise pass adds
    void* user_info = nullptr;        // the user epilog function's

    /// Calls `f(slot, pointer)` with each operand's pointer (a reference, so `f` may move it).
    template <class F>
    void for_each_operand(F&& f) {
        f(slot_a, a);
        f(slot_b, b);
        f(slot_c, c);
        f(slot_d, d);
        f(slot_bias, bias);
        f(slot_aux, aux);
        f(slot_bias_grad, bias_grad);
        f(slot_a_scale, a_scale);
        f(slot_b_scale, b_scale);
    }
};

/// The cuBLASLt side of a problem: descriptors built once, heuristic results, the selected
/// algorithm. run() is thread-safe; select()/reorder()/adopt() are not (callers serialize them).
class MatmulPlan {
public:
    MatmulPlan(MatmulProblem problem, const MatmulOptions& options, int device, int max_algorithms);
    ~MatmulPlan();
    MatmulPlan(const MatmulPlan&) = delete;
    MatmulPlan& operator=(const MatmulPlan&) = delete;
    MatmulPlan(MatmulPlan&&) = delete;
    MatmulPlan& operator=(MatmulPlan&&) = delete;

    /// Enqueues the product; `current_device` is the caller's current device (the plan's device is
    /// made current around the call when they differ). With `area`, cuBLASLt's scratch memory is the
    /// first workspace_bytes() of it (the caller holds it for `stream`) instead of a lease of the
    /// plan's own.
    void run(const MatmulPointers& p, const Scalar& alpha, const Scalar& beta, core::StreamRef stream,
             int current_device, const WorkspaceArea* area = nullptr);

    /// The scratch bytes run() uses (0 when the selected algorithm needs none); never more than
    /// workspace_limit().
    [[nodiscard]] std::size_t workspace_bytes() const noexcept;
    /// MatmulOptions::workspace_limit of the plan: what any plan of the same options may use.
    [[nodiscard]] std::size_t workspace_limit() const noexcept { return workspace_limit_; }
    /// The stream workspace run() leases from (its memory resource's, on its device).
    [[nodiscard]] StreamWorkspace& workspace() const noexcept { return *workspace_; }

    [[nodiscard]] const MatmulProblem& problem() const noexcept { return problem_; }
    [[nodiscard]] const MatmulKey& key() const noexcept { return key_; }
    /// The call this plan was made for (points into problem()).
    [[nodiscard]] const MatmulCall& call() const noexcept { return call_; }
    [[nodiscard]] int device() const noexcept { return device_; }
    [[nodiscard]] const std::vector<AlgorithmInfo>& infos() const noexcept { return infos_; }
    [[nodiscard]] std::size_t selected() const noexcept { return selected_; }
    [[nodiscard]] const cublasLtMatmulAlgo_t& selected_algo() const noexcept { return results_[selected_].algo; }
    [[nodiscard]] const std::shared_ptr<core::MemoryResource>& memory_resource() const noexcept { return resource_; }

    void select(std::size_t index);
    /// Reorders the candidates (`order[i]` = old index of new candidate i) and selects the first.
    void reorder(const std::vector<std::size_t>& order);
    /// Records measured times (by current index).
    void set_time(std::size_t index, double ms) { infos_[index].time_ms = ms; }
    /// Makes `algo` (from a tuning file) the selected candidate if cuBLASLt accepts it for this
    /// problem; returns false (and changes nothing) otherwise.
    bool adopt(const cublasLtMatmulAlgo_t& algo);
    /// Appends the first candidate's kernel with each other split-K factor cuBLASLt accepts for
    /// this problem within the workspace limit (autotune times them); returns how many.
    std::size_t add_split_k_variants();

private:
    void release() noexcept;
    void create_descriptors();
    void query_heuristics(int max_algorithms);
    void set_pointer(cublasLtMatmulDescAttributes_t attr, int slot, const void* value);
    void set_pointer_attributes(const MatmulPointers& p);
    void run_lt(const MatmulPointers& p, const Scalar& alpha, const Scalar& beta, core::StreamRef stream,
                const WorkspaceArea* area);

    MatmulProblem problem_;
    MatmulCall call_;
    MatmulKey key_;
    int device_ = 0;
    std::size_t workspace_limit_ = 0;
    std::shared_ptr<core::MemoryResource> resource_;
    std::shared_ptr<StreamWorkspace> workspace_;

    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr, ld_ = nullptr;
    std::shared_ptr<const EpilogPassKernels> pass_;  // gpumath's elementwise pass over D, when it has one
    std::vector<cublasLtMatmulHeuristicResult_t> results_;
    std::vector<AlgorithmInfo> infos_;
    std::size_t selected_ = 0;

    // Pointer attributes (bias, aux, scales) as last set in desc_, guarded by mutex_.
    bool has_pointer_attributes_ = false;
    std::mutex mutex_;
    std::array<const void*, 8> current_{};
};

/// How many MatmulPlans exist in the process (tests check that replaced plans go).
[[nodiscard]] std::size_t live_matmul_plans() noexcept;

/// AlgorithmInfo of a heuristic result.
[[nodiscard]] AlgorithmInfo algorithm_info(const cublasLtMatmulHeuristicResult_t& r);
[[nodiscard]] std::string tile_name(unsigned id);
[[nodiscard]] std::string stages_name(unsigned id);
[[nodiscard]] std::string cluster_shape_name(unsigned id);

/// Allocates the outputs the caller did not pass (into `out`) and returns the pointers of a call.
[[nodiscard]] MatmulPointers prepare_pointers(const MatmulPlan& plan, const TensorView& a, const TensorView& b,
                                              const TensorView& d, const MatmulArgs& args, core::StreamRef stream,
                                              MatmulOutputs& out);
/// Allocates the outputs the caller did not pass, fills the pointers and runs the plan.
MatmulOutputs run_plan(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                       const MatmulArgs& args, core::StreamRef stream, int current_device,
                       const WorkspaceArea* area = nullptr);

/// Reads the current device (throws CudaError without one).
[[nodiscard]] int matmul_current_device();

/// The plan for `call` under `options` on `device` from the stateless matmul()'s cache, made from
/// analyze() on a miss (`created` then set). Shared with grouped_matmul(), whose per-group plans
/// are the plans matmul() makes for the same operands.
[[nodiscard]] std::shared_ptr<MatmulPlan> cached_plan(const MatmulCall& call, const MatmulOptions& options, int device,
                                                      const char* api, bool* created = nullptr);

}  // namespace gpumath::detail
