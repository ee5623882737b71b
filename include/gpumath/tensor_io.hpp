// SPDX-License-Identifier: Apache-2.0
/// @file
/// Printing tensors: a NumPy-style preview of a tensor's values with its shape and dtype, for logs,
/// tests and debugging. The preview copies the values it shows to the host and so blocks: it
/// synchronizes the stream it reads on. For fmt, include <gpumath/fmt.hpp>.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath {

/// How `preview` shows a tensor.
struct PreviewOptions {
    /// Tensors of more elements than this are summarized: each axis longer than 2 * `edge_items`
    /// shows its first and last `edge_items` entries around "...". NumPy's default (1000).
    std::int64_t threshold = 1000;
    /// Entries shown at each end of a summarized axis (at least 1).
    int edge_items = 3;
    /// Digits after the point of floating values (0 to 17).
    int precision = 4;
};

/// The tensor's values as text, NumPy-style, after a line naming its shape and dtype:
///
///     tensor(shape (2, 3), f32)
///     [[1.0000, 2.0000, 3.0000],
///      [4.0000, 5.0000, 6.0000]]
///
/// At most a few thousand values are copied and shown whatever the tensor's size (a summarized
/// axis shows `edge_items` at each end, and fewer once a preview would pass 10,000 values). Reads
/// device, pinned, managed or host memory of any strides. Blocking: copies on `stream` and
/// synchronizes it (InvalidArgument while it captures). InvalidArgument for options out of range;
/// CudaError.
[[nodiscard]] std::string preview(const TensorView& tensor, const PreviewOptions& options = {},
                                  core::StreamRef stream = core::current_stream());

/// Writes `preview(tensor)` (blocking, on the current stream).
std::ostream& operator<<(std::ostream& out, const TensorView& tensor);
/// Writes `preview(tensor.view())` (blocking, on the current stream).
std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

}  // namespace gpumath
