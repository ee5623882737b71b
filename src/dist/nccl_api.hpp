// SPDX-License-Identifier: Apache-2.0
// Private: NCCL's entry points, loaded at run time (gpumath never links NCCL).
#pragma once

#include <string_view>

#include <nccl.h>

#include "detail/status.hpp"

namespace gpumath::detail {

// X(name): every NCCL function gpumath calls. Add an entry to make one available as `nccl().name`.
#define GPUMATH_NCCL_FUNCTIONS(X) \
    X(ncclGetVersion)             \
    X(ncclGetUniqueId)            \
    X(ncclGetErrorString)         \
    X(ncclGetLastError)           \
    X(ncclCommInitAll)            \
    X(ncclCommInitRank)           \
    X(ncclCommFinalize)           \
    X(ncclCommDestroy)            \
    X(ncclGroupStart)             \
    X(ncclGroupEnd)               \
    X(ncclAllReduce)              \
    X(ncclReduceScatter)          \
    X(ncclAllGather)              \
    X(ncclBroadcast)

/// Typed pointers to the NCCL functions above, all resolved.
struct NcclApi {
#define GPUMATH_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
    GPUMATH_NCCL_FUNCTIONS(GPUMATH_NCCL_MEMBER)
#undef GPUMATH_NCCL_MEMBER
    /// ncclGetVersion's answer.
    int version = 0;
};

/// NCCL, loaded once (thread-safe) from $GPUMATH_NCCL_LIBRARY or "libnccl.so.2" through
/// open_shared_library. Throws NcclError (status 0) naming the file and the reason when it cannot
/// be loaded (the file is refused: not a regular file, not a shared library of this machine,
/// truncated; or the loader's own error) or lacks a function; every later call throws the same
/// error again.
const NcclApi& nccl();

/// Throws NcclError for a failed NCCL call: the message adds NCCL's own text for the last error
/// (ncclGetLastError) to `context`.
[[noreturn]] void throw_nccl_failure(ncclResult_t status, const char* api, std::string_view context);

/// Throws NcclError unless `status` is ncclSuccess. `context` is a string or a callable returning
/// one; a callable is only invoked on failure.
template <class Context>
inline void check_nccl(ncclResult_t status, const char* api, Context&& context) {
    if (status != ncclSuccess) [[unlikely]]
        throw_nccl_failure(status, api, context_text(static_cast<Context&&>(context)));
}

}  // namespace gpumath::detail
