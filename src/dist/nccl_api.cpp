// SPDX-License-Identifier: Apache-2.0
// Loads NCCL on first use (through the checked loader, detail/shared_library.hpp), so programs start
// (and run everything but gpumath::dist) on machines without it, and one build serves hosts where
// NCCL lives in different folders.
#include "dist/nccl_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <gpumath/error.hpp>

#include "detail/shared_library.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* default_library = "libnccl.so.2";

struct Loaded {
    NcclApi api;
    std::string error;  // empty when every function was found
};

Loaded load() {
    Loaded loaded;
    const char* env = std::getenv("GPUMATH_NCCL_LIBRARY");
    const bool from_env = env != nullptr && *env != '\0';
    const std::string file = from_env ? std::string(env) : std::string(default_library);
    // The handle is never closed: NCCL keeps threads and state for the life of the process. The
    // checked loader refuses what would hang or fault dlopen (a FIFO, a truncated copy) with a reason.
    const SharedLibrary library = open_shared_library(file);
    if (!library) {
        loaded.error = fmt::format(
            "NCCL could not be loaded from \"{}\"{}: {}; install NCCL (libnccl2) or set GPUMATH_NCCL_LIBRARY to "
            "the path of libnccl.so.2",
            file, from_env ? " (GPUMATH_NCCL_LIBRARY)" : "", library.error);
        return loaded;
    }
    void* handle = library.handle;
    bool complete = true;
#define GPUMATH_NCCL_RESOLVE(name)                                                                    \
    if (complete) {                                                                                   \
        loaded.api.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                  \
        if (loaded.api.name == nullptr) {                                                             \
            loaded.error = fmt::format("NCCL loaded from \"{}\" lacks the function {}", file, #name); \
            complete = false;                                                                         \
        }                                                                                             \
    }
    GPUMATH_NCCL_FUNCTIONS(GPUMATH_NCCL_RESOLVE)
#undef GPUMATH_NCCL_RESOLVE
    if (!complete) return loaded;
    if (const ncclResult_t status = loaded.api.ncclGetVersion(&loaded.api.version); status != ncclSuccess) {
        loaded.error = fmt::format("ncclGetVersion of the NCCL loaded from \"{}\" failed ({})", file, int(status));
    }
    return loaded;
}

}  // namespace

const NcclApi& nccl() {
    static const Loaded loaded = load();
    if (!loaded.error.empty()) [[unlikely]]
        throw NcclError(loaded.error, 0, "dlopen");
    return loaded.api;
}

void throw_nccl_failure(ncclResult_t status, const char* api, std::string_view context) {
    std::string text(context);
    const char* last = nccl().ncclGetLastError(nullptr);
    if (last != nullptr && *last != '\0') text += fmt::format(" ({})", last);
    throw_nccl(int(status), api, text);
}

}  // namespace gpumath::detail
