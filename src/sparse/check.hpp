// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: the content check (kernels/check.cu) for the other parts of the module, as
// one blocking call (for plan time: plan(), an operation asked to validate) or as an enqueue and a
// verdict apart, and the kernel program for its compile test.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/sparse/matrix.hpp>

#include "sparse/kernels/check_params.hpp"

namespace gpumath::detail {

/// The text of kernels/check.cu, its options (its parameter header in memory; `arch` empty) and
/// the name expressions of its kernels.
[[nodiscard]] std::string_view sparse_check_source();
[[nodiscard]] core::ProgramOptions sparse_check_options();
[[nodiscard]] std::vector<std::string> sparse_check_names();

/// The names of `matrix`'s arrays as InvalidSparseData reports them: (offsets, COO row indices,
/// indices), e.g. ("row_offsets", "", "col_indices") for CSR.
[[nodiscard]] std::array<const char*, 3> sparse_array_names(sparse::Format format) noexcept;

/// Enqueues the check of `matrix` on `stream`: fills `result` (kernels::sparse_slot_count
/// unsigned long long in device memory) with all ones, then the kernel. Does not synchronize.
void enqueue_sparse_check(const sparse::MatrixView& matrix, bool sorted, unsigned long long* result,
                          core::StreamRef stream);

/// Throws InvalidSparseData, naming `api`, for the first bad entry in `result` (copied to the host
/// after enqueue_sparse_check ran); nothing when every slot is all ones.
void throw_sparse_check_result(const sparse::MatrixView& matrix, const unsigned long long* result, const char* api);

/// The whole blocking check as sparse::check does it, errors naming `api`: InvalidArgument for an
/// empty view or a capturing `stream`, InvalidSparseData for bad content, CudaError.
void check_sparse_content(const sparse::MatrixView& matrix, bool sorted, core::StreamRef stream, const char* api);

}  // namespace gpumath::detail
