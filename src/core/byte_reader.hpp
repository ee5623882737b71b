// SPDX-License-Identifier: Apache-2.0
// Private to src/core: bounds-checked little-endian reads of bytes gpumath did not write (ELF
// images, fatbins, cache entries), shared by their readers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace gpumath::detail {

/// Reads the `T` stored little-endian at `offset` of `data`; false (with `out` unchanged) when it
/// would run past the end.
template <class T>
[[nodiscard]] bool read_at(std::string_view data, std::uint64_t offset, T& out) noexcept {
    if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, data.data() + offset, sizeof(T));
    return true;
}

/// True when `count` records of `size` bytes at `offset` lie inside a file of `file` bytes
/// (overflow-safe: nothing is multiplied).
[[nodiscard]] inline bool inside(std::uint64_t file, std::uint64_t offset, std::uint64_t count,
                                 std::uint64_t size) noexcept {
    if (offset > file) return false;
    return size == 0 || count <= (file - offset) / size;
}

}  // namespace gpumath::detail
