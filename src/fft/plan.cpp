// SPDX-License-Identifier: Apache-2.0
// cuFFT plan creation: the advanced layout of a geometry, the planning routes, the handle's life.
#include "fft/plan.hpp"

#include <array>
#include <cstdint>

#include <fmt/format.h>

#include "detail/log.hpp"

namespace gpumath::detail {
namespace {

cudaDataType cuda_type(DataType precision, bool complex) {
    switch (precision) {
        case DataType::f32:
            return complex ? CUDA_C_32F : CUDA_R_32F;
        case DataType::f64:
            return complex ? CUDA_C_64F : CUDA_R_64F;
        case DataType::f16:
            return complex ? CUDA_C_16F : CUDA_R_16F;
        case DataType::bf16:
            return complex ? CUDA_C_16BF : CUDA_R_16BF;
        default:
            return CUDA_C_32F;
    }
}

// Densely packed operands use cuFFT's basic layout (null embeds), exactly what a plain
// cufftPlanMany call describes, so cuFFT picks the same kernels.
bool natural(const FftGeometry& g, const FftSide& side, const FftOperand& op) {
    std::int64_t elements = 1;
    for (int k = 0; k < g.rank; ++k) {
        const std::int64_t e = op.shape[std::size_t(g.dims[std::size_t(k)])];
        if (k > 0 && side.embed[std::size_t(k)] != e) return false;
        elements *= e;
    }
    return side.stride == 1 && (g.batch == 1 || side.dist == elements);
}

// Plans without callbacks go through cufftXtMakePlanMany (every precision). With callbacks
// (f32/f64 only) the first route is the sequence cuFFT's LTO samples use: the callbacks on a
// fresh handle, then cufftMakePlanMany64 with a cufftType; see docs/fft.md.
enum class Call : std::uint8_t { xt, many64 };
struct Route {
    Call call;
    bool auto_allocation;
};

std::string route_text(Route r) {
    return fmt::format("{}{}", r.call == Call::xt ? "cufftXtMakePlanMany" : "cufftMakePlanMany64",
                       r.auto_allocation ? " with cuFFT's own work area" : "");
}

// The geometry in the arguments cuFFT's planning calls take.
struct PlanArgs {
    std::array<long long, 3> n{}, inembed{}, onembed{};
    bool basic = false;
};

PlanArgs plan_args(const FftProblem& p, const FftGeometry& g) {
    PlanArgs a;
    for (int k = 0; k < g.rank; ++k) {
        a.n[std::size_t(k)] = g.n[std::size_t(k)];
        a.inembed[std::size_t(k)] = g.in.embed[std::size_t(k)];
        a.onembed[std::size_t(k)] = g.out.embed[std::size_t(k)];
    }
    a.basic = natural(g, g.in, p.in) && natural(g, g.out, p.out);
    return a;
}

// One planning attempt on a fresh handle: cufftCreate, auto-allocation, callbacks, plan.
cufftResult attempt(CufftPlanResult& r, Route route, const FftProblem& p, const FftGeometry& g, PlanArgs& a,
                    std::span<const CufftCallback> callbacks) {
    r.failed_api = "cufftCreate";
    cufftResult s = r.plan.create();
    if (s != CUFFT_SUCCESS) return s;
    if (!route.auto_allocation) {
        r.failed_api = "cufftSetAutoAllocation";
        if ((s = cufftSetAutoAllocation(r.plan.handle(), 0)) != CUFFT_SUCCESS) return s;
    }
    r.failed_api = "cufftXtSetJITCallback";
    if ((s = attach_cufft_callbacks(r.plan.handle(), callbacks)) != CUFFT_SUCCESS) return s;
    r.work = 0;
    long long* inembed = a.basic ? nullptr : a.inembed.data();
    long long* onembed = a.basic ? nullptr : a.onembed.data();
    if (route.call == Call::xt) {
        r.failed_api = "cufftXtMakePlanMany";
        return cufftXtMakePlanMany(r.plan.handle(), g.rank, a.n.data(), inembed, g.in.stride, g.in.dist,
                                   cuda_type(p.precision, p.in_complex), onembed, g.out.stride, g.out.dist,
                                   cuda_type(p.precision, p.out_complex), g.batch, &r.work,
                                   cuda_type(p.precision, true));
    }
    r.failed_api = "cufftMakePlanMany64";
    return cufftMakePlanMany64(r.plan.handle(), g.rank, a.n.data(), inembed, g.in.stride, g.in.dist, onembed,
                               g.out.stride, g.out.dist, cufft_type(p), g.batch, &r.work);
}

}  // namespace

cufftType cufft_type(const FftProblem& p) noexcept {
    const bool dbl = p.precision == DataType::f64;
    return p.kind == FFTKind::c2c   ? (dbl ? CUFFT_Z2Z : CUFFT_C2C)
           : p.kind == FFTKind::r2c ? (dbl ? CUFFT_D2Z : CUFFT_R2C)
                                    : (dbl ? CUFFT_Z2D : CUFFT_C2R);
}

CufftPlan& CufftPlan::operator=(CufftPlan&& other) noexcept {
    if (this != &other) {
        reset();
        handle_ = other.handle_;
        owned_ = other.owned_;
        other.owned_ = false;
    }
    return *this;
}

cufftResult CufftPlan::create() noexcept {
    reset();
    const cufftResult r = cufftCreate(&handle_);
    owned_ = r == CUFFT_SUCCESS;
    return r;
}

void CufftPlan::reset() noexcept {
    if (owned_) (void)cufftDestroy(handle_);
    owned_ = false;
}

CufftPlanResult make_cufft_plan(const FftProblem& p, const FftGeometry& g, std::span<const CufftCallback> callbacks) {
    CufftPlanResult r;
    PlanArgs args = plan_args(p, g);
    if (callbacks.empty()) {
        r.status = attempt(r, {Call::xt, false}, p, g, args, callbacks);
        return r;
    }
    // cuFFT 12.0 refused LTO callbacks planned through cufftXtMakePlanMany with auto-allocation
    // off (CUFFT_INVALID_SIZE) where the plain sequence planned; try the plain one first and
    // keep going down the list when cuFFT refuses.
    constexpr std::array<Route, 3> ladder{Route{Call::many64, false}, Route{Call::many64, true},
                                          Route{Call::xt, false}};
    for (std::size_t i = 0; i < ladder.size(); ++i) {
        r.status = attempt(r, ladder[i], p, g, args, callbacks);
        if (r.status == CUFFT_SUCCESS) {
            r.cufft_owns_work = ladder[i].auto_allocation;
            if (i > 0)
                log(LogLevel::info, "fft: fused callbacks planned through {} after {}", route_text(ladder[i]), r.tried);
            break;
        }
        r.tried += fmt::format("{}{}: {} refused with status {}", r.tried.empty() ? "" : "; ", route_text(ladder[i]),
                               r.failed_api, int(r.status));
    }
    return r;
}

CufftXtPlanResult make_cufft_xt_plan(const FftProblem& p, std::span<const int> devices) {
    CufftXtPlanResult r;
    if ((r.status = r.plan.create()) != CUFFT_SUCCESS) return r;
    std::vector<int> gpus(devices.begin(), devices.end());
    r.work.assign(gpus.size(), 0);
    if (gpus.size() > 1) {
        r.failed_api = "cufftXtSetGPUs";
        if ((r.status = cufftXtSetGPUs(r.plan.handle(), int(gpus.size()), gpus.data())) != CUFFT_SUCCESS) return r;
    } else {
        // The work area comes per stream from gpumath's workspaces.
        r.failed_api = "cufftSetAutoAllocation";
        if ((r.status = cufftSetAutoAllocation(r.plan.handle(), 0)) != CUFFT_SUCCESS) return r;
    }
    const auto n = [&](int i) { return int(p.n[std::size_t(i)]); };
    const cufftType type = cufft_type(p);
    switch (p.naxes) {
        case 1:
            r.failed_api = "cufftMakePlan1d";
            r.status = cufftMakePlan1d(r.plan.handle(), n(0), type, 1, r.work.data());
            break;
        case 2:
            r.failed_api = "cufftMakePlan2d";
            r.status = cufftMakePlan2d(r.plan.handle(), n(0), n(1), type, r.work.data());
            break;
        default:
            r.failed_api = "cufftMakePlan3d";
            r.status = cufftMakePlan3d(r.plan.handle(), n(0), n(1), n(2), type, r.work.data());
            break;
    }
    return r;
}

std::string fft_geometry_text(const FftProblem& p, const FftGeometry& g) {
    std::string n, ie, oe;
    for (int k = 0; k < g.rank; ++k) {
        const char* sep = k ? ", " : "";
        n += fmt::format("{}{}", sep, g.n[std::size_t(k)]);
        ie += fmt::format("{}{}", sep, g.in.embed[std::size_t(k)]);
        oe += fmt::format("{}{}", sep, g.out.embed[std::size_t(k)]);
    }
    return fmt::format(
        "{} {} n=({}) batch={} in: embed=({}) stride={} dist={}{} out: embed=({}) stride={} dist={}{} "
        "executions={}",
        gpumath::to_string(p.precision), to_string(p.kind), n, g.batch, ie, g.in.stride, g.in.dist,
        g.in.temp ? " (temp)" : "", oe, g.out.stride, g.out.dist, g.out.temp ? " (temp)" : "", g.executions());
}

}  // namespace gpumath::detail
