// SPDX-License-Identifier: Apache-2.0
// The FFT plan: cuFFT plans over the advanced layout, work areas per stream, gather/scatter/scale
// passes, and callbacks fused into cuFFT or run as separate passes.
#include <gpumath/fft/fft.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <vector>

#include <cufftXt.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/core/linker.hpp>
#include <gpumath/detail/status.hpp>
#include <gpumath/error.hpp>

#include "detail/log.hpp"
#include "fft/internal.hpp"

namespace gpumath {
namespace detail {
namespace {

std::size_t align_up(std::size_t v) { return (v + 255) / 256 * 256; }

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

cufftXtCallbackType callback_type(FFTCallbackKind kind, DataType element) {
    const bool dbl = element == DataType::f64 || element == DataType::c64;
    const bool cpx = element == DataType::c32 || element == DataType::c64;
    if (kind == FFTCallbackKind::load)
        return cpx ? (dbl ? CUFFT_CB_LD_COMPLEX_DOUBLE : CUFFT_CB_LD_COMPLEX)
                   : (dbl ? CUFFT_CB_LD_REAL_DOUBLE : CUFFT_CB_LD_REAL);
    return cpx ? (dbl ? CUFFT_CB_ST_COMPLEX_DOUBLE : CUFFT_CB_ST_COMPLEX)
               : (dbl ? CUFFT_CB_ST_REAL_DOUBLE : CUFFT_CB_ST_REAL);
}

std::string geometry_text(const FftProblem& p, const FftGeometry& g) {
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

}  // namespace

/// One way of running the transform: a cuFFT plan plus the passes around it.
struct FftVariant {
    FftGeometry g;
    cufftHandle handle = 0;
    bool has_handle = false;
    std::size_t cufft_work = 0;
    std::size_t temp_in_offset = 0;
    std::size_t temp_out_offset = 0;
    std::size_t bytes = 0;  // workspace per execution
    bool fused_prolog = false;
    bool fused_epilog = false;
    bool fused_scale = false;  // the store inside cuFFT applies `baked_scale`
    double baked_scale = 1.0;
    core::Kernel gather;   // input -> temp (applies an unfused prolog)
    core::Kernel scatter;  // temp -> output (applies an unfused epilog and the scale)
    core::Kernel scale;    // in-place scale of the output
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
    bool owns_callback_kernels = false;  // gather/scatter compiled from user callbacks
    bool cufft_owns_work = false;        // planned with cuFFT's auto-allocation (a fallback)

    FftVariant() = default;
    FftVariant(const FftVariant&) = delete;
    FftVariant& operator=(const FftVariant&) = delete;
    FftVariant(FftVariant&&) = delete;
    FftVariant& operator=(FftVariant&&) = delete;
    ~FftVariant() {
        if (has_handle) (void)cufftDestroy(handle);
        // Unloading a module whose kernels may still run is unsafe; plans are rarely destroyed.
        if (owns_callback_kernels) (void)cudaDeviceSynchronize();
    }
    [[nodiscard]] bool fuses() const noexcept { return fused_prolog || fused_epilog || fused_scale; }
};

// Indices of FFTImpl::owned and FFTImpl::run.
constexpr std::size_t aligned = 0;
constexpr std::size_t odd_real = 1;

struct FFTImpl {
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
    std::array<std::vector<std::unique_ptr<FftVariant>>, 2> owned;
    std::array<std::array<std::atomic<FftVariant*>, 2>, 2> run{};
    std::shared_ptr<core::MemoryResource> resource;
    std::shared_ptr<StreamWorkspace> workspace;

    [[nodiscard]] DataType in_element() const { return fft_element(p.precision, p.in_complex); }
    [[nodiscard]] DataType out_element() const { return fft_element(p.precision, p.out_complex); }
    [[nodiscard]] bool half() const { return p.precision == DataType::f16 || p.precision == DataType::bf16; }
    [[nodiscard]] Direction primary() const { return p.kind == FFTKind::c2r ? Direction::inverse : Direction::forward; }

    void plan_locked();
    FftVariant* fused_for_locked(Direction d);
    std::unique_ptr<FftVariant> build(bool in_temp, bool out_temp, bool fused, Direction direction);
    FftVariant* variant_for(std::size_t alignment, Direction d);
    FftVariant* odd_real_variant_locked(Direction d);
    core::Kernel pass_kernel(bool input, const FFTCallback* callback);
    void run_variant(FftVariant& v, const void* in, void* out, Direction d, core::StreamRef stream, void* work);
    void execute(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream);
    void enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream);
    void enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream, int current);
    void plan_first_execution(core::StreamRef stream);
    double measure(FftVariant& v, const void* in, void* out, core::StreamRef stream, void* work);
};

core::Kernel FFTImpl::pass_kernel(bool input, const FFTCallback* callback) {
    const DataType element = input ? in_element() : out_element();
    const bool complex = input ? p.in_complex : p.out_complex;
    if (callback == nullptr) return builtin_pass_kernel(element, half() && complex, device, arch);
    const FFTCallbackKind kind = input ? FFTCallbackKind::load : FFTCallbackKind::store;
    FftPassSpec spec;
    spec.element = element;
    spec.callback = callback;
    spec.kind = kind;
    if (!callback->source.empty()) {
        const core::ObjectCode code =
            compile_with_context(fft_pass_source(spec), core::CodeType::cubin, arch,
                                 input ? "fft_prolog_pass" : "fft_epilog_pass", callback, kind, element);
        return core::Module(code).kernel(fft_pass_kernel_name, device);
    }
    // LTO-IR from the user: compile the pass against a declaration and link. The linkage of the
    // user's symbol is not known: try C++ first, then C.
    spec.declare_only = true;
    for (bool c_linkage : {false, true}) {
        spec.c_linkage = c_linkage;
        const core::ObjectCode pass = compile_with_context(fft_pass_source(spec), core::CodeType::ltoir, arch,
                                                           "fft_callback_pass", nullptr, kind, element);
        try {
            core::Linker linker(core::LinkerOptions{.name = "fft_callback_pass", .arch = arch});
            linker.add(pass).add(callback->code);
            return core::Module(linker.link(core::CodeType::cubin)).kernel(fft_pass_kernel_name, device);
        } catch (const LinkError&) {
            if (c_linkage) throw;
        }
    }
    throw_invalid("unreachable", api);
}

std::unique_ptr<FftVariant> FFTImpl::build(bool in_temp, bool out_temp, bool fused, Direction direction) {
    auto v = std::make_unique<FftVariant>();
    const double scale = fft_scale(p, direction);
    // The epilog sees normalized values. An epilog given as LTO-IR cannot have the scale baked in
    // front of it, so with a scale it runs in the scatter pass instead of inside cuFFT.
    if (fused && p.has_epilog && options.epilog.source.empty() && scale != 1.0) out_temp = true;
    // Separate callbacks run in the gather (prolog) and scatter (epilog) passes.
    if (!fused) {
        in_temp = in_temp || p.has_prolog;
        out_temp = out_temp || p.has_epilog;
    }
    v->g = make_fft_geometry(p, in_temp, out_temp, fused ? 1 : fft_max_loop_executions);
    const FftGeometry& g = v->g;
    if (fused) {
        v->fused_prolog = p.has_prolog && !g.in.temp;
        v->fused_epilog = p.has_epilog && !g.out.temp;
        v->fused_scale = !g.out.temp && scale != 1.0;  // into the user's epilog or a generated store
        if (v->fused_scale) v->baked_scale = scale;
    }

    // Callbacks for cuFFT, compiled once (LTO-IR); attached to each planning attempt's handle.
    struct Attached {
        FFTCallbackKind kind;
        core::ObjectCode code;
        std::string symbol;
        std::array<void*, 1>* info;
    };
    std::vector<Attached> attached;
    const bool same_source = p.has_prolog && p.has_epilog && !options.prolog.source.empty() &&
                             options.prolog.source == options.epilog.source;
    if (v->fused_prolog) {
        v->prolog_info[0] = options.prolog.user_info;
        if (!options.prolog.source.empty())
            attached.push_back({FFTCallbackKind::load,
                                compile_fused_callback(options.prolog, FFTCallbackKind::load, in_element(), 1.0,
                                                       same_source ? options.epilog.symbol : std::string(), arch),
                                fft_callback_entry_name(FFTCallbackKind::load), &v->prolog_info});
        else
            attached.push_back({FFTCallbackKind::load, options.prolog.code, options.prolog.symbol, &v->prolog_info});
    }
    if (v->fused_epilog || v->fused_scale) {
        v->epilog_info[0] = options.epilog.user_info;
        if (v->fused_epilog && options.epilog.source.empty()) {
            attached.push_back({FFTCallbackKind::store, options.epilog.code, options.epilog.symbol, &v->epilog_info});
        } else {
            core::ObjectCode code;
            if (v->fused_epilog)
                code = compile_fused_callback(options.epilog, FFTCallbackKind::store, out_element(), v->baked_scale,
                                              same_source ? options.prolog.symbol : std::string(), arch);
            else
                code = compile_with_context(fft_scale_callback_source(out_element(), v->baked_scale),
                                            core::CodeType::ltoir, arch, "fft_scale_store", nullptr,
                                            FFTCallbackKind::store, out_element());
            attached.push_back({FFTCallbackKind::store, std::move(code),
                                fft_callback_entry_name(FFTCallbackKind::store), &v->epilog_info});
        }
    }

    std::array<long long, 3> n{}, inembed{}, onembed{};
    for (int k = 0; k < g.rank; ++k) {
        n[std::size_t(k)] = g.n[std::size_t(k)];
        inembed[std::size_t(k)] = g.in.embed[std::size_t(k)];
        onembed[std::size_t(k)] = g.out.embed[std::size_t(k)];
    }
    const cudaDataType itype = cuda_type(p.precision, p.in_complex);
    const cudaDataType otype = cuda_type(p.precision, p.out_complex);
    const cudaDataType etype = cuda_type(p.precision, true);
    std::size_t work = 0;
    const auto t0 = std::chrono::steady_clock::now();
    // Densely packed operands use cuFFT's basic layout (null embeds), exactly what a plain
    // cufftPlanMany call describes, so cuFFT picks the same kernels.
    auto natural = [&](const FftSide& side, const FftOperand& op) {
        std::int64_t elements = 1;
        for (int k = 0; k < g.rank; ++k) {
            const std::int64_t e = op.shape[std::size_t(g.dims[std::size_t(k)])];
            if (k > 0 && side.embed[std::size_t(k)] != e) return false;
            elements *= e;
        }
        return side.stride == 1 && (g.batch == 1 || side.dist == elements);
    };
    const bool basic = natural(g.in, p.in) && natural(g.out, p.out);

    // One planning attempt on a fresh handle: cufftCreate, auto-allocation, callbacks, plan.
    // Plans without callbacks go through cufftXtMakePlanMany (every precision). With callbacks
    // (f32/f64 only) the first attempt is the sequence cuFFT's LTO samples use: the callbacks on a
    // fresh handle, then cufftMakePlanMany64 with a cufftType; see docs/fft.md.
    enum class Call : std::uint8_t { xt, many64 };
    struct Attempt {
        Call call;
        bool auto_allocation;
    };
    const char* failed_api = "cufftXtMakePlanMany";
    auto attempt = [&](Attempt a) -> cufftResult {
        if (v->has_handle) {
            (void)cufftDestroy(v->handle);
            v->has_handle = false;
        }
        failed_api = "cufftCreate";
        cufftResult r = cufftCreate(&v->handle);
        if (r != CUFFT_SUCCESS) return r;
        v->has_handle = true;
        if (!a.auto_allocation) {
            failed_api = "cufftSetAutoAllocation";
            if ((r = cufftSetAutoAllocation(v->handle, 0)) != CUFFT_SUCCESS) return r;
        }
        failed_api = "cufftXtSetJITCallback";
        for (const Attached& cb : attached) {
            const DataType element = cb.kind == FFTCallbackKind::load ? in_element() : out_element();
            const auto bytes = cb.code.bytes();
            r = cufftXtSetJITCallback(v->handle, cb.symbol.c_str(), bytes.data(), bytes.size(),
                                      callback_type(cb.kind, element), cb.info->data());
            if (r != CUFFT_SUCCESS) return r;
        }
        work = 0;
        if (a.call == Call::xt) {
            failed_api = "cufftXtMakePlanMany";
            return cufftXtMakePlanMany(v->handle, g.rank, n.data(), basic ? nullptr : inembed.data(), g.in.stride,
                                       g.in.dist, itype, basic ? nullptr : onembed.data(), g.out.stride, g.out.dist,
                                       otype, g.batch, &work, etype);
        }
        failed_api = "cufftMakePlanMany64";
        const bool dbl = p.precision == DataType::f64;
        const cufftType type = p.kind == FFTKind::c2c   ? (dbl ? CUFFT_Z2Z : CUFFT_C2C)
                               : p.kind == FFTKind::r2c ? (dbl ? CUFFT_D2Z : CUFFT_R2C)
                                                        : (dbl ? CUFFT_Z2D : CUFFT_C2R);
        return cufftMakePlanMany64(v->handle, g.rank, n.data(), basic ? nullptr : inembed.data(), g.in.stride,
                                   g.in.dist, basic ? nullptr : onembed.data(), g.out.stride, g.out.dist, type, g.batch,
                                   &work);
    };
    auto attempt_text = [](Attempt a) {
        return fmt::format("{}{}", a.call == Call::xt ? "cufftXtMakePlanMany" : "cufftMakePlanMany64",
                           a.auto_allocation ? " with cuFFT's own work area" : "");
    };
    cufftResult made = CUFFT_SUCCESS;
    std::string tried;
    if (attached.empty()) {
        made = attempt({Call::xt, false});
    } else {
        // cuFFT 12.0 refused LTO callbacks planned through cufftXtMakePlanMany with auto-allocation
        // off (CUFFT_INVALID_SIZE) where the plain sequence planned; try the plain one first and
        // keep going down the list when cuFFT refuses.
        constexpr std::array<Attempt, 3> ladder{Attempt{Call::many64, false}, Attempt{Call::many64, true},
                                                Attempt{Call::xt, false}};
        for (std::size_t i = 0; i < ladder.size(); ++i) {
            made = attempt(ladder[i]);
            if (made == CUFFT_SUCCESS) {
                v->cufft_owns_work = ladder[i].auto_allocation;
                if (i > 0)
                    log(LogLevel::info, "fft: fused callbacks planned through {} after {}", attempt_text(ladder[i]),
                        tried);
                break;
            }
            tried += fmt::format("{}{}: {} refused with status {}", tried.empty() ? "" : "; ", attempt_text(ladder[i]),
                                 failed_api, int(made));
        }
    }
    if ((made == CUFFT_INVALID_VALUE || made == CUFFT_NOT_SUPPORTED || made == CUFFT_NOT_IMPLEMENTED) &&
        (!g.in.temp || !g.out.temp) && !v->fuses()) {
        // cuFFT has layout rules beyond the advanced layout's arithmetic (e.g. for half precision);
        // contiguous temps always satisfy them. Not for a fused plan: through temps it would fuse
        // nothing; its refusal goes to the caller (automatic mode then runs separate passes).
        log(LogLevel::info, "fft: cuFFT refused {} (status {}); retrying through contiguous temps", geometry_text(p, g),
            int(made));
        return build(true, true, fused, direction);
    }
    check_cufft(made, failed_api, [&] {
        return fmt::format("planning {}{}{}", geometry_text(p, g), v->fuses() ? " with fused callbacks" : "",
                           tried.empty() ? std::string() : " (tried " + tried + ")");
    });
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    v->cufft_work = work;
    log(LogLevel::debug, "fft: planned {}{} in {:.1f} ms, work area {} bytes{}", geometry_text(p, g),
        v->fuses() ? " with fused callbacks" : "", ms, work,
        v->cufft_owns_work ? " (cuFFT also allocated its own; gpumath binds its per-stream area)" : "");
    if (g.in.temp || g.out.temp || g.executions() > 1)
        log(LogLevel::info, "fft: {} input {} -> output {}: cuFFT cannot address this directly; {}{}{}",
            to_string(p.kind), gpumath::to_string(p.in_layout), gpumath::to_string(p.out_layout),
            g.in.temp ? "the input is gathered into a contiguous temp; " : "",
            g.out.temp ? "the output is scattered from a contiguous temp; " : "",
            g.executions() > 1 ? fmt::format("{} cuFFT executions per transform", g.executions()) : "");

    // Work area layout: cuFFT's, then the temps. cuFFT's region is never empty: with a temp at the
    // very address bound as the work area, cuFFT's execution fails (CUFFT_EXEC_FAILED).
    const std::size_t in_bytes = fft_element_bytes(p.precision, p.in_complex);
    const std::size_t out_bytes = fft_element_bytes(p.precision, p.out_complex);
    std::size_t offset = align_up(std::max<std::size_t>(work, 1));
    if (g.in.temp) {
        v->temp_in_offset = offset;
        offset += align_up(std::size_t(g.in.temp_elements) * in_bytes);
    }
    if (g.out.temp) {
        v->temp_out_offset = offset;
        offset += align_up(std::size_t(g.out.temp_elements) * out_bytes);
    }
    // Always a real work area to bind, also when cuFFT needs none.
    v->bytes = std::max<std::size_t>(offset, 256);

    // Passes.
    if (g.in.temp) {
        v->gather_pass = make_fft_pass(p.in, p.in.strides, g.in.strides);
        const bool user = p.has_prolog && !v->fused_prolog;
        v->gather = pass_kernel(true, user ? &options.prolog : nullptr);
        v->owns_callback_kernels = v->owns_callback_kernels || user;
    }
    if (g.out.temp) {
        v->scatter_pass = make_fft_pass(p.out, g.out.strides, p.out.strides);
        const bool user = p.has_epilog && !v->fused_epilog;
        v->scatter = pass_kernel(false, user ? &options.epilog : nullptr);
        v->owns_callback_kernels = v->owns_callback_kernels || user;
    } else if (!v->fused_scale &&
               (fft_scale(p, Direction::forward) != 1.0 || fft_scale(p, Direction::inverse) != 1.0)) {
        v->scale_pass = make_fft_pass(p.out, p.out.strides, p.out.strides);
        v->scale = pass_kernel(false, nullptr);
    }
    return v;
}

void FFTImpl::run_variant(FftVariant& v, const void* in, void* out, Direction d, core::StreamRef stream, void* work) {
    const FftGeometry& g = v.g;
    const double scale = v.fused_scale ? 1.0 : fft_scale(p, d);
    const bool single = p.precision != DataType::f64;
    // The transform is linear: with an input pass (gather, prolog) and no output pass, the scale
    // multiplies the gathered input instead of costing a separate pass over the output. Not for
    // f16/bf16, whose scaled inputs would lose precision.
    const bool scale_first = scale != 1.0 && g.in.temp && !g.out.temp && !half();
    auto* w = static_cast<char*>(work);
    const void* exec_in = in;
    void* exec_out = out;
    if (g.in.temp) {
        exec_in = w + v.temp_in_offset;
        launch_pass(v.gather, stream, in, w + v.temp_in_offset, v.gather_pass, scale_first ? scale : 1.0, single,
                    options.prolog.user_info);
    }
    if (g.out.temp) exec_out = w + v.temp_out_offset;
    {
        std::lock_guard lock(v.mutex);
        if (!v.bound || v.bound_stream != stream.handle()) {
            check_cufft(cufftSetStream(v.handle, stream.handle()), "cufftSetStream");
            v.bound_stream = stream.handle();
        }
        if (!v.bound || v.bound_work != work) {
            check_cufft(cufftSetWorkArea(v.handle, work), "cufftSetWorkArea");
            v.bound_work = work;
        }
        v.bound = true;
        const int direction = d == Direction::forward ? CUFFT_FORWARD : CUFFT_INVERSE;
        const auto in_bytes = std::int64_t(fft_element_bytes(p.precision, p.in_complex));
        const auto out_bytes = std::int64_t(fft_element_bytes(p.precision, p.out_complex));
        auto exec = [&](std::int64_t in_offset, std::int64_t out_offset) {
            auto* i = const_cast<char*>(static_cast<const char*>(exec_in)) + in_offset * in_bytes;
            auto* o = static_cast<char*>(exec_out) + out_offset * out_bytes;
            check_cufft(cufftXtExec(v.handle, i, o, direction), "cufftXtExec",
                        [&] { return fmt::format("executing {}", geometry_text(p, g)); });
        };
        if (g.loop_rank == 0) {
            exec(0, 0);
        } else {
            std::array<std::int64_t, max_rank> idx{};
            const std::int64_t count = g.executions();
            for (std::int64_t e = 0; e < count; ++e) {
                std::int64_t io = 0, oo = 0;
                for (int k = 0; k < g.loop_rank; ++k) {
                    io += idx[std::size_t(k)] * g.loop_in_stride[std::size_t(k)];
                    oo += idx[std::size_t(k)] * g.loop_out_stride[std::size_t(k)];
                }
                exec(io, oo);
                for (int k = g.loop_rank - 1; k >= 0; --k) {
                    if (++idx[std::size_t(k)] < g.loop_extent[std::size_t(k)]) break;
                    idx[std::size_t(k)] = 0;
                }
            }
        }
    }
    if (g.out.temp)
        launch_pass(v.scatter, stream, exec_out, out, v.scatter_pass, scale, single, options.epilog.user_info);
    else if (scale != 1.0 && !scale_first)
        launch_pass(v.scale, stream, out, out, v.scale_pass, scale, single, nullptr);
}

double FFTImpl::measure(FftVariant& v, const void* in, void* out, core::StreamRef stream, void* work) {
    const Direction d = primary();
    core::Event start(core::EventOptions{.timing = true});
    core::Event stop(core::EventOptions{.timing = true});
    run_variant(v, in, out, d, stream, work);  // warm-up
    constexpr int runs = 5;
    start.record(stream);
    for (int i = 0; i < runs; ++i) run_variant(v, in, out, d, stream, work);
    stop.record(stream);
    stop.synchronize();
    return double(core::Event::elapsed_ms(start, stop)) / runs;
}

void FFTImpl::plan_locked() {
    device = current_device();
    const core::Device dev(device);
    if (p.precision == DataType::bf16 && dev.compute_capability().value() < 80)
        throw_not_supported(fmt::format("input: bf16 FFTs need compute capability 8.0 or newer (a cuFFT rule); {} is "
                                        "{}.{}",
                                        dev.name(), dev.compute_capability().major, dev.compute_capability().minor),
                            api);
    arch = dev.arch();
    // The areas of a caller's resource are shared per (device, resource); the work areas of the
    // default pool are the device's.
    resource = options.memory_resource ? options.memory_resource : core::DeviceMemoryResource::default_resource(device);
    workspace = stream_workspace(device, options.memory_resource);

    const bool callbacks = p.has_prolog || p.has_epilog;
    const CallbackMode asked = options.callback_mode;
    const Direction first = primary();
    if (!callbacks) {
        if (asked != CallbackMode::fused) {
            // Normalization is a separate pass (fused into a generated store only in fused mode).
            owned[aligned].push_back(build(false, false, false, first));
            run[aligned][0] = owned[aligned].back().get();
            run[aligned][1] = owned[aligned].back().get();
            return;
        }
        fuse = true;
        run[aligned][std::size_t(first)] = fused_for_locked(first);
        return;
    }

    if (asked == CallbackMode::separate) {
        owned[aligned].push_back(build(false, false, false, first));
        run[aligned][0] = owned[aligned].back().get();
        run[aligned][1] = owned[aligned].back().get();
        mode = CallbackMode::separate;
        return;
    }
    if (asked == CallbackMode::fused) {
        try {
            run[aligned][std::size_t(first)] = fused_for_locked(first);
        } catch (const CufftError& e) {
            throw CufftError(fmt::format("{}\ncuFFT refused the plan with fused callbacks; CallbackMode::separate (or "
                                         "automatic) runs the same callbacks in a separate pass",
                                         e.what()),
                             e.status(), e.api());
        }
        mode = CallbackMode::fused;
        fuse = true;
        return;
    }

    // Automatic: plan both, time both once on scratch data, keep the faster.
    std::unique_ptr<FftVariant> separate = build(false, false, false, first);
    std::unique_ptr<FftVariant> fused;
    try {
        fused = build(false, false, true, first);
    } catch (const CufftError& e) {
        log(LogLevel::info, "fft: cuFFT refused fused callbacks ({}); the callbacks run as separate passes", e.what());
    } catch (const LinkError& e) {
        log(LogLevel::info, "fft: fused callbacks failed to link ({}); the callbacks run as separate passes", e.what());
    }
    if (fused && fused->fuses()) {
        core::Stream stream;
        const std::size_t in_span = std::size_t(std::max<std::int64_t>(p.in_layout.span_bytes(), 1));
        const std::size_t out_span = std::size_t(std::max<std::int64_t>(p.out_layout.span_bytes(), 1));
        core::Buffer in(in_span, stream, resource), out(out_span, stream, resource);
        core::Buffer work(std::max(separate->bytes, fused->bytes), stream, resource);
        check(cudaMemsetAsync(in.data(), 0, in_span, stream.handle()), "cudaMemsetAsync");
        double ts = measure(*separate, in.data(), out.data(), stream, work.data());
        double tf = measure(*fused, in.data(), out.data(), stream, work.data());
        ts = std::min(ts, measure(*separate, in.data(), out.data(), stream, work.data()));
        tf = std::min(tf, measure(*fused, in.data(), out.data(), stream, work.data()));
        stream.synchronize();
        in.reset();
        out.reset();
        work.reset();
        stream.synchronize();
        log(LogLevel::info, "fft: callbacks fused {:.4f} ms, separate {:.4f} ms per transform: using {}", tf, ts,
            tf < ts ? "fused" : "separate");
        if (tf < ts) {
            run[aligned][std::size_t(first)] = fused.get();
            owned[aligned].push_back(std::move(fused));
            mode = CallbackMode::fused;
            fuse = true;
            return;
        }
    }
    run[aligned][0] = separate.get();
    run[aligned][1] = separate.get();
    owned[aligned].push_back(std::move(separate));
    mode = CallbackMode::separate;
}

FftVariant* FFTImpl::fused_for_locked(Direction d) {
    // A fused variant bakes one scale into its store; reuse one that fits this direction.
    const double scale = fft_scale(p, d);
    // Only fused variants are aligned ones when this runs (a separate one serves both directions).
    for (const auto& v : owned[aligned]) {
        // Without a baked scale, a variant applies one itself only before its scatter pass (or
        // when it has no epilog to see unscaled values, in the scale pass).
        const bool fits = v->fused_scale ? v->baked_scale == scale : (scale == 1.0 || v->g.out.temp);
        if (fits) return v.get();
    }
    owned[aligned].push_back(build(false, false, true, d));
    return owned[aligned].back().get();
}

FftVariant* FFTImpl::variant_for(std::size_t alignment, Direction d) {
    std::atomic<FftVariant*>& slot = run[alignment][std::size_t(d)];
    if (FftVariant* v = slot.load(std::memory_order_acquire)) return v;
    std::lock_guard lock(plan_mutex);
    if (FftVariant* v = slot.load(std::memory_order_relaxed)) return v;
    FftVariant* v = alignment == aligned ? fused_for_locked(d) : odd_real_variant_locked(d);
    slot.store(v, std::memory_order_release);
    return v;
}

FftVariant* FFTImpl::odd_real_variant_locked(Direction d) {
    const bool r2c = p.kind == FFTKind::r2c;
    log(LogLevel::info,
        "fft: the real {} of this {} is not aligned like a complex element, which cuFFT requires; it "
        "goes through a contiguous temp",
        r2c ? "input" : "output", to_string(p.kind));
    std::unique_ptr<FftVariant> built;
    if (fuse && options.callback_mode != CallbackMode::fused) {
        // Chosen by automatic mode for aligned operands; cuFFT may refuse the new geometry.
        try {
            built = build(r2c, !r2c, true, d);
        } catch (const CufftError& e) {
            log(LogLevel::info, "fft: cuFFT refused fused callbacks for the copied layout ({}); separate passes",
                e.what());
        } catch (const LinkError& e) {
            log(LogLevel::info, "fft: fused callbacks failed to link for the copied layout ({}); separate passes",
                e.what());
        }
        if (!built) built = build(r2c, !r2c, false, d);
    } else {
        built = build(r2c, !r2c, fuse, d);
    }
    owned[odd_real].push_back(std::move(built));
    return owned[odd_real].back().get();
}

void FFTImpl::execute(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream) {
    check_fft_operands(p, in, &out, d, api);
    enqueue(in, out, d, stream);
}

void FFTImpl::plan_first_execution(core::StreamRef stream) {
    // cuFFT allocates and copies synchronously while planning (and automatic callback mode times
    // both ways): neither may happen inside a graph capture.
    reject_capture(stream, api,
                   "an FFT plans on its first execution, which cannot be captured: call plan() (or execute "
                   "once) before the capture");
    std::lock_guard lock(plan_mutex);
    if (!planned.load(std::memory_order_relaxed)) {
        plan_locked();
        planned.store(true, std::memory_order_release);
    }
}

void FFTImpl::enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream) {
    if (p.empty) return;
    if (!planned.load(std::memory_order_acquire)) [[unlikely]]
        plan_first_execution(stream);
    int current = 0;
    check(cudaGetDevice(&current), "cudaGetDevice");
    enqueue(in, out, d, stream, current);
}

void FFTImpl::enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream, int current) {
    if (p.empty) return;
    if (!planned.load(std::memory_order_acquire)) [[unlikely]]
        plan_first_execution(stream);
    std::optional<DeviceGuard> guard;
    if (current != device) [[unlikely]]
        guard.emplace(device);
    FftVariant* v = variant_for(aligned, d);
    if (p.kind != FFTKind::c2c) {
        const bool r2c = p.kind == FFTKind::r2c;
        const auto real = reinterpret_cast<std::uintptr_t>(r2c ? in.data() : out.data());
        if (real % (2 * fft_element_bytes(p.precision, false)) != 0 && !(r2c ? v->g.in.temp : v->g.out.temp))
            [[unlikely]]
            v = variant_for(odd_real, d);
    }
    StreamWorkspace::Lease lease = workspace->acquire(v->bytes, stream);
    run_variant(*v, in.data(), out.data(), d, stream, lease.data);
}

}  // namespace detail

FFT::FFT(const TensorLayout& input, const FFTOptions& options) : impl_(std::make_unique<detail::FFTImpl>()) {
    impl_->p = detail::make_fft_problem(input, nullptr, options, FFTKind::automatic, impl_->api);
    impl_->options = options;
}

FFT::FFT(const TensorLayout& input, const TensorLayout& output, const FFTOptions& options)
    : impl_(std::make_unique<detail::FFTImpl>()) {
    impl_->p = detail::make_fft_problem(input, &output, options, FFTKind::automatic, impl_->api);
    impl_->options = options;
}

FFT::FFT(std::unique_ptr<detail::FFTImpl> impl) noexcept : impl_(std::move(impl)) {}

namespace detail {
FFT FFTAccess::make(const FftProblem& problem, const FFTOptions& options, const char* api) {
    auto impl = std::make_unique<FFTImpl>();
    impl->api = api;
    impl->p = problem;
    impl->options = options;
    return FFT(std::move(impl));
}

void FFTAccess::enqueue(FFT& plan, const TensorView& in, const TensorView& out, Direction direction,
                        core::StreamRef stream, int device) {
    plan.impl_->enqueue(in, out, direction, stream, device);
}
}  // namespace detail

FFT::~FFT() = default;
FFT::FFT(FFT&&) noexcept = default;
FFT& FFT::operator=(FFT&&) noexcept = default;

detail::FFTImpl& FFT::impl(const char* api) const {
    if (!impl_) [[unlikely]]
        detail::throw_invalid("this FFT was moved from; assign a constructed FFT to it before use", api);
    return *impl_;
}

void FFT::plan() {
    detail::FFTImpl& m = impl("gpumath::FFT::plan");
    if (m.planned.load(std::memory_order_acquire)) return;
    std::lock_guard lock(m.plan_mutex);
    if (m.planned.load(std::memory_order_relaxed)) return;
    if (!m.p.empty) m.plan_locked();
    m.planned.store(true, std::memory_order_release);
}

bool FFT::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void FFT::execute(const TensorView& in, const TensorView& out, Direction direction, core::StreamRef stream) {
    impl("gpumath::FFT::execute").execute(in, out, direction, stream);
}

Tensor FFT::execute(const TensorView& in, Direction direction, core::StreamRef stream) {
    detail::FFTImpl& m = impl("gpumath::FFT::execute");
    const detail::FftProblem& p = m.p;
    if (p.inplace) detail::throw_invalid("out: this plan is in-place; call execute(x, x, direction, stream)", m.api);
    if (!p.out_layout.is_contiguous())
        detail::throw_invalid(fmt::format("out: the plan writes the strided layout {}; pass an output view to "
                                          "execute(in, out, direction, stream)",
                                          gpumath::to_string(p.out_layout)),
                              m.api);
    detail::check_fft_operands(p, in, nullptr, direction, m.api);  // before allocating
    detail::reject_capture(stream, m.api,
                           "gpumath allocates no results during a capture: pass out (execute(in, out, direction, "
                           "stream))");
    Tensor out = Tensor::empty(p.out_layout, stream, m.options.memory_resource);
    m.enqueue(in, out.view(), direction, stream);
    return out;
}

namespace {
// What a moved-from FFT reports.
const TensorLayout& empty_layout() noexcept {
    static const TensorLayout layout;
    return layout;
}
const FFTOptions& default_options() noexcept {
    static const FFTOptions options;
    return options;
}
}  // namespace

const TensorLayout& FFT::input_layout() const noexcept { return impl_ ? impl_->p.in_layout : empty_layout(); }
const TensorLayout& FFT::output_layout() const noexcept { return impl_ ? impl_->p.out_layout : empty_layout(); }
FFTKind FFT::kind() const noexcept {
    return impl_ ? impl_->p.kind : FFTKind::automatic;
}
const FFTOptions& FFT::options() const noexcept { return impl_ ? impl_->options : default_options(); }
// planned() is false for a moved-from FFT, so the accessors below never reach a null impl_.
CallbackMode FFT::callback_mode() const noexcept { return planned() ? impl_->mode : CallbackMode::automatic; }

std::size_t FFT::workspace_size() const noexcept {
    if (!planned()) return 0;
    std::size_t b = 0;
    for (const auto& v : impl_->owned[detail::aligned]) b = std::max(b, v->bytes);
    return b;
}

bool FFT::copies() const noexcept {
    if (!planned()) return false;
    const auto& run = impl_->run[detail::aligned];
    const detail::FftVariant* v = run[0].load() ? run[0].load() : run[1].load();
    return v != nullptr && (v->g.in.temp || v->g.out.temp);
}

std::int64_t FFT::executions_per_transform() const noexcept {
    if (!planned()) return 0;
    const auto& run = impl_->run[detail::aligned];
    const detail::FftVariant* v = run[0].load() ? run[0].load() : run[1].load();
    return v != nullptr ? v->g.executions() : 0;
}

}  // namespace gpumath
