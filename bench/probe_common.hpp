// SPDX-License-Identifier: Apache-2.0
// What the raw-cuBLASLt probes (bench/probe_*.cpp) share: opening the device and a cuBLASLt
// handle, and reading a status. The probes are not part of the CMake build; each builds by hand
// with one command such as
//   g++ -std=c++20 -O2 -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//       bench/probe_fp8_scale_modes.cpp -lcublasLt -lcudart -o probe_fp8_scale_modes
#pragma once

#include <cstdio>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace probe {

inline bool ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

/// Prints device 0 and cuBLASLt's version and creates `*lt`. Returns -1 when the probe can run, or
/// the exit code for main: 0 without a device (after saying so), 1 when cuBLASLt cannot start.
inline int open(const char* program, cublasLtHandle_t* lt) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("%s: no CUDA device; nothing to probe\n", program);
        return 0;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device %s cc %d.%d, cuBLASLt %zu\n", prop.name, prop.major, prop.minor, cublasLtGetVersion());
    return ok(cublasLtCreate(lt)) ? -1 : 1;
}

}  // namespace probe
