// SPDX-License-Identifier: Apache-2.0
/// @file
/// The per-matrix status of linalg calls (`info`), left on the device, and its blocking check.
#pragma once

#include <string_view>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::linalg {

/// Blocks until the work enqueued on `stream` so far has run, reads `info` (the i32 tensor a linalg
/// call wrote: one entry per matrix, any shape, row-major over the batch) and throws
/// NumericalError for the first positive entry, naming `operation`, the matrix's batch index and
/// the value (CusolverError for a negative one: cuSOLVER rejected an argument). Returns when every
/// entry is 0. InvalidArgument, before any CUDA call, unless `info` is a contiguous i32 tensor.
/// With Eig and RefinedSolve, whose cuSOLVER routines wait inside, the only calls of
/// gpumath::linalg that synchronize: the other plans' calls never do.
void check_info(const TensorView& info, std::string_view operation, core::StreamRef stream = core::current_stream());

}  // namespace gpumath::linalg
