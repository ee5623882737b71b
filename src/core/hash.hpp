// SPDX-License-Identifier: Apache-2.0
// Private: hashing for the JIT compile cache (keys and entry checksums), on xxHash's XXH3 (Debian's
// libxxhash-dev, used header-only). Not included by users directly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpumath::detail {

/// A 128-bit key digest (XXH3-128).
using Digest = std::array<std::uint8_t, 16>;

/// Builds a compile-cache key from length-prefixed fields and hashes them with XXH3-128 when
/// finished. 128 bits make an accidental collision (which would hand back the wrong code)
/// vanishingly unlikely for any number of cache entries a machine holds; the key is not a defence
/// against someone who can write the cache directory (they could write any code there anyway).
class KeyHasher {
public:
    /// Feeds `n` bytes.
    void update(const void* data, std::size_t n) { bytes_.append(static_cast<const char*>(data), n); }
    void update(std::string_view s) { bytes_.append(s); }
    /// Feeds a length-prefixed field, so that ("ab", "c") and ("a", "bc") hash differently.
    void field(std::string_view s) {
        const std::uint64_t n = s.size();
        update(&n, sizeof n);
        update(s);
    }
    void field(std::uint64_t v) { update(&v, sizeof v); }
    /// The digest of everything fed so far.
    [[nodiscard]] Digest finish() const noexcept;

private:
    std::string bytes_;
};

/// XXH3-128 of `s` in one call.
[[nodiscard]] Digest key_hash(std::string_view s) noexcept;

/// Lower-case hexadecimal text of a digest (32 characters).
[[nodiscard]] std::string to_hex(const Digest& d);

/// XXH3-64 of `n` bytes: detects torn or corrupt cache files, and identifies callback sources.
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
