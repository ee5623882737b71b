// SPDX-License-Identifier: Apache-2.0
// The compile cache's hashes, on xxHash's XXH3 (inlined from Debian's libxxhash-dev header, so
// the library needs no libxxhash at run time).
#include "core/hash.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace gpumath::detail {

namespace {

Digest digest_of(const XXH128_hash_t& h) noexcept {
    // Big-endian canonical form: the same bytes (and file names) on every machine.
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    Digest d{};
    std::memcpy(d.data(), c.digest, d.size());
    return d;
}

}  // namespace

Digest KeyHasher::finish() const noexcept { return digest_of(XXH3_128bits(bytes_.data(), bytes_.size())); }

Digest key_hash(std::string_view s) noexcept { return digest_of(XXH3_128bits(s.data(), s.size())); }

std::string to_hex(const Digest& d) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(d.size() * 2, '0');
    for (std::size_t i = 0; i < d.size(); ++i) {
        s[2 * i] = digits[d[i] >> 4];
        s[2 * i + 1] = digits[d[i] & 15];
    }
    return s;
}

std::uint64_t checksum64(const void* data, std::size_t n) noexcept { return XXH3_64bits(data, n); }

}  // namespace gpumath::detail
