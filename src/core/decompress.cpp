// SPDX-License-Identifier: Apache-2.0
#include "core/decompress.hpp"

#include <cstdint>
#include <cstring>

#include <dlfcn.h>

namespace gpumath::detail {

std::optional<std::string> lz4_block_decompress(std::string_view block, std::size_t size) {
    // A block is a run of sequences: a token (literal length in the high nibble, match length - 4
    // in the low one; 15 means more length bytes follow, each added, until one is not 255), the
    // literals, then a 2-byte little-endian offset back into the output and the match. The last
    // sequence has literals only.
    std::string out(size, '\0');
    std::size_t in = 0, at = 0;
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(block[i]); };
    // A length continued past its nibble; false when the input ends inside it.
    const auto extend = [&](std::size_t& length) {
        std::uint8_t more = 255;
        while (more == 255) {
            if (in >= block.size()) return false;
            more = byte(in++);
            length += more;  // at most 255 per input byte: no overflow
        }
        return true;
    };
    while (true) {
        if (in >= block.size()) return std::nullopt;
        const std::uint8_t token = byte(in++);
        std::size_t literals = token >> 4U;
        if (literals == 15 && !extend(literals)) return std::nullopt;
        if (literals > block.size() - in || literals > size - at) return std::nullopt;
        std::memcpy(out.data() + at, block.data() + in, literals);
        in += literals;
        at += literals;
        if (in == block.size()) break;  // the last sequence
        if (block.size() - in < 2) return std::nullopt;
        const std::size_t offset = std::size_t(byte(in)) | (std::size_t(byte(in + 1)) << 8U);
        in += 2;
        if (offset == 0 || offset > at) return std::nullopt;
        std::size_t match = token & 15U;
        if (match == 15 && !extend(match)) return std::nullopt;
        match += 4;
        if (match > size - at) return std::nullopt;
        // Byte by byte: a match may overlap the bytes it produces (offset < length repeats them).
        for (std::size_t i = 0; i < match; ++i, ++at) out[at] = out[at - offset];
    }
    if (at != size) return std::nullopt;
    return out;
}

namespace {

/// libzstd's two entry points the decoder needs, loaded once; null when the library is absent.
struct Zstd {
    using Decompress = std::size_t (*)(void*, std::size_t, const void*, std::size_t);
    using IsError = unsigned (*)(std::size_t);
    Decompress decompress = nullptr;
    IsError is_error = nullptr;

    Zstd() {
        // Never closed: the process keeps it, as it keeps NCCL.
        void* handle = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) return;
        // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast)
        decompress = reinterpret_cast<Decompress>(dlsym(handle, "ZSTD_decompress"));
        is_error = reinterpret_cast<IsError>(dlsym(handle, "ZSTD_isError"));
        // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
        if (decompress == nullptr || is_error == nullptr) decompress = nullptr;
    }
};

const Zstd& zstd() {
    static const Zstd loaded;
    return loaded;
}

}  // namespace

bool zstd_available() { return zstd().decompress != nullptr; }

std::optional<std::string> zstd_decompress(std::string_view frame, std::size_t size) {
    const Zstd& z = zstd();
    if (z.decompress == nullptr) return std::nullopt;
    std::string out(size, '\0');
    const std::size_t got = z.decompress(out.data(), out.size(), frame.data(), frame.size());
    if (z.is_error(got) != 0U || got != size) return std::nullopt;
    return out;
}

}  // namespace gpumath::detail
