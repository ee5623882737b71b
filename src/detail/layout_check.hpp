// SPDX-License-Identifier: Apache-2.0
// Private: the layout rules of TensorLayout, for callers that name the fields their own way.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <gpumath/layout.hpp>

namespace gpumath::detail {

/// TensorLayout's checks of `dtype`, `shape` and `strides`, their InvalidArgument naming `api` and
/// each field as `field_prefix` followed by "dtype", "shape" or "strides" ("DLTensor." gives
/// "DLTensor.shape: ..."). The public three-argument form is this with "TensorLayout" and "".
void validate_layout(DataType dtype, std::span<const std::int64_t> shape, std::span<const std::int64_t> strides,
                     const char* api, std::string_view field_prefix);

}  // namespace gpumath::detail
