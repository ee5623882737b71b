// SPDX-License-Identifier: Apache-2.0
/// @file
/// gpumath::linalg, dense linear algebra on cuSOLVER: Cholesky, LU, QR, least squares and
/// symmetric/Hermitian eigendecomposition as plans (Cholesky, LU, QR, LeastSquares, Eigh) and
/// stateless calls (cholesky, solve, inv, det, qr, lstsq, eigh), per-matrix `info` left on the
/// device with a blocking check, batches run by measurement. Link gpumath::linalg.
#pragma once

#include <gpumath/error.hpp>
#include <gpumath/linalg/cholesky.hpp>
#include <gpumath/linalg/eig.hpp>
#include <gpumath/linalg/eigh.hpp>
#include <gpumath/linalg/functions.hpp>
#include <gpumath/linalg/info.hpp>
#include <gpumath/linalg/lu.hpp>
#include <gpumath/linalg/options.hpp>
#include <gpumath/linalg/qr.hpp>
#include <gpumath/linalg/refined_solve.hpp>
#include <gpumath/linalg/svd.hpp>
