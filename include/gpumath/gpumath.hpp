// SPDX-License-Identifier: Apache-2.0
/// @file
/// Everything gpumath offers.
#pragma once

#include <gpumath/core.hpp>
#include <gpumath/cuda_types.hpp>
#include <gpumath/error.hpp>
#include <gpumath/fft.hpp>
#include <gpumath/linalg.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/log.hpp>
#include <gpumath/matmul.hpp>
#include <gpumath/sparse.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_io.hpp>
#include <gpumath/tensor_ops.hpp>
#include <gpumath/types.hpp>
#include <gpumath/version.hpp>

// The multi-GPU module, when gpumath was built with it (gpumath::dist defines GPUMATH_HAS_DIST).
#if defined(GPUMATH_HAS_DIST)
#include <gpumath/dist.hpp>
#endif
