// SPDX-License-Identifier: Apache-2.0
#include "core/decompress.hpp"

#include <cstdint>
#include <cstring>

#include <dlfcn.h>

#include "detail/log.hpp"
#include "detail/shared_library.hpp"

namespace gpumath::detail {

namespace {

/// Walks an LZ4 block's sequences: with `out` null it only checks them and counts the bytes they
/// make, else it writes them to `out` (which holds `size` bytes). Returns the bytes made, or
/// nothing when a sequence reads past the input, a match reaches before the output's start or
/// the output would pass `size`.
std::optional<std::size_t> lz4_walk(std::string_view block, std::size_t size, char* out) {
    // A block is a run of sequences: a token (literal length in the high nibble, match length - 4
    // in the low one; 15 means more length bytes follow, each added, until one is not 255), the
    // literals, then a 2-byte little-endian offset back into the output and the match. The last
    // sequence has literals only.
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
        if (out != nullptr) std::memcpy(out + at, block.data() + in, literals);
        in += literals;
        at += literals;
        if (in == block.size()) return at;  // the last sequence
        if (block.size() - in < 2) return std::nullopt;
        const std::size_t offset = std::size_t(byte(in)) | (std::size_t(byte(in + 1)) << 8U);
        in += 2;
        if (offset == 0 || offset > at) return std::nullopt;
        std::size_t match = token & 15U;
        if (match == 15 && !extend(match)) return std::nullopt;
        match += 4;
        if (match > size - at) return std::nullopt;
        // Byte by byte: a match may overlap the bytes it produces (offset < length repeats them).
        if (out != nullptr)
            for (std::size_t i = 0; i < match; ++i) out[at + i] = out[at + i - offset];
        at += match;
    }
}

}  // namespace

std::optional<std::string> lz4_block_decompress(std::string_view block, std::size_t size) {
    // Checked and counted before the output is allocated: a block that does not make `size` bytes
    // costs no memory.
    if (lz4_walk(block, size, nullptr) != size) return std::nullopt;
    std::string out(size, '\0');
    (void)lz4_walk(block, size, out.data());
    return out;
}

namespace {

/// libzstd's two entry points the decoder needs, loaded once; null when the library is absent.
struct Zstd {
    using Decompress = std::size_t (*)(void*, std::size_t, const void*, std::size_t);
    using IsError = unsigned (*)(std::size_t);
    using ContentSize = unsigned long long (*)(const void*, std::size_t);
    Decompress decompress = nullptr;
    IsError is_error = nullptr;
    ContentSize content_size = nullptr;

    Zstd() {
        // Never closed: the process keeps it, as it keeps NCCL. No libzstd is normal (the images are
        // then not read); a file found but refused (a FIFO, a truncated copy) is worth a line.
        const SharedLibrary library = open_shared_library("libzstd.so.1");
        if (!library) {
            if (!library.path.empty())
                log(LogLevel::warn, "libzstd.so.1 was not loaded, so compressed fatbin images are not read: {}",
                    library.error);
            return;
        }
        void* handle = library.handle;
        // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast)
        decompress = reinterpret_cast<Decompress>(dlsym(handle, "ZSTD_decompress"));
        is_error = reinterpret_cast<IsError>(dlsym(handle, "ZSTD_isError"));
        content_size = reinterpret_cast<ContentSize>(dlsym(handle, "ZSTD_getFrameContentSize"));
        // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
        if (is_error == nullptr || content_size == nullptr) decompress = nullptr;
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
    // The size the frame's header declares must be the entry's before anything is allocated: a
    // small frame claiming a large image costs no memory. (Frames that omit their size, which
    // fatbinary does not write, are not read.)
    if (z.content_size(frame.data(), frame.size()) != size) return std::nullopt;
    std::string out(size, '\0');
    const std::size_t got = z.decompress(out.data(), out.size(), frame.data(), frame.size());
    if (z.is_error(got) != 0U || got != size) return std::nullopt;
    return out;
}

}  // namespace gpumath::detail
