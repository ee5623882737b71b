// SPDX-License-Identifier: Apache-2.0
/// @file
/// Sparse times sparse on cuSPARSE (SpGEMM): the SpGEMM plan, which finds the product's pattern
/// once and recomputes its values as often as asked, and the stateless sparse::spgemm.
#pragma once

#include <cstdint>
#include <memory>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/sparse/matrix.hpp>

namespace gpumath::detail {
struct SpGEMMImpl;
}  // namespace gpumath::detail

namespace gpumath::sparse {

/// Options of a SpGEMM plan.
struct SpGEMMOptions {
    /// Where cuSPARSE's buffers are allocated (null: the current device's pool). The product itself
    /// comes from the current device's pool, as Matrix::allocate's arrays do.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// A planned product C = A·B of two CSR matrices on cuSPARSE's structure-reuse SpGEMM.
///
/// Rules, checked by the constructor before any CUDA call (InvalidArgument, or NotSupported where
/// cuSPARSE cannot): A and B are non-empty CSR views (convert other formats with sparse::to_csr)
/// of one matrix each, with i32 indices (cuSPARSE's SpGEMM takes 32-bit indices), one value dtype
/// among f32, f64, c32 and c64, and `a.cols() == b.rows()`.
///
/// `plan(stream)` runs the symbolic phase on `stream`: it finds C's pattern, reads C's nnz on the
/// host (it synchronizes `stream` once), allocates C (a CSR Matrix with A's index dtype) and keeps
/// cuSPARSE's buffers for the numeric phase. `execute(stream)` then computes C's values from the
/// values A's and B's arrays hold when it runs: write new values into the same arrays (same
/// patterns) and execute again. `execute` allocates nothing and never synchronizes, so it may be
/// captured into a CUDA graph once planned.
///
/// The plan reads A's and B's arrays where they were when it was made: they must outlive it.
/// Calls on one plan are serialized on the host; work of one plan must not run on two streams at
/// once (its buffers are shared): order such streams, or make a plan per stream. Destroy a plan
/// (and C with it) only once the work it enqueued has finished. Move-only; a moved-from plan
/// throws InvalidArgument from its methods.
class SpGEMM {
public:
    /// Checks A and B (see the class) and keeps their views. No GPU work.
    SpGEMM(const MatrixView& a, const MatrixView& b, const SpGEMMOptions& options = {});
    ~SpGEMM();
    /// Moves the plan; the moved-from plan is empty.
    SpGEMM(SpGEMM&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    SpGEMM& operator=(SpGEMM&&) noexcept;
    SpGEMM(const SpGEMM&) = delete;
    SpGEMM& operator=(const SpGEMM&) = delete;

    /// The symbolic phase on `stream` (see the class): blocking, idempotent, thread-safe; refused
    /// (InvalidArgument) while `stream` captures a CUDA graph. CusparseError, CudaError.
    void plan(core::StreamRef stream = core::current_stream());
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Computes C's values, C = A·B, on `stream` (plans first when not planned, outside a capture).
    /// InvalidArgument on a device other than the plan's. CusparseError.
    void execute(core::StreamRef stream = core::current_stream());

    /// The product C (CSR, A's index dtype and value dtype, rows of A × columns of B): an empty view
    /// before `plan()`. Its values are C = A·B once an `execute` has run. Lives as long as the plan.
    [[nodiscard]] const MatrixView& result() const;
    /// Stored entries of C (-1 before `plan()`).
    [[nodiscard]] std::int64_t nnz() const noexcept;
    /// The options the plan was made with (default SpGEMMOptions when moved from).
    [[nodiscard]] const SpGEMMOptions& options() const noexcept;

    /// Moves C out of the plan (an empty Matrix before `plan()`); the plan is empty afterwards. The
    /// plan's buffers are freed in stream order after the last `execute`, on its stream (which must
    /// still exist).
    [[nodiscard]] Matrix release_result() &&;

private:
    [[nodiscard]] gpumath::detail::SpGEMMImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::SpGEMMImpl> impl_;
};

/// C = A·B for CSR matrices A and B (the rules of SpGEMM), as a new CSR Matrix allocated on
/// `stream`. Blocking: the product's nnz must reach the host before C can be allocated, so this
/// synchronizes `stream` once (and cannot be captured into a CUDA graph). No plan is cached: the
/// symbolic phase depends on the patterns' content, not only on their sizes; keep a SpGEMM plan to
/// recompute a product with new values.
[[nodiscard]] Matrix spgemm(const MatrixView& a, const MatrixView& b, core::StreamRef stream = core::current_stream(),
                            const SpGEMMOptions& options = {});

}  // namespace gpumath::sparse
