// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the quantization kernels of each device (compiled once per process and
// variant) and enqueueing a validated call.
#pragma once

#include <gpumath/core/stream.hpp>
#include "matmul/quantize_checks.hpp"

namespace gpumath::detail {

/// Enqueues `call` (validated by quantize_call) on `stream`, on the current device: a memset of
/// the amax when one is asked for, then one kernel; tensor mode zeroes its scale, finds max |x|
/// with a first kernel, quantizes with a second and turns the max into the scale with a one-thread
/// third. Allocates nothing, so it may be captured. Compiles the kernels on first use.
void run_quantize(const QuantizeCall& call, core::StreamRef stream);

/// Enqueues `call` (validated by dequantize_call, with its result set) on `stream`.
void run_dequantize(const QuantizeCall& call, core::StreamRef stream);

}  // namespace gpumath::detail
