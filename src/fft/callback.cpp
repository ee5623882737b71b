// SPDX-License-Identifier: Apache-2.0
// Compiling FFT callbacks (to LTO-IR for cuFFT, to kernels for separate passes) and attaching fused
// callbacks to cuFFT handles.
#include <gpumath/fft/callback.hpp>

#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fft/sources.hpp"
#include "detail/identifier.hpp"
#include "detail/status.hpp"
#include <gpumath/error.hpp>

#include "detail/enum_check.hpp"
#include "fft/callback.hpp"

namespace gpumath {
namespace {

void check_kind(FFTCallbackKind kind, const char* api) {
    detail::check_enum(kind, int(FFTCallbackKind::store) + 1, "an FFTCallbackKind", "kind", api);
}

}  // namespace

std::string fft_callback_signature(FFTCallbackKind kind, DataType element, const std::string& name) {
    check_kind(kind, "gpumath::fft_callback_signature");
    detail::check_qualified_name(name, "name", "gpumath::fft_callback_signature");
    const char* type = detail::fft_callback_value_type(element, "gpumath::fft_callback_signature");
    if (kind == FFTCallbackKind::load)
        return fmt::format("__device__ {} {}(void* data_in, unsigned long long offset, void* user_info, void* shared)",
                           type, name);
    return fmt::format(
        "__device__ void {}(void* data_out, unsigned long long offset, {} element, void* user_info, "
        "void* shared)",
        name, type);
}

core::ObjectCode compile_fft_callback(const FFTCallback& callback, FFTCallbackKind kind, DataType element,
                                      std::string arch) {
    constexpr const char* api = "gpumath::compile_fft_callback";
    check_kind(kind, api);
    if (!callback.source.empty() && !callback.code.empty())
        detail::throw_invalid("callback: give source or code, not both; only source is compiled", api);
    if (callback.source.empty())
        detail::throw_invalid(
            callback.code.empty() ? std::string("callback: empty (no source); give the CUDA C++ source of a __device__ "
                                                "function")
            : callback.code.type() == core::CodeType::ltoir
                ? std::string("callback: given as LTO-IR code, which needs no compiling; pass it to FFTOptions")
                : fmt::format("callback: given as {} code; an FFT callback is CUDA C++ source (compiled here) or "
                              "LTO-IR (CodeType::ltoir, passed to FFTOptions as is)",
                              core::to_string(callback.code.type())),
            api);
    if (callback.symbol.empty())
        detail::throw_invalid("callback.symbol: empty; name the __device__ function the source defines", api);
    detail::check_no_nul(callback.source, "callback.source", api);
    detail::check_qualified_name(callback.symbol, "callback.symbol", api);
    (void)detail::fft_callback_value_type(element, api);
    return detail::compile_fused_callback(callback, kind, element, 1.0, {}, std::move(arch));
}

namespace detail {

core::ObjectCode compile_fused_callback(const FFTCallback& callback, FFTCallbackKind kind, DataType element,
                                        double scale, const std::string& rename, std::string arch) {
    return compile_with_context(fft_fused_callback_program(callback, kind, element, scale, rename),
                                core::CodeType::ltoir, std::move(arch), &callback, kind, element);
}

void throw_callback_compile_error(const CompileError& e, const FFTCallback& callback, FFTCallbackKind kind,
                                  DataType element) {
    // Say which callback failed and what it must look like; keep NVRTC's status and log.
    throw CompileError(fmt::format("FFT {} callback \"{}\" does not compile; it must define {}\n{}",
                                   kind == FFTCallbackKind::load ? "prolog (load)" : "epilog (store)", callback.symbol,
                                   fft_callback_signature(kind, element, callback.symbol), e.what()),
                       e.status(), e.api(), e.log());
}

core::ObjectCode compile_with_context(FftProgram program, core::CodeType target, std::string arch,
                                      const FFTCallback* callback, FFTCallbackKind kind, DataType element) {
    program.options.arch = std::move(arch);
    try {
        return core::Program(std::string(program.source), std::move(program.options)).compile(target);
    } catch (const CompileError& e) {
        if (callback == nullptr) throw;
        throw_callback_compile_error(e, *callback, kind, element);
    }
}

namespace {

cufftXtCallbackType callback_type(FFTCallbackKind kind, DataType element) {
    const bool dbl = element == DataType::f64 || element == DataType::c64;
    const bool cpx = element == DataType::c32 || element == DataType::c64;
    if (kind == FFTCallbackKind::load)
        return cpx ? (dbl ? CUFFT_CB_LD_COMPLEX_DOUBLE : CUFFT_CB_LD_COMPLEX)
                   : (dbl ? CUFFT_CB_LD_REAL_DOUBLE : CUFFT_CB_LD_REAL);
    return cpx ? (dbl ? CUFFT_CB_ST_COMPLEX_DOUBLE : CUFFT_CB_ST_COMPLEX)
               : (dbl ? CUFFT_CB_ST_REAL_DOUBLE : CUFFT_CB_ST_REAL);
}

}  // namespace

std::vector<CufftCallback> compile_cufft_callbacks(const FftProblem& p, const FFTOptions& options,
                                                   const FusedCallbacks& fused, const std::string& arch,
                                                   std::array<void*, 1>& prolog_info,
                                                   std::array<void*, 1>& epilog_info) {
    const DataType in_element = fft_element(p.precision, p.in_complex);
    const DataType out_element = fft_element(p.precision, p.out_complex);
    std::vector<CufftCallback> callbacks;
    const bool same_source = fft_callbacks_share_source(options);
    if (fused.prolog) {
        prolog_info[0] = options.prolog.user_info;
        if (!options.prolog.source.empty())
            callbacks.push_back({FFTCallbackKind::load, in_element,
                                 compile_fused_callback(options.prolog, FFTCallbackKind::load, in_element, 1.0,
                                                        same_source ? options.epilog.symbol : std::string(), arch),
                                 fft_callback_entry_name(FFTCallbackKind::load), &prolog_info});
        else
            callbacks.push_back(
                {FFTCallbackKind::load, in_element, options.prolog.code, options.prolog.symbol, &prolog_info});
    }
    if (fused.epilog || fused.scale) {
        epilog_info[0] = options.epilog.user_info;
        if (fused.epilog && options.epilog.source.empty()) {
            callbacks.push_back(
                {FFTCallbackKind::store, out_element, options.epilog.code, options.epilog.symbol, &epilog_info});
        } else {
            core::ObjectCode code;
            if (fused.epilog)
                code = compile_fused_callback(options.epilog, FFTCallbackKind::store, out_element, fused.baked_scale,
                                              same_source ? options.prolog.symbol : std::string(), arch);
            else
                code = compile_with_context(fft_scale_callback_program(out_element, fused.baked_scale),
                                            core::CodeType::ltoir, arch, nullptr, FFTCallbackKind::store, out_element);
            callbacks.push_back({FFTCallbackKind::store, out_element, std::move(code),
                                 fft_callback_entry_name(FFTCallbackKind::store), &epilog_info});
        }
    }
    return callbacks;
}

cufftResult attach_cufft_callbacks(cufftHandle handle, std::span<const CufftCallback> callbacks) {
    for (const CufftCallback& cb : callbacks) {
        const auto bytes = cb.code.bytes();
        const cufftResult r = cufftXtSetJITCallback(handle, cb.symbol.c_str(), bytes.data(), bytes.size(),
                                                    callback_type(cb.kind, cb.element), cb.info->data());
        if (r != CUFFT_SUCCESS) return r;
    }
    return CUFFT_SUCCESS;
}

}  // namespace detail
}  // namespace gpumath
