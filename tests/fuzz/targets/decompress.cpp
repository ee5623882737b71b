// SPDX-License-Identifier: Apache-2.0
// Fuzz targets for the two decoders of fatbin images: gpumath's own LZ4 block decoder and the
// Zstandard path through libzstd. The input's first four bytes give the size the caller declares
// (up to 4 MiB), the rest is the compressed block or frame.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "core/decompress.hpp"
#include "fuzz/targets/target.hpp"

namespace {

struct Declared {
    std::size_t size = 0;
    std::string_view bytes;
};

Declared split(std::span<const std::uint8_t> data) {
    std::uint32_t size = 0;
    if (data.size() >= 4) std::memcpy(&size, data.data(), 4);
    const std::string_view all = gpumath::fuzz::text(data);
    return {std::size_t(size) % (std::size_t(4) << 20), data.size() >= 4 ? all.substr(4) : std::string_view()};
}

}  // namespace

GPUMATH_FUZZ_TARGET(lz4) {
    if (!gpumath::detail::lz4_available()) return;
    const Declared in = split(data);
    const std::optional<std::string> out = gpumath::detail::lz4_block_decompress(in.bytes, in.size);
    GPUMATH_FUZZ_CHECK(!out || out->size() == in.size, "an image of another size than declared");
    // An LZ4 block makes at most 255 bytes per byte it holds (plus a few).
    GPUMATH_FUZZ_CHECK(!out || out->size() <= 256 * (in.bytes.size() + 16), "more than LZ4 can make");
}

GPUMATH_FUZZ_TARGET(zstd) {
    if (!gpumath::detail::zstd_available()) return;
    const Declared in = split(data);
    const std::optional<std::string> out = gpumath::detail::zstd_decompress(in.bytes, in.size);
    GPUMATH_FUZZ_CHECK(!out || out->size() == in.size, "an image of another size than declared");
}
