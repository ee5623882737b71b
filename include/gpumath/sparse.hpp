// SPDX-License-Identifier: Apache-2.0
/// @file
/// gpumath::sparse, sparse matrices on cuSPARSE and cuDSS: CSR, CSC, COO and BSR views and owning
/// matrices, their checks and conversions, products as plans, and a direct solver. Link
/// gpumath::sparse.
#pragma once

#include <gpumath/error.hpp>
#include <gpumath/sparse/check.hpp>
#include <gpumath/sparse/convert.hpp>
#include <gpumath/sparse/direct_solver.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/operation.hpp>
#include <gpumath/sparse/sddmm.hpp>
#include <gpumath/sparse/spgemm.hpp>
#include <gpumath/sparse/triangular.hpp>
#include <gpumath/sparse/functions.hpp>
#include <gpumath/sparse/options.hpp>
#include <gpumath/sparse/spmm.hpp>
#include <gpumath/sparse/spmv.hpp>
