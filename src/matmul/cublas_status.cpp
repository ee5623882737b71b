// SPDX-License-Identifier: Apache-2.0
// cuBLASLt's failures as CublasError, named by cuBLASLt itself: the core library declares
// throw_cublas and this module, the one that links cuBLASLt, defines it.
#include <cublasLt.h>

#include <gpumath/error.hpp>

#include "detail/status.hpp"

namespace gpumath::detail {

void throw_cublas(int status, const char* api, std::string_view context) {
    throw CublasError(status_message(api, cublasLtGetStatusName(static_cast<cublasStatus_t>(status)), status, context),
                      status, api);
}

}  // namespace gpumath::detail
