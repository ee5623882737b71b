// SPDX-License-Identifier: Apache-2.0
// Builds exception messages; runs only on failure.
#include "core/driver_api.hpp"
#include "detail/status.hpp"
#include <gpumath/detail/integral_range.hpp>
#include <gpumath/error.hpp>

#include <cstdlib>
#include <string>

#include <dlfcn.h>

#include <cufft.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <fmt/format.h>

namespace gpumath::detail {

std::string status_message(std::string_view api, std::string_view name, int code, std::string_view context) {
    if (context.empty()) return fmt::format("{}: {} ({})", api, name, code);
    return fmt::format("{}: {} ({}): {}", api, name, code, context);
}

namespace {

// cuFFT and nvJitLink offer no name function: the names are their headers' enumerators, spelled by
// the preprocessor (a renamed or removed one fails the build).
#define GPUMATH_STATUS_NAME(e) \
    case e:                    \
        return #e;

const char* cufft_status_name(int s) noexcept {
    switch (static_cast<cufftResult>(s)) {
        GPUMATH_STATUS_NAME(CUFFT_SUCCESS)
        GPUMATH_STATUS_NAME(CUFFT_INVALID_PLAN)
        GPUMATH_STATUS_NAME(CUFFT_ALLOC_FAILED)
        GPUMATH_STATUS_NAME(CUFFT_INVALID_TYPE)
        GPUMATH_STATUS_NAME(CUFFT_INVALID_VALUE)
        GPUMATH_STATUS_NAME(CUFFT_INTERNAL_ERROR)
        GPUMATH_STATUS_NAME(CUFFT_EXEC_FAILED)
        GPUMATH_STATUS_NAME(CUFFT_SETUP_FAILED)
        GPUMATH_STATUS_NAME(CUFFT_INVALID_SIZE)
        GPUMATH_STATUS_NAME(CUFFT_UNALIGNED_DATA)
        GPUMATH_STATUS_NAME(CUFFT_INVALID_DEVICE)
        GPUMATH_STATUS_NAME(CUFFT_NO_WORKSPACE)
        GPUMATH_STATUS_NAME(CUFFT_NOT_IMPLEMENTED)
        GPUMATH_STATUS_NAME(CUFFT_NOT_SUPPORTED)
        GPUMATH_STATUS_NAME(CUFFT_MISSING_DEPENDENCY)
        GPUMATH_STATUS_NAME(CUFFT_NVRTC_FAILURE)
        GPUMATH_STATUS_NAME(CUFFT_NVJITLINK_FAILURE)
        GPUMATH_STATUS_NAME(CUFFT_NVSHMEM_FAILURE)
    }
    return "CUFFT_UNKNOWN_ERROR";
}

const char* nvjitlink_status_name(int s) noexcept {
    switch (static_cast<nvJitLinkResult>(s)) {
        GPUMATH_STATUS_NAME(NVJITLINK_SUCCESS)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_UNRECOGNIZED_OPTION)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_MISSING_ARCH)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_INVALID_INPUT)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_PTX_COMPILE)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_NVVM_COMPILE)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_INTERNAL)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_THREADPOOL)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_UNRECOGNIZED_INPUT)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_FINALIZE)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_NULL_INPUT)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_INCORRECT_INPUT_TYPE)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_ARCH_MISMATCH)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_OUTDATED_LIBRARY)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_MISSING_FATBIN)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_UNRECOGNIZED_ARCH)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_UNSUPPORTED_ARCH)
        GPUMATH_STATUS_NAME(NVJITLINK_ERROR_LTO_NOT_ENABLED)
    }
    return "NVJITLINK_ERROR_UNKNOWN";
}

#undef GPUMATH_STATUS_NAME

const char* nccl_status_name(int status) {
    switch (status) {
        case 0:
            return "ncclSuccess";
        case 1:
            return "ncclUnhandledCudaError";
        case 2:
            return "ncclSystemError";
        case 3:
            return "ncclInternalError";
        case 4:
            return "ncclInvalidArgument";
        case 5:
            return "ncclInvalidUsage";
        case 6:
            return "ncclRemoteError";
        case 7:
            return "ncclInProgress";
        default:
            return "ncclUnknownError";
    }
}

// A tool's error (NVRTC, nvJitLink): the message ends with the log, which the exception also keeps.
template <class E>
[[noreturn]] void throw_with_log(int status, const char* name, const char* api, std::string_view context,
                                 std::string log) {
    std::string message = status_message(api, name, status, context);
    if (!log.empty()) message += fmt::format("\n{}", log);
    throw E(message, status, api, std::move(log));
}

// "12.8" of a CUDA version number (12080).
std::string cuda_version_text(int version) { return fmt::format("{}.{}", version / 1000, (version % 1000) / 10); }

constexpr std::string_view still_works =
    "without one, gpumath still validates calls (InvalidArgument, NotSupported), compiles with NVRTC "
    "and links with nvJitLink";

}  // namespace

std::string no_device_cause(cudaError_t status, bool driver_loaded, int driver_version, int runtime_version,
                            const char* visible_devices) {
    if (!driver_loaded)
        return fmt::format(
            "no NVIDIA driver was found (libcuda.so.1 could not be loaded), so this machine has no usable GPU; "
            "install the NVIDIA driver to run GPU work ({})",
            still_works);
    if (status == cudaErrorInsufficientDriver || status == cudaErrorCompatNotSupportedOnDevice ||
        status == cudaErrorSystemDriverMismatch)
        return fmt::format(
            "the NVIDIA driver is too old: it supports CUDA {} and gpumath was built with the CUDA {} runtime; "
            "update the driver to one for CUDA {} or newer ({})",
            cuda_version_text(driver_version), cuda_version_text(runtime_version), cuda_version_text(runtime_version),
            still_works);
    if (status == cudaErrorNoDevice || status == cudaErrorDevicesUnavailable) {
        std::string hint = "check that nvidia-smi lists a GPU";
        if (visible_devices != nullptr)
            hint = fmt::format("CUDA_VISIBLE_DEVICES is \"{}\", which hides the others; {}", visible_devices, hint);
        return fmt::format("the NVIDIA driver (CUDA {}) found no GPU it can use: {} ({})",
                           cuda_version_text(driver_version), hint, still_works);
    }
    return fmt::format("the NVIDIA driver (CUDA {}) is installed but not usable: {} ({})",
                       cuda_version_text(driver_version), cudaGetErrorString(status), still_works);
}

namespace {

// The cause of a missing driver or device, found once: the answer does not change while the
// process runs.
const std::string& no_device_cause_of(cudaError_t status) {
    static const std::string cause = [status] {
        // The runtime loads the driver itself; whether it could is whether libcuda is loaded now.
        void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        int driver_version = 0, runtime_version = 0;
        (void)cudaDriverGetVersion(&driver_version);
        (void)cudaRuntimeGetVersion(&runtime_version);
        (void)cudaGetLastError();
        if (driver != nullptr) (void)dlclose(driver);  // a reference NOLOAD took
        return no_device_cause(status, driver != nullptr, driver_version, runtime_version,
                               std::getenv("CUDA_VISIBLE_DEVICES"));
    }();
    return cause;
}

}  // namespace

void throw_cuda(cudaError_t status, const char* api, std::string_view context) {
    // The status is now the exception's; leave no copy behind for cudaGetLastError to report again.
    (void)cudaGetLastError();
    std::string message = status_message(api, cudaGetErrorName(status), int(status), context);
    if (is_no_device(status))
        message = fmt::format("no CUDA driver/device: {}. ({}: {})", no_device_cause_of(status), message,
                              cudaGetErrorString(status));
    throw CudaError(message, int(status), api);
}

void throw_cu(CUresult status, const char* api, std::string_view context) {
    const char* name = "CUDA_ERROR_UNKNOWN";
    if (const DriverApi* d = driver_if_available(); d != nullptr && d->cuGetErrorName != nullptr) {
        const char* n = nullptr;
        if (d->cuGetErrorName(status, &n) == CUDA_SUCCESS && n != nullptr) name = n;
    }
    std::string message = status_message(api, name, int(status), context);
    if (status == CUDA_ERROR_NO_DEVICE || status == CUDA_ERROR_NOT_INITIALIZED || status == CUDA_ERROR_STUB_LIBRARY) {
        message = "no CUDA driver/device: " + message;
    }
    throw CudaError(message, int(status), api);
}

void throw_cufft(int status, const char* api, std::string_view context) {
    throw CufftError(status_message(api, cufft_status_name(status), status, context), status, api);
}

void throw_nccl(int status, const char* api, std::string_view context) {
    throw NcclError(status_message(api, nccl_status_name(status), status, context), status, api);
}

void throw_nvrtc(int status, const char* api, std::string_view context, std::string log) {
    // NVRTC names its statuses itself ("NVRTC_ERROR_COMPILATION"; "NVRTC_ERROR unknown" past its last).
    throw_with_log<CompileError>(status, nvrtcGetErrorString(static_cast<nvrtcResult>(status)), api, context,
                                 std::move(log));
}

void throw_nvjitlink(int status, const char* api, std::string_view context, std::string log) {
    throw_with_log<LinkError>(status, nvjitlink_status_name(status), api, context, std::move(log));
}

void throw_invalid(const std::string& message, const char* api) {
    if (api != nullptr && *api != '\0') throw InvalidArgument(fmt::format("{}: {}", api, message), api);
    throw InvalidArgument(message);
}

void throw_not_supported(const std::string& message, const char* api) {
    if (api != nullptr && *api != '\0') throw NotSupported(fmt::format("{}: {}", api, message), api);
    throw NotSupported(message);
}

void throw_not_int64(const char* field, std::size_t index, unsigned long long value, const char* api) {
    throw_invalid(fmt::format("{}[{}]: {} does not fit in a signed 64-bit integer", field, index, value), api);
}

void throw_moved_from(const char* type, const char* api) {
    throw_invalid(fmt::format("this {0} was moved from (moved-from {0}); use the {0} it was moved to, or assign a new "
                              "{0} to this one before use",
                              type),
                  api);
}

}  // namespace gpumath::detail
