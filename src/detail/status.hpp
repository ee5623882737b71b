// SPDX-License-Identifier: Apache-2.0
// Private: the one place native statuses become exceptions. Not included by users directly.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace gpumath::detail {

// Cold paths: build the message (with fmt, in src/) and throw. `context` says what gpumath was doing.
// throw_cuda also clears the runtime's last-error state (cudaGetLastError), so an error gpumath has
// reported as an exception is not reported a second time by the caller's next error check; sticky
// errors (a faulted context) stay, as the runtime keeps returning them.
/// "api: NAME (code)" or "api: NAME (code): context": every library error's message.
[[nodiscard]] std::string status_message(std::string_view api, std::string_view name, int code,
                                         std::string_view context);

[[noreturn]] void throw_cuda(cudaError_t status, const char* api, std::string_view context);
[[noreturn]] void throw_cu(CUresult status, const char* api, std::string_view context);
/// Defined by gpumath::matmul, which links cuBLASLt and takes the status's name from it.
[[noreturn]] void throw_cublas(int status, const char* api, std::string_view context);
[[noreturn]] void throw_cufft(int status, const char* api, std::string_view context);
[[noreturn]] void throw_nccl(int status, const char* api, std::string_view context);
[[noreturn]] void throw_nvrtc(int status, const char* api, std::string_view context, std::string log);
[[noreturn]] void throw_nvjitlink(int status, const char* api, std::string_view context, std::string log);
[[noreturn]] void throw_invalid(const std::string& message, const char* api = "");
[[noreturn]] void throw_not_supported(const std::string& message, const char* api = "");
/// InvalidArgument for a method called on a moved-from `type` ("Matmul", "FFT", "Program", ...).
[[noreturn]] void throw_moved_from(const char* type, const char* api);

/// What a "no usable driver or device" status means on this machine, with the next step and what
/// works without a GPU: no driver at all (`driver_loaded` false: libcuda.so.1 could not be
/// loaded), a driver too old for the runtime, a driver that sees no device (naming
/// `visible_devices`, CUDA_VISIBLE_DEVICES, when set), or another reason. The versions are
/// cudaDriverGetVersion's and cudaRuntimeGetVersion's.
[[nodiscard]] std::string no_device_cause(cudaError_t status, bool driver_loaded, int driver_version,
                                          int runtime_version, const char* visible_devices);

/// True when a runtime status means "there is no usable driver or device".
[[nodiscard]] constexpr bool is_no_device(cudaError_t s) noexcept {
    return s == cudaErrorNoDevice || s == cudaErrorInsufficientDriver || s == cudaErrorStubLibrary ||
           s == cudaErrorDevicesUnavailable || s == cudaErrorSystemDriverMismatch ||
           s == cudaErrorCompatNotSupportedOnDevice || s == cudaErrorSystemNotReady;
}

template <class Context>
[[nodiscard]] std::string context_text(Context&& context) {
    if constexpr (std::is_invocable_v<Context>) return std::string(context());
    else return std::string(std::string_view(context));
}

/// Throws CudaError unless `status` is cudaSuccess. `context` is a string or a callable returning
/// one; a callable is only invoked on failure.
template <class Context = const char*>
inline void check(cudaError_t status, const char* api, Context&& context = "") {
    if (status != cudaSuccess) [[unlikely]]
        throw_cuda(status, api, context_text(static_cast<Context&&>(context)));
}

/// Throws CudaError unless a driver call returned CUDA_SUCCESS.
template <class Context = const char*>
inline void check(CUresult status, const char* api, Context&& context = "") {
    if (status != CUDA_SUCCESS) [[unlikely]]
        throw_cu(status, api, context_text(static_cast<Context&&>(context)));
}

/// Throws CublasError unless `status` (a cublasStatus_t) is CUBLAS_STATUS_SUCCESS (0).
template <class Context = const char*>
inline void check_cublas(int status, const char* api, Context&& context = "") {
    if (status != 0) [[unlikely]]
        throw_cublas(status, api, context_text(static_cast<Context&&>(context)));
}

/// Throws CufftError unless `status` (a cufftResult) is CUFFT_SUCCESS (0).
template <class Context = const char*>
inline void check_cufft(int status, const char* api, Context&& context = "") {
    if (status != 0) [[unlikely]]
        throw_cufft(status, api, context_text(static_cast<Context&&>(context)));
}

/// Throws CompileError (with `log`) unless `status` (an nvrtcResult) is NVRTC_SUCCESS (0). `log`,
/// like `context`, may be a callable that is only invoked on failure.
template <class Context = const char*, class Log = const char*>
inline void check_nvrtc(int status, const char* api, Context&& context = "", Log&& log = "") {
    if (status != 0) [[unlikely]]
        throw_nvrtc(status, api, context_text(static_cast<Context&&>(context)), context_text(static_cast<Log&&>(log)));
}

/// Throws LinkError (with `log`) unless `status` (an nvJitLinkResult) is NVJITLINK_SUCCESS (0).
/// `log`, like `context`, may be a callable that is only invoked on failure.
template <class Context = const char*, class Log = const char*>
inline void check_nvjitlink(int status, const char* api, Context&& context = "", Log&& log = "") {
    if (status != 0) [[unlikely]]
        throw_nvjitlink(status, api, context_text(static_cast<Context&&>(context)),
                        context_text(static_cast<Log&&>(log)));
}

/// Calls `f` and swallows any exception: for destructors and other noexcept release paths.
template <class F>
void release_noexcept(F&& f) noexcept {
    try {
        f();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a release failure must not escape a destructor
    }
}

}  // namespace gpumath::detail
