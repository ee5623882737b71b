// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: autotuning and tuning files.
#pragma once

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

/// The entries of the tuning file at `path` that were saved on a device like `device` (same
/// name and compute capability) with this cuBLASLt version. A missing file gives none.
[[nodiscard]] std::vector<TuningEntry> read_tuning_entries(const std::string& path, const char* api);

}  // namespace gpumath::detail
