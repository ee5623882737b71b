// SPDX-License-Identifier: Apache-2.0
// Loads cuDSS on first use (through the checked loader, detail/shared_library.hpp), so programs start
// (and run everything but sparse::DirectSolver) on machines without it, and one build serves hosts
// where the wheel or the archive lives in different folders.
#include "sparse/cudss_api.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <gpumath/error.hpp>

#include "detail/shared_library.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

#if defined(GPUMATH_HAS_CUDSS)
constexpr int header_major = CUDSS_VERSION_MAJOR;
#else
constexpr int header_major = 1;  // the cuDSS this gpumath would be built against (1.x)
#endif

#define GPUMATH_CUDSS_NAME(name) #name,
constexpr std::array function_names{GPUMATH_CUDSS_FUNCTIONS(GPUMATH_CUDSS_NAME)};
#undef GPUMATH_CUDSS_NAME

struct Loaded {
    std::array<void*, function_names.size()> functions{};
    int version = 0;
    std::string error;  // empty when every function was found
};

Loaded load(const std::string& file, bool from_env) {
    Loaded loaded;
    const char* origin = from_env ? " (GPUMATH_CUDSS_LIBRARY)" : "";
    // The handle is never closed: cuDSS keeps per-process state (its JIT cache, threading layers).
    const SharedLibrary library = open_shared_library(file);
    if (!library) {
        loaded.error = fmt::format("cuDSS could not be loaded from \"{}\"{}: {}; {}", file, origin, library.error,
                                   cudss_install_hint());
        return loaded;
    }
    for (std::size_t i = 0; i < function_names.size(); ++i) {
        loaded.functions[i] = dlsym(library.handle, function_names[i]);
        if (loaded.functions[i] == nullptr) {
            loaded.error = fmt::format("cuDSS loaded from \"{}\"{} lacks the function {}; {}", file, origin,
                                       function_names[i], cudss_install_hint());
            return loaded;
        }
    }
    // cudssGetProperty(libraryPropertyType, int*) is the first entry: its signature is the same in
    // every cuDSS, so the version can be asked before anything else is trusted.
    using GetProperty = int (*)(int, int*);
    const auto get_property = reinterpret_cast<GetProperty>(loaded.functions[0]);
    int major = -1, minor = 0, patch = 0;
    if (get_property(0, &major) != 0 || get_property(1, &minor) != 0 || get_property(2, &patch) != 0) {
        loaded.error = fmt::format("cudssGetProperty of the cuDSS loaded from \"{}\"{} failed", file, origin);
        return loaded;
    }
    loaded.version = major * 10000 + minor * 100 + patch;
    if (major != header_major)
        loaded.error = fmt::format(
            "cuDSS loaded from \"{}\"{} is version {}.{}.{}; gpumath was built with cuDSS {}.x, whose functions "
            "differ; {}",
            file, origin, major, minor, patch, header_major, cudss_install_hint());
    return loaded;
}

}  // namespace

std::string default_cudss_library() { return fmt::format("libcudss.so.{}", header_major); }

std::string_view cudss_install_hint() noexcept {
    return "install cuDSS (`pip install nvidia-cudss-cu13`, or NVIDIA's cuDSS archive) and set "
           "GPUMATH_CUDSS_LIBRARY to the path of its libcudss.so.1 (the wheel puts it in "
           "<site-packages>/nvidia/cu13/lib) or add that folder to LD_LIBRARY_PATH";
}

std::string cudss_load_error(const std::string& file, bool from_environment) {
    return load(file, from_environment).error;
}

#if defined(GPUMATH_HAS_CUDSS)

namespace {

const char* cudss_status_name(int status) noexcept {
    static constexpr std::array names{"CUDSS_STATUS_SUCCESS",        "CUDSS_STATUS_NOT_INITIALIZED",
                                      "CUDSS_STATUS_ALLOC_FAILED",   "CUDSS_STATUS_INVALID_VALUE",
                                      "CUDSS_STATUS_NOT_SUPPORTED",  "CUDSS_STATUS_EXECUTION_FAILED",
                                      "CUDSS_STATUS_INTERNAL_ERROR", "CUDSS_STATUS_IR_FAILED"};
    return status >= 0 && std::size_t(status) < names.size() ? names[std::size_t(status)] : "CUDSS_STATUS_UNKNOWN";
}

struct Typed {
    CudssApi api;
    std::string error;
};

Typed load_typed() {
    const char* env = std::getenv("GPUMATH_CUDSS_LIBRARY");
    const bool from_env = env != nullptr && *env != '\0';
    Loaded loaded = load(from_env ? std::string(env) : default_cudss_library(), from_env);
    Typed typed{.api = {}, .error = std::move(loaded.error)};
    if (!typed.error.empty()) return typed;
    std::size_t i = 0;
#define GPUMATH_CUDSS_CAST(name) typed.api.name = reinterpret_cast<decltype(&::name)>(loaded.functions[i++]);
    GPUMATH_CUDSS_FUNCTIONS(GPUMATH_CUDSS_CAST)
#undef GPUMATH_CUDSS_CAST
    typed.api.version = loaded.version;
    return typed;
}

}  // namespace

const CudssApi& cudss() {
    static const Typed loaded = load_typed();
    if (!loaded.error.empty()) [[unlikely]]
        throw CudssError(loaded.error, 0, "dlopen");
    return loaded.api;
}

void check_cudss(cudssStatus_t status, const char* api, std::string_view context) {
    if (status == CUDSS_STATUS_SUCCESS) [[likely]]
        return;
    throw CudssError(status_message(api, cudss_status_name(int(status)), int(status), context), int(status), api);
}

#endif

}  // namespace gpumath::detail
