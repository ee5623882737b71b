// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: autotuning and tuning files.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "matmul/internal.hpp"

namespace gpumath::detail {

/// One remembered algorithm: the plan key it was tuned for and cuBLASLt's algorithm bytes.
struct TuningEntry {
    MatmulKey key;
    cublasLtMatmulAlgo_t algo{};
};

/// Times every candidate of `plan` on the operands (median of `iterations` runs, L2 flushed
/// before each run), then orders the candidates fastest first. Blocking.
void autotune_plan(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                   const MatmulArgs& args, core::StreamRef stream, int iterations);

/// Adds (or replaces) the entry of `plan`'s selected algorithm in the tuning file at `path`.
void save_tuning_entry(const std::string& path, const MatmulPlan& plan);

/// The entries of the tuning file at `path` that were saved on a device like the current one
/// (same name and compute capability) with this cuBLASLt version. A missing file gives none; a
/// path that is not a regular file, or a file larger than `max_tuning_file_bytes`, is
/// InvalidArgument.
[[nodiscard]] std::vector<TuningEntry> read_tuning_entries(const std::string& path, const char* api);

/// A tuning file larger than this (64 MiB, tens of thousands of entries) is refused rather than
/// read, and save_tuning does not write one.
inline constexpr std::uintmax_t max_tuning_file_bytes = std::uintmax_t(64) << 20;

/// Where tuning entries count: a GPU name (tabs and line breaks as spaces), its compute
/// capability "9.0" and the cuBLASLt version number, as the file's first three fields hold them.
struct TuningHost {
    std::string name, cc, version;
};

/// What a tuning file's text holds for `host`: the entries saved there, and how many lines were
/// saved elsewhere (stale) or are not entries at all (malformed: too few fields, a key or
/// algorithm that is not exactly as gpumath writes it).
struct TuningText {
    std::vector<TuningEntry> entries;
    int stale = 0, malformed = 0;
};
[[nodiscard]] TuningText parse_tuning_text(std::istream& in, const TuningHost& host);

/// cuBLASLt's 64 algorithm bytes as 128 lowercase hex digits, and back: `hex_to_algo` accepts
/// exactly 128 lowercase hex digits (no sign, space, "0x" or capital).
[[nodiscard]] std::string algo_to_hex(const cublasLtMatmulAlgo_t& algo);
[[nodiscard]] bool hex_to_algo(const std::string& s, cublasLtMatmulAlgo_t& algo);

}  // namespace gpumath::detail
