// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>

#include <sys/mman.h>

#include <cublasLt.h>
#include <cufft.h>
#include <nvrtc.h>

#include "detail/log.hpp"
#include "detail/status.hpp"
#include <gpumath/error.hpp>
#include <gpumath/log.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

TEST(Errors, HierarchyAndFields) {
    static_assert(std::is_base_of_v<std::runtime_error, Error>);
    static_assert(std::is_base_of_v<Error, InvalidArgument> && std::is_base_of_v<Error, NotSupported> &&
                  std::is_base_of_v<Error, CudaError> && std::is_base_of_v<Error, CublasError> &&
                  std::is_base_of_v<Error, CufftError> && std::is_base_of_v<Error, CompileError> &&
                  std::is_base_of_v<Error, LinkError>);
    CompileError c("msg", 6, "nvrtcCompileProgram", "kernel.cu(3): error: x");
    EXPECT_EQ(c.status(), 6);
    EXPECT_EQ(c.api(), "nvrtcCompileProgram");
    EXPECT_EQ(c.log(), "kernel.cu(3): error: x");
}

TEST(Errors, CompileAndLinkErrorsShareTheirLogBase) {
    static_assert(std::is_base_of_v<ErrorWithLog, CompileError> && std::is_base_of_v<ErrorWithLog, LinkError>);
    static_assert(std::is_base_of_v<Error, ErrorWithLog>);
    static_assert(!std::is_base_of_v<CompileError, LinkError> && !std::is_base_of_v<LinkError, CompileError>);
    // One handler takes both, with the log, the status and the failing API.
    const auto caught = [](auto&& raise) {
        try {
            raise();
        } catch (const ErrorWithLog& e) {
            return std::string(e.api()) + "|" + std::to_string(e.status()) + "|" + e.log();
        }
        return std::string("not caught");
    };
    EXPECT_EQ(caught([] { detail::check_nvrtc(6, "nvrtcCompileProgram", "compiling 'k'", "k.cu(1): error"); }),
              "nvrtcCompileProgram|6|k.cu(1): error");
    EXPECT_EQ(caught([] { detail::check_nvjitlink(4, "nvJitLinkComplete", "linking 'app'", "undefined twice"); }),
              "nvJitLinkComplete|4|undefined twice");
    const LinkError l("msg", 4, "nvJitLinkComplete", "ptxas fatal");
    EXPECT_STREQ(l.what(), "msg");
    EXPECT_EQ(l.log(), "ptxas fatal");
    // Copies keep the log (exceptions are copied when rethrown or stored).
    const CompileError c("msg", 6, "nvrtcCompileProgram", "kernel.cu(3): error: x");
    const CompileError copy = c;
    EXPECT_EQ(copy.log(), c.log());
    EXPECT_EQ(copy.status(), 6);
}

TEST(Errors, CublasMessageNamesApiStatusAndContext) {
    try {
        detail::check_cublas(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul", "running a bf16 matmul");
        FAIL() << "no throw";
    } catch (const CublasError& e) {
        EXPECT_STREQ(e.what(), "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15): running a bf16 matmul");
        EXPECT_EQ(e.status(), 15);
        EXPECT_EQ(e.api(), "cublasLtMatmul");
    }
}

TEST(Errors, LibrariesNameTheirOwnStatuses) {
    // NVRTC's and cuBLASLt's names come from the libraries, so statuses newer than any table are
    // named too: CUDA 13's NVRTC defines codes up to 17.
    const auto nvrtc_name = [](int status) {
        try {
            detail::check_nvrtc(status, "nvrtcCompileProgram", "", "");
        } catch (const CompileError& e) {
            EXPECT_EQ(e.status(), status);
            return std::string(e.what());
        }
        return std::string("no throw");
    };
    EXPECT_EQ(nvrtc_name(NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED),
              "nvrtcCompileProgram: NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED (13)");
    EXPECT_EQ(nvrtc_name(NVRTC_ERROR_CANCELLED), "nvrtcCompileProgram: NVRTC_ERROR_CANCELLED (16)");
    EXPECT_EQ(nvrtc_name(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED),
              "nvrtcCompileProgram: NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED (17)");
    // A status past the library's last keeps its number.
    EXPECT_NE(nvrtc_name(999).find("(999)"), std::string::npos);
    for (const cublasStatus_t s :
         {CUBLAS_STATUS_INVALID_VALUE, CUBLAS_STATUS_EXECUTION_FAILED, CUBLAS_STATUS_NOT_SUPPORTED}) {
        try {
            detail::check_cublas(int(s), "cublasLtMatmul");
        } catch (const CublasError& e) {
            EXPECT_EQ(std::string(e.what()),
                      "cublasLtMatmul: " + std::string(cublasLtGetStatusName(s)) + " (" + std::to_string(int(s)) + ")");
            EXPECT_EQ(std::string(cublasLtGetStatusName(s)).rfind("CUBLAS_STATUS_", 0), 0u);
        }
    }
}

TEST(Errors, CufftAndCudaMessages) {
    try {
        detail::check_cufft(CUFFT_INVALID_SIZE, "cufftMakePlanMany64");
        FAIL() << "no throw";
    } catch (const CufftError& e) {
        EXPECT_STREQ(e.what(), "cufftMakePlanMany64: CUFFT_INVALID_SIZE (8)");
        EXPECT_EQ(e.status(), CUFFT_INVALID_SIZE);
    }
    try {
        detail::check(cudaErrorMemoryAllocation, "cudaMallocAsync", "allocating 12 bytes");
        FAIL() << "no throw";
    } catch (const CudaError& e) {
        EXPECT_STREQ(e.what(), "cudaMallocAsync: cudaErrorMemoryAllocation (2): allocating 12 bytes");
        EXPECT_EQ(e.status(), 2);
    }
    try {
        detail::check(cudaErrorInsufficientDriver, "cudaGetDeviceCount");
        FAIL() << "no throw";
    } catch (const CudaError& e) {
        // The message leads with the category, explains the cause and keeps the failing call and status.
        const std::string what = e.what();
        EXPECT_EQ(what.rfind("no CUDA driver/device: ", 0), 0u) << what;
        EXPECT_NE(what.find("(cudaGetDeviceCount: cudaErrorInsufficientDriver (35)"), std::string::npos) << what;
        EXPECT_EQ(e.status(), cudaErrorInsufficientDriver);
    }
}

TEST(Errors, ContextIsBuiltOnlyOnFailure) {
    int calls = 0;
    auto context = [&] {
        ++calls;
        return std::string("expensive");
    };
    detail::check(cudaSuccess, "cudaMemcpyAsync", context);
    detail::check_cublas(0, "cublasLtMatmul", context);
    EXPECT_EQ(calls, 0);
    EXPECT_THROW(detail::check_cufft(5, "cufftExecC2C", context), CufftError);
    EXPECT_EQ(calls, 1);
}

TEST(Errors, NvrtcAndNvJitLinkStatusesGoThroughTheSameCheck) {
    int context_calls = 0, log_calls = 0;
    auto context = [&] {
        ++context_calls;
        return std::string("compiling 'k'");
    };
    auto log = [&] {
        ++log_calls;
        return std::string("k.cu(1): error: expected a ;");
    };
    detail::check_nvrtc(0, "nvrtcCompileProgram", context, log);
    detail::check_nvjitlink(0, "nvJitLinkComplete", context, log);
    EXPECT_EQ(context_calls, 0);
    EXPECT_EQ(log_calls, 0);
    try {
        detail::check_nvrtc(6, "nvrtcCompileProgram", context, log);
        FAIL() << "no throw";
    } catch (const CompileError& e) {
        EXPECT_STREQ(e.what(),
                     "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6): compiling 'k'\n"
                     "k.cu(1): error: expected a ;");
        EXPECT_EQ(e.status(), 6);
        EXPECT_EQ(e.api(), "nvrtcCompileProgram");
        EXPECT_EQ(e.log(), "k.cu(1): error: expected a ;");
    }
    try {
        detail::check_nvjitlink(4, "nvJitLinkComplete", "linking 'app'");
        FAIL() << "no throw";
    } catch (const LinkError& e) {
        EXPECT_STREQ(e.what(), "nvJitLinkComplete: NVJITLINK_ERROR_PTX_COMPILE (4): linking 'app'");
        EXPECT_EQ(e.status(), 4);
        EXPECT_EQ(e.log(), "");
    }
    EXPECT_EQ(context_calls, 1);
    EXPECT_EQ(log_calls, 1);
}

TEST(Errors, ReleaseNoexceptSwallows) {
    bool ran = false;
    detail::release_noexcept([&] {
        ran = true;
        throw std::runtime_error("x");
    });
    EXPECT_TRUE(ran);
}

TEST(Log, ParseLevelsAndReject) {
    EXPECT_EQ(parse_log_level("off"), LogLevel::off);
    EXPECT_EQ(parse_log_level("ERROR"), LogLevel::error);
    EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
    EXPECT_EQ(parse_log_level("Info"), LogLevel::info);
    EXPECT_EQ(parse_log_level("4"), LogLevel::debug);
    test::expect_throw_with<InvalidArgument>([] { (void)parse_log_level("verbose"); }, {"verbose", "off, error"});
    const LogLevel before = log_level();
    set_log_level(LogLevel::debug);
    EXPECT_TRUE(log_enabled(LogLevel::debug));
    set_log_level(LogLevel::error);
    EXPECT_FALSE(log_enabled(LogLevel::warn));
    EXPECT_TRUE(log_enabled(LogLevel::error));
    set_log_level(LogLevel::off);
    EXPECT_FALSE(log_enabled(LogLevel::error));
    set_log_level(before);
}

TEST(Log, LevelsOutsideTheEnumAreRejected) {
    const LogLevel before = log_level();
    set_log_level(LogLevel::error);
    // Before: stored as is, after which every message up to level 9 counted as enabled.
    test::expect_throw_with<InvalidArgument>([] { set_log_level(static_cast<LogLevel>(9)); },
                                             {"set_log_level", "level: 9 is not a LogLevel", "debug = 4"});
    test::expect_throw_with<InvalidArgument>([] { set_log_level(static_cast<LogLevel>(-1)); }, {"level: -1"});
    EXPECT_EQ(log_level(), LogLevel::error);  // unchanged
    EXPECT_FALSE(log_enabled(LogLevel::debug));
    set_log_level(before);
}

TEST(Log, ValuesThatAreNoLevelWriteNothing) {
    const LogLevel before = log_level();
    set_log_level(LogLevel::debug);
    // Before: LogLevel(-1) counted as enabled and wrote "gpumath [off] x".
    EXPECT_FALSE(log_enabled(static_cast<LogLevel>(-1)));
    EXPECT_FALSE(log_enabled(static_cast<LogLevel>(7)));
    EXPECT_FALSE(log_enabled(LogLevel::off));
    ::testing::internal::CaptureStderr();
    gpumath::log(static_cast<LogLevel>(-1), "x");
    gpumath::log(static_cast<LogLevel>(7), "y");
    gpumath::log(LogLevel::off, "z");
    gpumath::log(LogLevel::debug, std::string_view("kept\0cut", 4));
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "gpumath [debug] kept\n");
    set_log_level(before);
}

namespace {

// A stdio stream that counts the bytes written to it and keeps none.
struct CountingStream {
    unsigned long long bytes = 0;
    char last = 0;
    std::FILE* file = nullptr;
    CountingStream() {
        const cookie_io_functions_t io{.read = nullptr,
                                       .write = [](void* self, const char* data, std::size_t n) -> ssize_t {
                                           auto* s = static_cast<CountingStream*>(self);
                                           s->bytes += n;
                                           if (n > 0) s->last = data[n - 1];
                                           return ssize_t(n);
                                       },
                                       .seek = nullptr,
                                       .close = nullptr};
        file = ::fopencookie(this, "w", io);
    }
    ~CountingStream() { std::fclose(file); }
    CountingStream(const CountingStream&) = delete;
    CountingStream& operator=(const CountingStream&) = delete;
    CountingStream(CountingStream&&) = delete;
    CountingStream& operator=(CountingStream&&) = delete;
};

}  // namespace

TEST(Log, MessagesPastTwoGibibytesAreWrittenWhole) {
    // Untouched anonymous pages read as zeros without taking memory: messages of 2^31 + 1 and
    // 2^32 + 5 bytes. "%.*s" with an int precision wrote the first until a NUL (past the view) and
    // 5 bytes of the second.
    const std::size_t sizes[] = {(std::size_t(1) << 31) + 1, (std::size_t(1) << 32) + 5};
    const std::string prefix = "gpumath [error] ";
    for (const std::size_t n : sizes) {
        void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        CountingStream out;
        ASSERT_NE(out.file, nullptr);
        detail::write_log_line(out.file, LogLevel::error, std::string_view(static_cast<const char*>(p), n));
        std::fflush(out.file);
        EXPECT_EQ(out.bytes, prefix.size() + n + 1) << n;
        EXPECT_EQ(out.last, '\n');
        ::munmap(p, n);
    }
}

TEST(NoDeviceCause, EachCauseHasItsOwnNextStep) {
    using detail::no_device_cause;
    const std::string missing = no_device_cause(cudaErrorInsufficientDriver, false, 0, 13000, nullptr);
    EXPECT_NE(missing.find("no NVIDIA driver was found (libcuda.so.1 could not be loaded)"), std::string::npos);
    const std::string old = no_device_cause(cudaErrorInsufficientDriver, true, 12040, 13000, nullptr);
    EXPECT_NE(old.find("the NVIDIA driver is too old: it supports CUDA 12.4 and gpumath was built with the CUDA 13.0 "
                       "runtime; update the driver to one for CUDA 13.0 or newer"),
              std::string::npos)
        << old;
    const std::string none = no_device_cause(cudaErrorNoDevice, true, 13000, 13000, nullptr);
    EXPECT_NE(none.find("the NVIDIA driver (CUDA 13.0) found no GPU it can use: check that nvidia-smi lists a GPU"),
              std::string::npos)
        << none;
    const std::string hidden = no_device_cause(cudaErrorNoDevice, true, 13000, 13000, "");
    EXPECT_NE(hidden.find("CUDA_VISIBLE_DEVICES is \"\", which hides the others"), std::string::npos) << hidden;
    for (const std::string& m : {missing, old, none, hidden})
        EXPECT_NE(m.find("gpumath still validates calls"), std::string::npos) << m;
}
