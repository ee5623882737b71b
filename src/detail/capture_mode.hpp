// SPDX-License-Identifier: Apache-2.0
// Private: per-device state made on first use, which may be inside a caller's graph capture.
#pragma once

#include <cuda_runtime_api.h>

#include "detail/status.hpp"

namespace gpumath::detail {

/// Relaxes this thread's stream capture mode for its lifetime, so that work that is not stream
/// work (creating a library handle, loading a module) may run while a caller's stream captures a
/// CUDA graph without invalidating the capture; nothing of it is recorded. The previous mode comes
/// back when the scope ends. `what` names the work in the error of a failed exchange.
class RelaxedCaptureMode {
public:
    explicit RelaxedCaptureMode(const char* what) {
        check(cudaThreadExchangeStreamCaptureMode(&previous_), "cudaThreadExchangeStreamCaptureMode", what);
    }
    ~RelaxedCaptureMode() { (void)cudaThreadExchangeStreamCaptureMode(&previous_); }
    RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
    RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;
    RelaxedCaptureMode(RelaxedCaptureMode&&) = delete;
    RelaxedCaptureMode& operator=(RelaxedCaptureMode&&) = delete;

private:
    cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace gpumath::detail
