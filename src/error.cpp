// SPDX-License-Identifier: Apache-2.0
// Builds exception messages; runs only on failure.
#include "core/driver_api.hpp"
#include "detail/status.hpp"
#include <gpumath/detail/integral_range.hpp>
#include <gpumath/error.hpp>

#include <cstdlib>
#include <string>

#include <dlfcn.h>

#include <cublasLt.h>
#include <fmt/format.h>

namespace gpumath::detail {
namespace {

std::string compose(std::string_view api, std::string_view name, int code, std::string_view context) {
    if (context.empty()) return fmt::format("{}: {} ({})", api, name, code);
    return fmt::format("{}: {} ({}): {}", api, name, code, context);
}

// cuBLAS's names, from its header's enumerators: the core library reports cuBLASLt statuses
// without linking cuBLASLt (only gpumath::matmul does).
const char* cublas_status_name(int s) noexcept {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS:
            return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED:
            return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED:
            return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE:
            return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH:
            return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR:
            return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED:
            return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR:
            return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED:
            return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR:
            return "CUBLAS_STATUS_LICENSE_ERROR";
        default:
            return "CUBLAS_STATUS_UNKNOWN";
    }
}

const char* cufft_status_name(int s) noexcept {
    switch (s) {
        case 0:
            return "CUFFT_SUCCESS";
        case 1:
            return "CUFFT_INVALID_PLAN";
        case 2:
            return "CUFFT_ALLOC_FAILED";
        case 3:
            return "CUFFT_INVALID_TYPE";
        case 4:
            return "CUFFT_INVALID_VALUE";
        case 5:
            return "CUFFT_INTERNAL_ERROR";
        case 6:
            return "CUFFT_EXEC_FAILED";
        case 7:
            return "CUFFT_SETUP_FAILED";
        case 8:
            return "CUFFT_INVALID_SIZE";
        case 9:
            return "CUFFT_UNALIGNED_DATA";
        case 11:
            return "CUFFT_INVALID_DEVICE";
        case 13:
            return "CUFFT_NO_WORKSPACE";
        case 14:
            return "CUFFT_NOT_IMPLEMENTED";
        case 16:
            return "CUFFT_NOT_SUPPORTED";
        case 17:
            return "CUFFT_MISSING_DEPENDENCY";
        case 18:
            return "CUFFT_NVRTC_FAILURE";
        case 19:
            return "CUFFT_NVJITLINK_FAILURE";
        case 20:
            return "CUFFT_NVSHMEM_FAILURE";
        default:
            return "CUFFT_UNKNOWN_ERROR";
    }
}

const char* nvjitlink_status_name(int s) noexcept {
    switch (s) {
        case 0:
            return "NVJITLINK_SUCCESS";
        case 1:
            return "NVJITLINK_ERROR_UNRECOGNIZED_OPTION";
        case 2:
            return "NVJITLINK_ERROR_MISSING_ARCH";
        case 3:
            return "NVJITLINK_ERROR_INVALID_INPUT";
        case 4:
            return "NVJITLINK_ERROR_PTX_COMPILE";
        case 5:
            return "NVJITLINK_ERROR_NVVM_COMPILE";
        case 6:
            return "NVJITLINK_ERROR_INTERNAL";
        case 7:
            return "NVJITLINK_ERROR_THREADPOOL";
        case 8:
            return "NVJITLINK_ERROR_UNRECOGNIZED_INPUT";
        case 9:
            return "NVJITLINK_ERROR_FINALIZE";
        case 10:
            return "NVJITLINK_ERROR_NULL_INPUT";
        case 11:
            return "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS";
        case 12:
            return "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE";
        case 13:
            return "NVJITLINK_ERROR_ARCH_MISMATCH";
        case 14:
            return "NVJITLINK_ERROR_OUTDATED_LIBRARY";
        case 15:
            return "NVJITLINK_ERROR_MISSING_FATBIN";
        case 16:
            return "NVJITLINK_ERROR_UNRECOGNIZED_ARCH";
        case 17:
            return "NVJITLINK_ERROR_UNSUPPORTED_ARCH";
        case 18:
            return "NVJITLINK_ERROR_LTO_NOT_ENABLED";
        default:
            return "NVJITLINK_ERROR_UNKNOWN";
    }
}

const char* nvrtc_status_name(int s) noexcept {
    switch (s) {
        case 0:
            return "NVRTC_SUCCESS";
        case 1:
            return "NVRTC_ERROR_OUT_OF_MEMORY";
        case 2:
            return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
        case 3:
            return "NVRTC_ERROR_INVALID_INPUT";
        case 4:
            return "NVRTC_ERROR_INVALID_PROGRAM";
        case 5:
            return "NVRTC_ERROR_INVALID_OPTION";
        case 6:
            return "NVRTC_ERROR_COMPILATION";
        case 7:
            return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
        case 8:
            return "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
        case 9:
            return "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
        case 10:
            return "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
        case 11:
            return "NVRTC_ERROR_INTERNAL_ERROR";
        case 12:
            return "NVRTC_ERROR_TIME_FILE_WRITE_FAILED";
        default:
            return "NVRTC_ERROR_UNKNOWN";
    }
}

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
    std::string message = compose(api, name, status, context);
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
    std::string message = compose(api, cudaGetErrorName(status), int(status), context);
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
    std::string message = compose(api, name, int(status), context);
    if (status == CUDA_ERROR_NO_DEVICE || status == CUDA_ERROR_NOT_INITIALIZED || status == CUDA_ERROR_STUB_LIBRARY) {
        message = "no CUDA driver/device: " + message;
    }
    throw CudaError(message, int(status), api);
}

void throw_cublas(int status, const char* api, std::string_view context) {
    throw CublasError(compose(api, cublas_status_name(status), status, context), status, api);
}

void throw_cufft(int status, const char* api, std::string_view context) {
    throw CufftError(compose(api, cufft_status_name(status), status, context), status, api);
}

void throw_nccl(int status, const char* api, std::string_view context) {
    throw NcclError(compose(api, nccl_status_name(status), status, context), status, api);
}

void throw_nvrtc(int status, const char* api, std::string_view context, std::string log) {
    throw_with_log<CompileError>(status, nvrtc_status_name(status), api, context, std::move(log));
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
