// SPDX-License-Identifier: Apache-2.0
/// @file
/// The one exception family: Error and the classes derived from it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace gpumath {

/// Base of every exception gpumath throws.
///
/// `status()` is the native status code of the library call that failed (0 for errors gpumath
/// detects itself), `api()` names the function that failed (a CUDA entry point such as
/// "cublasLtMatmul", or the gpumath function that rejected its arguments).
class Error : public std::runtime_error {
public:
    /// An error whose `what()` is `message`, with the native `status` of the failed call (0 when
    /// gpumath itself rejected it) and `api`, the function that failed.
    Error(const std::string& message, int status, std::string api)
        : std::runtime_error(message), status_(status), api_(std::move(api)) {}

    /// The native status code (cudaError_t, CUresult, cublasStatus_t, cufftResult, nvrtcResult,
    /// nvJitLinkResult), or 0 when gpumath itself rejected the call.
    [[nodiscard]] int status() const noexcept { return status_; }
    /// The function that failed.
    [[nodiscard]] const std::string& api() const noexcept { return api_; }

private:
    int status_;
    std::string api_;
};

/// A caller passed a value that is not allowed: a bad shape, dtype, stride, option or argument.
/// Thrown before any GPU work; the message names the operand, the value given and what is allowed.
class InvalidArgument : public Error {
public:
    /// `message` names the operand, the value given and what is allowed; `api` the function that
    /// rejected it (may be empty). `status()` is 0.
    explicit InvalidArgument(const std::string& message, std::string api = {}) : Error(message, 0, std::move(api)) {}
};

/// A valid request that the hardware, the installed CUDA libraries or gpumath cannot carry out.
class NotSupported : public Error {
public:
    /// `message` says what cannot be done; `api` names the function that cannot do it (may be
    /// empty), `status` its native status when a library call said so (else 0).
    explicit NotSupported(const std::string& message, std::string api = {}, int status = 0)
        : Error(message, status, std::move(api)) {}
};

/// The CUDA runtime or driver reported an error, or no CUDA driver/device is available.
class CudaError : public Error {
public:
    using Error::Error;
};

/// cuBLAS / cuBLASLt reported an error; `status()` is the cublasStatus_t.
class CublasError : public Error {
public:
    using Error::Error;
};

/// cuFFT reported an error; `status()` is the cufftResult.
class CufftError : public Error {
public:
    using Error::Error;
};

/// cuSOLVER reported an error; `status()` is the cusolverStatus_t. A singular or indefinite matrix
/// is not one: it is reported per matrix through the `info` a linalg call writes (NumericalError).
class CusolverError : public Error {
public:
    using Error::Error;
};

/// cuSPARSE reported an error; `status()` is the cusparseStatus_t.
class CusparseError : public Error {
public:
    using Error::Error;
};

/// cuDSS reported an error, or cuDSS could not be loaded (gpumath loads `libcudss.so.1`, cuDSS 1.x at run
/// time); `status()` is the cudssStatus_t (0 when the library is missing or lacks a function).
class CudssError : public Error {
public:
    using Error::Error;
};

/// The device-side content of a sparse matrix breaks its format: an offset array that is not
/// monotone or does not start at 0 or end at nnz, an index out of range, or indices out of order
/// where the operation needs them sorted. Thrown by the blocking check (gpumath::sparse::check, or
/// an operation asked to validate) before the matrix reaches cuSPARSE or cuDSS. `array()` names the
/// array ("row_offsets", "col_indices", ...) and `position()` the first bad entry in it.
class InvalidSparseData : public InvalidArgument {
public:
    /// `message` says what is wrong; `api` the call that checked; `array` and `position` locate it.
    InvalidSparseData(const std::string& message, std::string api, std::string array, long long position)
        : InvalidArgument(message, std::move(api)), array_(std::move(array)), position_(position) {}
    /// The array holding the first bad entry.
    [[nodiscard]] const std::string& array() const noexcept { return array_; }
    /// The index of the first bad entry in that array.
    [[nodiscard]] long long position() const noexcept { return position_; }

private:
    std::string array_;
    long long position_;
};

/// A factorization, solve or decomposition met a matrix it cannot handle: not positive definite,
/// singular, or an iteration that did not converge. Thrown only by the blocking checks of the
/// per-matrix `info` (gpumath::linalg::check_info and the results' `check()`), never by the calls
/// that enqueue the work. `batch_index()` is the first failing matrix (row-major over the batch
/// dimensions) and `info()` its value (cuSOLVER's convention: for Cholesky the order of the leading
/// minor that is not positive definite, for LU the 1-based index of the first zero pivot).
class NumericalError : public Error {
public:
    /// `message` says what failed and where; `api` names the operation ("linalg::cholesky").
    NumericalError(const std::string& message, std::string api, long long batch_index, int info)
        : Error(message, 0, std::move(api)), batch_index_(batch_index), info_(info) {}
    /// Index of the first failing matrix, row-major over the batch dimensions (0 for one matrix).
    [[nodiscard]] long long batch_index() const noexcept { return batch_index_; }
    /// That matrix's info value (positive).
    [[nodiscard]] int info() const noexcept { return info_; }

private:
    long long batch_index_;
    int info_;
};

/// NCCL reported an error, or NCCL could not be loaded (gpumath loads it at run time, like the
/// driver); `status()` is the ncclResult_t (0 when NCCL is missing or lacks a function).
class NcclError : public Error {
public:
    using Error::Error;
};

/// Base of the errors that carry a tool's log (CompileError from NVRTC, LinkError from nvJitLink);
/// catch it to handle both alike.
class ErrorWithLog : public Error {
public:
    /// `message`, `status` and `api` as for Error; `log` is the tool's log.
    ErrorWithLog(const std::string& message, int status, std::string api, std::string log)
        : Error(message, status, std::move(api)), log_(std::move(log)) {}
    /// The tool's log (errors, warnings, information), possibly empty.
    [[nodiscard]] const std::string& log() const noexcept { return log_; }

private:
    std::string log_;
};

/// NVRTC failed to compile a program; `log()` is the compiler's log (errors and warnings).
class CompileError : public ErrorWithLog {
public:
    using ErrorWithLog::ErrorWithLog;
};

/// nvJitLink failed to link; `log()` is the linker's error and info log.
class LinkError : public ErrorWithLog {
public:
    using ErrorWithLog::ErrorWithLog;
};

}  // namespace gpumath
