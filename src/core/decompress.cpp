// SPDX-License-Identifier: Apache-2.0
// The decoders of compressed fatbin images: liblz4 and libzstd, loaded at run time through the
// checked loader, each once per process.
#include "core/decompress.hpp"

#include <dlfcn.h>

#include "detail/log.hpp"
#include "detail/shared_library.hpp"

namespace gpumath::detail {

namespace {

/// A decoder's library, loaded through the checked loader; null when it could not be, which is
/// logged (once: each caller keeps its result in a static) with what the library serves and how to
/// install it. Never closed: the process keeps it, as it keeps NCCL.
void* open_decoder(const char* file, const char* codec, const char* package) {
    const SharedLibrary library = open_shared_library(file);
    if (!library)
        log(LogLevel::warn,
            "{} could not be loaded ({}), so fatbins with {}-compressed images are refused (NotSupported); install "
            "{}'s library (Debian and Ubuntu: {})",
            file, library.error, codec, codec, package);
    return library.handle;
}

/// `name` in `handle` as a `F`; null (and a line at warn) when the library lacks it.
template <class F>
F symbol(void* handle, const char* name, const char* file) {
    void* s = dlsym(handle, name);
    if (s == nullptr) log(LogLevel::warn, "{} has no {}, so it is not used", file, name);
    return reinterpret_cast<F>(s);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast): dlsym's result
}

/// liblz4's safe block decoder, loaded once; null when the library is absent.
struct Lz4 {
    // int LZ4_decompress_safe(const char* src, char* dst, int compressedSize, int dstCapacity):
    // the bytes written, or a negative value for a malformed block (lz4.h).
    using DecompressSafe = int (*)(const char*, char*, int, int);
    DecompressSafe decompress_safe = nullptr;

    Lz4() {
        constexpr const char* file = "liblz4.so.1";
        if (void* handle = open_decoder(file, "LZ4", "liblz4-1"))
            decompress_safe = symbol<DecompressSafe>(handle, "LZ4_decompress_safe", file);
    }
};

const Lz4& lz4() {
    static const Lz4 loaded;
    return loaded;
}

/// libzstd's three entry points the decoder needs, loaded once; null when the library is absent.
struct Zstd {
    using Decompress = std::size_t (*)(void*, std::size_t, const void*, std::size_t);
    using IsError = unsigned (*)(std::size_t);
    using ContentSize = unsigned long long (*)(const void*, std::size_t);
    Decompress decompress = nullptr;
    IsError is_error = nullptr;
    ContentSize content_size = nullptr;

    Zstd() {
        constexpr const char* file = "libzstd.so.1";
        void* handle = open_decoder(file, "Zstandard", "libzstd1");
        if (handle == nullptr) return;
        decompress = symbol<Decompress>(handle, "ZSTD_decompress", file);
        is_error = symbol<IsError>(handle, "ZSTD_isError", file);
        content_size = symbol<ContentSize>(handle, "ZSTD_getFrameContentSize", file);
        if (is_error == nullptr || content_size == nullptr) decompress = nullptr;
    }
};

const Zstd& zstd() {
    static const Zstd loaded;
    return loaded;
}

// LZ4's API counts bytes in int, and its encoder takes at most LZ4_MAX_INPUT_SIZE (lz4.h) bytes,
// so no block is larger and none decodes to more.
constexpr std::size_t lz4_max_bytes = 0x7E000000;
// The most one byte of an LZ4 block makes: a match length grows by 255 per byte, and every other
// byte of a sequence (token, offset, literal) makes at most a few.
constexpr std::size_t lz4_max_ratio = 255;

}  // namespace

bool lz4_available() { return lz4().decompress_safe != nullptr; }

bool zstd_available() { return zstd().decompress != nullptr; }

std::optional<std::string> lz4_block_decompress(std::string_view block, std::size_t size) {
    const Lz4& l = lz4();
    if (l.decompress_safe == nullptr) return std::nullopt;
    // Checked before the output is allocated: a small block declaring a large image costs no memory.
    if (block.empty() || block.size() > lz4_max_bytes || size > lz4_max_bytes || size > lz4_max_ratio * block.size())
        return std::nullopt;
    std::string out(size, '\0');
    const int made =
        l.decompress_safe(block.data(), out.data(), static_cast<int>(block.size()), static_cast<int>(size));
    if (made < 0 || static_cast<std::size_t>(made) != size) return std::nullopt;
    return out;
}

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
