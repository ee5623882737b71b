// SPDX-License-Identifier: Apache-2.0
// Private to src/core: the two compressions the toolkit's fatbinary applies to a fatbin's images,
// undone so that the object-code checks and the linker's duplicate-definition check can read
// compressed images too. Both decoders are the system's own libraries, loaded at run time on first
// need through the checked loader (detail/shared_library.hpp), so neither is a build or link
// dependency; a library that cannot be loaded is logged once at warn, and the images it would
// decode are then refused (NotSupported, src/core/fatbin.cpp). Both decoders take the size the
// entry declares and give nothing (never a partial image) when the bytes do not decode to exactly
// that many.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpumath::detail {

/// An LZ4 block (the raw block format, no frame header), as `fatbinary --compress-mode=speed`
/// writes images, into exactly `size` bytes, through the system's liblz4 (liblz4.so.1, loaded on
/// first use) and its bounded decoder `LZ4_decompress_safe`, which reads only the block and writes
/// only the `size` bytes. Nothing when the block does not decode to exactly `size` bytes, when
/// `size` is more than LZ4 can make of the block (255 bytes per byte; checked before the output is
/// allocated), or when no liblz4 could be loaded (lz4_available()).
[[nodiscard]] std::optional<std::string> lz4_block_decompress(std::string_view block, std::size_t size);

/// A Zstandard frame, as fatbinary's default compression writes images, into exactly `size` bytes,
/// through the system's libzstd (libzstd.so.1, loaded on first use). Nothing when the frame's header
/// does not declare `size` bytes (checked before allocating) or the frame does not decode to them,
/// or when no libzstd could be loaded (zstd_available()).
[[nodiscard]] std::optional<std::string> zstd_decompress(std::string_view frame, std::size_t size);

/// Whether liblz4.so.1 could be loaded (tried once per process, on the first call of this or of
/// lz4_block_decompress; a failure is logged once at warn).
[[nodiscard]] bool lz4_available();

/// Whether libzstd.so.1 could be loaded (tried once per process, as lz4_available()).
[[nodiscard]] bool zstd_available();

}  // namespace gpumath::detail
