// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: the program of the conversion kernels (kernels/convert.cu), for its
// compile test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/program.hpp>

#include "sparse/kernels/convert_params.hpp"

namespace gpumath::detail {

/// The text of kernels/convert.cu, its options (its parameter header in memory; `arch` empty) and
/// the name expressions of its kernels.
[[nodiscard]] std::string_view sparse_convert_source();
[[nodiscard]] core::ProgramOptions sparse_convert_options();
[[nodiscard]] std::vector<std::string> sparse_convert_names();

}  // namespace gpumath::detail
