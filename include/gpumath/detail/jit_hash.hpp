// SPDX-License-Identifier: Apache-2.0
// Private: hashing for the JIT compile cache (keys and entry checksums). Not included by users directly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpumath::detail {

/// A SHA-256 digest.
using Digest = std::array<std::uint8_t, 32>;

/// Incremental SHA-256 (FIPS 180-4). Used for compile-cache keys, where a collision would hand back
/// the wrong code, so a strong hash is worth its few microseconds.
class Sha256 {
public:
    Sha256() noexcept;
    /// Feeds `n` bytes.
    void update(const void* data, std::size_t n) noexcept;
    void update(std::string_view s) noexcept { update(s.data(), s.size()); }
    /// Feeds a length-prefixed field, so that ("ab", "c") and ("a", "bc") hash differently.
    void field(std::string_view s) noexcept {
        const std::uint64_t n = s.size();
        update(&n, sizeof n);
        update(s);
    }
    void field(std::uint64_t v) noexcept { update(&v, sizeof v); }
    /// Finishes and returns the digest; the object must not be used afterwards.
    [[nodiscard]] Digest finish() noexcept;

private:
    void block(const std::uint8_t* p) noexcept;
    std::array<std::uint32_t, 8> state_;
    std::array<std::uint8_t, 64> buffer_{};
    std::uint64_t length_ = 0;  // bytes fed so far
    std::size_t used_ = 0;      // bytes waiting in buffer_
};

/// SHA-256 of `s` in one call.
[[nodiscard]] Digest sha256(std::string_view s) noexcept;

/// Lower-case hexadecimal text of a digest (64 characters).
[[nodiscard]] std::string to_hex(const Digest& d);

/// A fast 64-bit checksum (not cryptographic) for detecting torn or corrupt cache files.
[[nodiscard]] std::uint64_t checksum64(const void* data, std::size_t n) noexcept;

/// Hash functor for Digest keys in unordered containers (the digest is already uniform).
struct DigestHash {
    std::size_t operator()(const Digest& d) const noexcept {
        std::size_t h = 0;
        std::memcpy(&h, d.data(), sizeof h);
        return h;
    }
};

}  // namespace gpumath::detail
