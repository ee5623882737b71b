// SPDX-License-Identifier: Apache-2.0
// Private to src/fft and src/dist: cuFFT plan handles and their creation, from a geometry
// (make_cufft_plan, the one-GPU FFT) or for a whole array over a list of GPUs (make_cufft_xt_plan,
// the multi-GPU FFT). Another way of planning plugs in here, beside them.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

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

/// What make_cufft_xt_plan made: on success a planned handle and cuFFT's work area size on each
/// device (in the order given), else the status of the call that failed and which (`failed_api`).
struct CufftXtPlanResult {
    CufftPlan plan;
    cufftResult status = CUFFT_SUCCESS;
    const char* failed_api = "cufftCreate";
    std::vector<std::size_t> work;
};

/// Plans the transform of `p` over the whole array (every axis transformed in order, no batch, the
/// lengths within int: p.naxes is the rank) for `devices`. Several devices: cufftXtSetGPUs, then
/// cufftMakePlan1d/2d/3d, cuFFT allocating each device's work area. One: an ordinary plan with
/// auto-allocation off, made on the current device (the caller sets it to devices[0]). Never throws
/// for a cuFFT status: the caller reports it.
[[nodiscard]] CufftXtPlanResult make_cufft_xt_plan(const FftProblem& p, std::span<const int> devices);

/// The cufftType of `p`'s transform (C2C, R2C, C2R and their double-precision forms); f32 or f64.
[[nodiscard]] cufftType cufft_type(const FftProblem& p) noexcept;

/// One line describing a plan's geometry for logs and error messages.
[[nodiscard]] std::string fft_geometry_text(const FftProblem& p, const FftGeometry& g);

}  // namespace gpumath::detail
