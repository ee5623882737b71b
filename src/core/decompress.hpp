// SPDX-License-Identifier: Apache-2.0
// Private to src/core: the two compressions the toolkit's fatbinary applies to a fatbin's images,
// undone so that the linker's duplicate-definition check can read compressed images too. Both take
// the size the entry declares and give nothing (never a partial image) when the bytes do not
// decode to exactly that many.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpumath::detail {

/// An LZ4 block (the raw block format, no frame header), as `fatbinary --compress-mode=speed`
/// writes images, into exactly `size` bytes. Nothing when a sequence reads past the input, a match
/// reaches before the output's start, or the output would not be `size` bytes (all checked before
/// the output is allocated).
[[nodiscard]] std::optional<std::string> lz4_block_decompress(std::string_view block, std::size_t size);

/// A Zstandard frame, as fatbinary's default compression writes images, into exactly `size` bytes,
/// through the system's libzstd (libzstd.so.1, loaded on first use). Nothing when the frame's header
/// does not declare `size` bytes (checked before allocating) or the frame does not decode to them,
/// or when no libzstd could be loaded (zstd_available()).
[[nodiscard]] std::optional<std::string> zstd_decompress(std::string_view frame, std::size_t size);

/// Whether libzstd.so.1 could be loaded (once per process).
[[nodiscard]] bool zstd_available();

}  // namespace gpumath::detail
