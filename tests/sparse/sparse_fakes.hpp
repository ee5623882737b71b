// SPDX-License-Identifier: Apache-2.0
// Sparse views over fake device addresses for the CPU validation tests: every rule they exercise
// is checked on the host, before any CUDA call, so the arrays are never dereferenced.
#pragma once

#include <cstddef>
#include <cstdint>

#include <gpumath/sparse/matrix.hpp>

namespace gpumath::sparse::fakes {

/// An address that is never dereferenced, each slot in its own 1 MiB range.
inline std::byte* fake(std::uintptr_t slot, std::uintptr_t offset = 0) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): fake addresses, never dereferenced
    return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + (slot << 20) + offset;
}

/// A rows × cols CSR view with `nnz` entries whose arrays live in slots base, base + 1, base + 2.
inline MatrixView csr(std::int64_t rows, std::int64_t cols, std::uintptr_t base, DataType vt,
                      DataType it = DataType::i32, std::int64_t nnz = 6) {
    return MatrixView::csr(rows, cols, TensorView(fake(base), it, {rows + 1}), TensorView(fake(base + 1), it, {nnz}),
                           TensorView(fake(base + 2), vt, {nnz}));
}

/// A rows × cols COO view with 6 entries whose arrays live in slots base, base + 1, base + 2.
inline MatrixView coo(std::int64_t rows, std::int64_t cols, std::uintptr_t base, DataType vt) {
    return MatrixView::coo(rows, cols, TensorView(fake(base), DataType::i32, {6}),
                           TensorView(fake(base + 1), DataType::i32, {6}), TensorView(fake(base + 2), vt, {6}));
}

}  // namespace gpumath::sparse::fakes
