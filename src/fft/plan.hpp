// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: cuFFT plan handles and their creation from a geometry. A new way of planning
// (another cuFFT entry point, cuFFT Xt over several GPUs) plugs in at make_cufft_plan.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <cufftXt.h>

#include "fft/geometry.hpp"

#include "fft/callback.hpp"

namespace gpumath::detail {

/// An owned cuFFT handle (cufftCreate/cufftDestroy); move-only, empty when default-constructed.
class CufftPlan {
public:
    CufftPlan() noexcept = default;
    CufftPlan(CufftPlan&& other) noexcept : handle_(other.handle_), owned_(other.owned_) { other.owned_ = false; }
    CufftPlan& operator=(CufftPlan&& other) noexcept;
    CufftPlan(const CufftPlan&) = delete;
    CufftPlan& operator=(const CufftPlan&) = delete;
    ~CufftPlan() { reset(); }

    /// Destroys the handle held (if any), then creates a fresh one; the status of cufftCreate.
    [[nodiscard]] cufftResult create() noexcept;
    /// Destroys the handle held, if any.
    void reset() noexcept;
    [[nodiscard]] cufftHandle handle() const noexcept { return handle_; }
    [[nodiscard]] explicit operator bool() const noexcept { return owned_; }

private:
    cufftHandle handle_ = 0;
    bool owned_ = false;
};

/// What make_cufft_plan made: on success a planned handle, else the status of the call that
/// failed, which one (`failed_api`) and, with callbacks, every route tried (`tried`).
struct CufftPlanResult {
    CufftPlan plan;
    cufftResult status = CUFFT_SUCCESS;
    const char* failed_api = "cufftXtMakePlanMany";
    std::string tried;
    /// cuFFT's work area size for one execution.
    std::size_t work = 0;
    /// Planned with cuFFT's auto-allocation on (a fallback for fused callbacks).
    bool cufft_owns_work = false;
};

/// Plans `g` for `p` on fresh handles with auto-allocation off. Without callbacks one call to
/// cufftXtMakePlanMany; with (fused) callbacks, attached before planning, the routes of
/// docs/fft.md in order until one plans. Never throws for a cuFFT status: the caller decides
/// between retrying another geometry and reporting.
[[nodiscard]] CufftPlanResult make_cufft_plan(const FftProblem& p, const FftGeometry& g,
                                              std::span<const CufftCallback> callbacks);

/// One line describing a plan's geometry for logs and error messages.
[[nodiscard]] std::string fft_geometry_text(const FftProblem& p, const FftGeometry& g);

}  // namespace gpumath::detail
