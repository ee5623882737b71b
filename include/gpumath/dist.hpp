// SPDX-License-Identifier: Apache-2.0
/// @file
/// Multi-GPU: the NCCL Communicator, FFTs across GPUs (cuFFT Xt) and tensor-parallel products.
/// Built when gpumath found nccl.h (GPUMATH_HAS_DIST; target gpumath::dist).
#pragma once

#include <gpumath/dist/communicator.hpp>
#include <gpumath/dist/fft.hpp>
#include <gpumath/dist/matmul.hpp>
