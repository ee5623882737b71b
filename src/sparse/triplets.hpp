// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: the host side of sparse::from_triplets, apart from any CUDA call so that
// tests can check it without a GPU. Triplets (row, col, value) become a sorted pattern without
// duplicates: an order of the triplets grouped by output entry, and the arrays of the format.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <gpumath/sparse/matrix.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// How triplets become a sparse matrix of one format. Output entry k (a block for BSR) sums the
/// values of the triplets order[starts[k]] .. order[starts[k + 1] - 1].
struct TripletAssembly {
    sparse::Format format = sparse::Format::csr;
    std::int64_t rows = 0, cols = 0, block = 1;
    /// CSR row offsets, CSC column offsets, BSR block-row offsets (major + 1); empty for COO.
    std::vector<std::int64_t> offsets;
    /// COO row index of each entry; empty for the other formats.
    std::vector<std::int64_t> row_indices;
    /// CSR/COO column, CSC row, BSR block-column index of each entry.
    std::vector<std::int64_t> indices;
    /// The triplets' positions, grouped by output entry (sorted by entry, then by position).
    std::vector<std::int64_t> order;
    /// Where each entry's group starts in `order` (entries + 1).
    std::vector<std::int64_t> starts;

    /// Output entries (blocks for BSR).
    [[nodiscard]] std::int64_t stored() const noexcept { return std::int64_t(indices.size()); }
};

/// Sorts and groups the triplets (row_idx[i], col_idx[i]): row-major order for CSR and COO,
/// column-major for CSC, block-row-major for BSR (`block` × `block` blocks). InvalidArgument, naming
/// `api` and the triplet position, for an index outside the matrix or arrays of different lengths;
/// for a bad format, shape or block.
[[nodiscard]] TripletAssembly assemble_triplets(std::int64_t rows, std::int64_t cols,
                                                std::span<const std::int64_t> row_idx,
                                                std::span<const std::int64_t> col_idx, sparse::Format format,
                                                std::int64_t block, const char* api);

/// The values of the assembled matrix (stored() · block² elements of `type`, f32, f64, c32 or c64)
/// into `out`: duplicates summed, BSR blocks row-major and zero where no triplet falls.
/// `values` holds one element of `type` per triplet; `row_idx` and `col_idx` are the triplets given
/// to assemble_triplets.
void sum_triplet_values(const TripletAssembly& assembly, std::span<const std::int64_t> row_idx,
                        std::span<const std::int64_t> col_idx, const void* values, DataType type, void* out);

}  // namespace gpumath::detail
