// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: the state behind gpumath::FFT. fft.cpp decides which variant runs (callback
// mode, direction, operand alignment); variant.cpp builds and runs one variant.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/stream.hpp>
#include "fft/geometry.hpp"
#include "core/stream_workspace.hpp"
#include <gpumath/fft/fft.hpp>
#include <gpumath/fft/options.hpp>

#include "fft/plan.hpp"

namespace gpumath::detail {

/// Builds FFT objects for the free functions (whose kind is fixed and whose messages name them)
/// and runs them on operands the caller has checked.
struct FFTAccess {
    /// A plan of `problem`, made by make_fft_problem from the same options.
    [[nodiscard]] static FFT make(const FftProblem& problem, const FFTOptions& options, const char* api);
    /// `plan.plan()` on `device`, the current device (read by the caller).
    static void plan(FFT& plan, int device);
    /// The validated problem `plan` was made for.
    [[nodiscard]] static const FftProblem& problem(const FFT& plan) noexcept;
    /// `plan.execute(in, out, direction, stream)` without its operand checks: the caller ran
    /// check_fft_operands against an equal problem and read the current device (`device`).
    static void enqueue(FFT& plan, const TensorView& in, const TensorView& out, Direction direction,
                        core::StreamRef stream, int device);
};

/// One way of running the transform: a cuFFT plan plus the passes around it.
struct FftVariant : std::enable_shared_from_this<FftVariant> {
    FftGeometry g;
    CufftPlan plan;
    std::size_t cufft_work = 0;
    std::size_t temp_in_offset = 0;
    std::size_t temp_out_offset = 0;
    std::size_t bytes = 0;  // workspace per execution
    FusedCallbacks fused;   // what runs inside cuFFT; fused.scale: the store applies fused.baked_scale
    core::Kernel gather;    // input -> temp (applies an unfused prolog)
    core::Kernel scatter;   // temp -> output (applies an unfused epilog and the scale)
    core::Kernel scale;     // in-place scale of the output
    FftPass gather_pass{};
    FftPass scatter_pass{};
    FftPass scale_pass{};
    std::array<void*, 1> prolog_info{};
    std::array<void*, 1> epilog_info{};
    // Enqueueing on a cuFFT plan is serialized: stream and work area are plan state.
    std::mutex mutex;
    cudaStream_t bound_stream = nullptr;
    void* bound_work = nullptr;
    bool bound = false;
    bool cufft_owns_work = false;  // planned with cuFFT's auto-allocation (a fallback)

    FftVariant() = default;
    FftVariant(const FftVariant&) = delete;
    FftVariant& operator=(const FftVariant&) = delete;
    FftVariant(FftVariant&&) = delete;
    FftVariant& operator=(FftVariant&&) = delete;
    // The cuFFT plan goes first. The pass kernels stay loaded for the life of the process (see
    // pass_kernel); ~FFTImpl hands variants to gpumath's release thread.
    ~FftVariant() { plan.reset(); }
    [[nodiscard]] bool fuses() const noexcept { return fused.prolog || fused.epilog || fused.scale; }
};

// Indices of FFTImpl::owned and FFTImpl::run.
inline constexpr std::size_t aligned = 0;
inline constexpr std::size_t odd_real = 1;

struct FFTImpl {
    FFTImpl() = default;
    FFTImpl(const FFTImpl&) = delete;
    FFTImpl& operator=(const FFTImpl&) = delete;
    FFTImpl(FFTImpl&&) = delete;
    FFTImpl& operator=(FFTImpl&&) = delete;
    // Hands the variants to gpumath's release thread (see the .cpp).
    ~FFTImpl();

    FftProblem p;
    FFTOptions options;
    const char* api = "gpumath::FFT";

    std::mutex plan_mutex;
    std::atomic<bool> planned{false};
    int device = -1;
    std::string arch;
    CallbackMode mode = CallbackMode::automatic;  // resolved: fused or separate with callbacks
    bool fuse = false;                            // the aligned variants are fused ones
    // Variants by operand alignment: `aligned`, or `odd_real` for r2c/c2r whose real operand starts
    // at an odd real offset (those variants copy the real side); run[] by alignment and Direction.
    std::array<std::vector<std::shared_ptr<FftVariant>>, 2> owned;
    std::array<std::array<std::atomic<FftVariant*>, 2>, 2> run{};
    // The largest `bytes` of owned[aligned], kept by keep_locked: what FFT::workspace_size() reports
    // without taking plan_mutex.
    std::atomic<std::size_t> aligned_workspace{0};
    std::shared_ptr<core::MemoryResource> resource;
    std::shared_ptr<StreamWorkspace> workspace;

    [[nodiscard]] DataType in_element() const { return fft_element(p.precision, p.in_complex); }
    [[nodiscard]] DataType out_element() const { return fft_element(p.precision, p.out_complex); }
    [[nodiscard]] bool half() const { return p.precision == DataType::f16 || p.precision == DataType::bf16; }
    [[nodiscard]] Direction primary() const { return p.kind == FFTKind::c2r ? Direction::inverse : Direction::forward; }

    // fft.cpp: planning (on `current`, the current device) and the choice of variant.
    void plan(int current);
    void plan_locked(int current);
    void plan_first_execution(core::StreamRef stream, int current);
    // Adds `v` to owned[alignment] (under plan_mutex) and returns it.
    FftVariant* keep_locked(std::size_t alignment, std::unique_ptr<FftVariant> v);
    // Automatic mode's fused variant, or null (logged) where only separate passes can run it.
    std::unique_ptr<FftVariant> try_build_fused(bool in_temp, bool out_temp, Direction d, const char* what);
    FftVariant* fused_for_locked(Direction d);
    FftVariant* variant_for(std::size_t alignment, Direction d, core::StreamRef stream);
    FftVariant* odd_real_variant_locked(Direction d);
    void execute(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream);
    void enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream);
    void enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream, int current);
    // variant.cpp: one variant.
    std::unique_ptr<FftVariant> build(bool in_temp, bool out_temp, bool fused, Direction direction);
    void layout_work_area(FftVariant& v) const;
    void make_passes(FftVariant& v);
    core::Kernel pass_kernel(bool input, const FFTCallback* callback);
    void run_variant(FftVariant& v, const void* in, void* out, Direction d, core::StreamRef stream, void* work);
    double measure(FftVariant& v, const void* in, void* out, core::StreamRef stream, void* work);
};

}  // namespace gpumath::detail
