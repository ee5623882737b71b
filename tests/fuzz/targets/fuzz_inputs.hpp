// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets and their seeds share: the compile-cache entry a target decodes (its key,
// name and resealing), the host a tuning file is read for, and the byte layout the DLPack target
// reads a DLTensor from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "matmul/tuning.hpp"

namespace gpumath::fuzz {

/// The program name of the compile-cache entries the target decodes.
inline constexpr const char* cache_entry_name = "fuzzed_entry";

/// The key of those entries.
inline const detail::Digest& cache_entry_key() {
    static const detail::Digest key = detail::key_hash("gpumath fuzz: compile cache entry");
    return key;
}

/// Makes a cache entry's payload size and checksum (header bytes 16 and 24) match its payload again.
inline void reseal_cache_entry(std::string& entry) {
    constexpr std::size_t header = 32;
    if (entry.size() < header) return;
    const std::uint64_t size = entry.size() - header;
    const std::uint64_t sum = detail::checksum64(entry.data() + header, size);
    std::memcpy(entry.data() + 16, &size, 8);
    std::memcpy(entry.data() + 24, &sum, 8);
}

/// The host tuning files are read for.
inline const detail::TuningHost& tuning_host() {
    static const detail::TuningHost host{"NVIDIA H200", "9.0", "130000"};
    return host;
}

/// A DLTensor as the DLPack target reads it from bytes: a 24-byte head (ndim as i8, dtype code,
/// bits and u16 lanes, device type as u8 and id as i8, u64 byte offset, u64 data address, a byte
/// saying whether strides follow), then ndim i64 extents and, with strides, ndim i64 strides. Bytes
/// past the input read as 0; ndim is capped at 64 extents held (the tensor still says ndim).
struct DLPackInput {
    int ndim = 0;
    std::uint8_t code = 0, bits = 0;
    std::uint16_t lanes = 0;
    int device_type = 0, device_id = 0;
    std::uint64_t byte_offset = 0, data = 0;
    bool has_strides = false;
    std::vector<std::int64_t> shape, strides;
};

/// Reads a DLPackInput from `bytes`.
inline DLPackInput read_dlpack_input(std::span<const std::uint8_t> bytes) {
    std::size_t at = 0;
    const auto take = [&](void* out, std::size_t n) {
        std::memset(out, 0, n);
        const std::size_t k = at < bytes.size() ? std::min(n, bytes.size() - at) : 0;
        if (k > 0) std::memcpy(out, bytes.data() + at, k);
        at += n;
    };
    DLPackInput in;
    std::int8_t ndim = 0, id = 0;
    std::uint8_t type = 0, strides = 0;
    take(&ndim, 1);
    take(&in.code, 1);
    take(&in.bits, 1);
    take(&in.lanes, 2);
    take(&type, 1);
    take(&id, 1);
    take(&in.byte_offset, 8);
    take(&in.data, 8);
    take(&strides, 1);
    in.ndim = ndim;
    in.device_type = type;
    in.device_id = id;
    in.has_strides = (strides & 1) != 0;
    const std::size_t held = std::size_t(std::clamp(in.ndim, 0, 64));
    in.shape.resize(held);
    for (std::int64_t& e : in.shape) take(&e, 8);
    if (in.has_strides) {
        in.strides.resize(held);
        for (std::int64_t& s : in.strides) take(&s, 8);
    }
    return in;
}

/// The bytes read_dlpack_input reads `in` from.
inline std::string write_dlpack_input(const DLPackInput& in) {
    std::string out;
    const auto put = [&](const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); };
    const auto ndim = std::int8_t(in.ndim), id = std::int8_t(in.device_id);
    const auto type = std::uint8_t(in.device_type), strides = std::uint8_t(in.has_strides ? 1 : 0);
    put(&ndim, 1);
    put(&in.code, 1);
    put(&in.bits, 1);
    put(&in.lanes, 2);
    put(&type, 1);
    put(&id, 1);
    put(&in.byte_offset, 8);
    put(&in.data, 8);
    put(&strides, 1);
    for (const std::int64_t e : in.shape) put(&e, 8);
    if (in.has_strides)
        for (const std::int64_t s : in.strides) put(&s, 8);
    return out;
}

}  // namespace gpumath::fuzz
