// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the eigenvector kernel of Eig (kernels/eig_vectors.cu) through the core
// kernel loader.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/types.hpp>

#include "linalg/kernels/eig_params.hpp"

namespace gpumath::detail {

/// The text of kernels/eig_vectors.cu, the options it compiles with (its parameter headers in
/// memory; `arch` left empty) and the name expressions of its kernels.
[[nodiscard]] std::string_view eig_kernel_source();
[[nodiscard]] core::ProgramOptions eig_kernel_options();
[[nodiscard]] std::vector<std::string> eig_kernel_names();

/// Writes the complex eigenvectors of `p.out` (c32 when `real` is f32, c64 when f64) from the real
/// packing and the eigenvalues `p` points at, on `stream`.
void unpack_vectors(const kernels::UnpackParams& p, DataType real, core::StreamRef stream);

}  // namespace gpumath::detail
