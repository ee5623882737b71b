// SPDX-License-Identifier: Apache-2.0
/// @file
/// Matrix multiplication on cuBLASLt: the Matmul plan, the stateless matmul() and its plan cache.
#pragma once

#include <gpumath/matmul/grouped.hpp>
#include <gpumath/matmul/matmul.hpp>
#include <gpumath/matmul/options.hpp>
#include <gpumath/matmul/plan_cache.hpp>
#include <gpumath/matmul/quantize.hpp>
