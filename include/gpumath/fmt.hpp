// SPDX-License-Identifier: Apache-2.0
/// @file
/// fmt formatters for gpumath's tensors: `fmt::print("{}\n", tensor)` prints `gpumath::preview`
/// (blocking, on the current stream). Opt-in: this header needs {fmt} (https://fmt.dev), which
/// gpumath itself does not require of its users.
#pragma once

#include <string>

#include <fmt/format.h>

#include <gpumath/tensor.hpp>
#include <gpumath/tensor_io.hpp>

/// {fmt}'s namespace (https://fmt.dev), where gpumath specializes the formatters of its tensors.
namespace fmt {

/// Formats a TensorView as `gpumath::preview` shows it (format specs as for a string).
template <>
struct formatter<gpumath::TensorView> : formatter<std::string> {
    /// Writes the preview.
    template <class Context>
    auto format(const gpumath::TensorView& tensor, Context& ctx) const {
        return formatter<std::string>::format(gpumath::preview(tensor), ctx);
    }
};

/// Formats a Tensor as its view.
template <>
struct formatter<gpumath::Tensor> : formatter<std::string> {
    /// Writes the preview.
    template <class Context>
    auto format(const gpumath::Tensor& tensor, Context& ctx) const {
        return formatter<std::string>::format(gpumath::preview(tensor.view()), ctx);
    }
};

}  // namespace fmt
