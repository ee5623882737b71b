// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: cuDSS's entry points, loaded at run time (gpumath never links cuDSS). The
// typed table needs cudss.h (GPUMATH_HAS_CUDSS, set on the solver's sources by
// cmake/gpumath-cudss.cmake); the checked load itself does not, so it is testable in every build.
#pragma once

#include <string>
#include <string_view>

#if defined(GPUMATH_HAS_CUDSS)
#include <cudss.h>
#endif

namespace gpumath::detail {

// X(name): every cuDSS function gpumath calls. Add an entry to make one available as `cudss().name`.
#define GPUMATH_CUDSS_FUNCTIONS(X) \
    X(cudssGetProperty)            \
    X(cudssCreate)                 \
    X(cudssDestroy)                \
    X(cudssSetStream)              \
    X(cudssConfigCreate)           \
    X(cudssConfigDestroy)          \
    X(cudssConfigSet)              \
    X(cudssDataCreate)             \
    X(cudssDataDestroy)            \
    X(cudssDataGet)                \
    X(cudssDataSet)                \
    X(cudssMatrixCreateCsr)        \
    X(cudssMatrixCreateDn)         \
    X(cudssMatrixDestroy)          \
    X(cudssMatrixSetValues)        \
    X(cudssExecute)

/// The file gpumath loads when GPUMATH_CUDSS_LIBRARY is unset: the soname of the cuDSS major
/// version whose header gpumath was built with ("libcudss.so.1").
[[nodiscard]] std::string default_cudss_library();

/// What a checked load of cuDSS from `file` (a path, or a bare name searched like the loader does)
/// found: empty when the file loaded, holds every function above and (with cudss.h) reports the
/// major version the header declares; otherwise the reason, naming the file and how to install
/// cuDSS. Never cached and never throws; a library it loads stays loaded. For cudss() and tests.
[[nodiscard]] std::string cudss_load_error(const std::string& file, bool from_environment);

/// How to get cuDSS: the sentence every "cuDSS is missing" message ends with.
[[nodiscard]] std::string_view cudss_install_hint() noexcept;

#if defined(GPUMATH_HAS_CUDSS)

/// Typed pointers to the cuDSS functions above, all resolved.
struct CudssApi {
#define GPUMATH_CUDSS_MEMBER(name) decltype(&::name) name = nullptr;
    GPUMATH_CUDSS_FUNCTIONS(GPUMATH_CUDSS_MEMBER)
#undef GPUMATH_CUDSS_MEMBER
    /// The loaded library's version, major · 10000 + minor · 100 + patch.
    int version = 0;
};

/// cuDSS, loaded once (thread-safe) from $GPUMATH_CUDSS_LIBRARY or default_cudss_library() through
/// open_shared_library. Throws CudssError (status 0, api "dlopen") naming the file, the reason and
/// how to install cuDSS when it cannot be loaded, lacks a function or is another major version;
/// every later call throws the same error again.
const CudssApi& cudss();

/// Throws CudssError unless `status` is CUDSS_STATUS_SUCCESS: "api: CUDSS_STATUS_... (code): context".
void check_cudss(cudssStatus_t status, const char* api, std::string_view context);

#endif

}  // namespace gpumath::detail
