// SPDX-License-Identifier: Apache-2.0
/// @file
/// Sampled dense-dense products on cuSPARSE (SDDMM): C = α·(op(A)·op(B)) ∘ spy(C) + β·C, dense A and
/// B, the products computed only where the CSR matrix C stores an entry.
#pragma once

#include <complex>
#include <memory>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/operation.hpp>

namespace gpumath::detail {
struct SDDMMImpl;
}  // namespace gpumath::detail

namespace gpumath::sparse {

/// Options of an SDDMM plan.
struct SDDMMOptions {
    /// op(A): none or transpose (cuSPARSE's SDDMM has no conjugate transpose).
    Operation op_a = Operation::none;
    /// op(B): none or transpose.
    Operation op_b = Operation::none;
    /// Where cuSPARSE's buffer is allocated (null: the current device's pool).
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// A planned sampled dense-dense product C = α·(op(A)·op(B)) ∘ spy(C) + β·C: for every entry (i, j)
/// that C stores, C(i, j) = α·Σₗ op(A)(i, l)·op(B)(l, j) + β·C(i, j); C's pattern is unchanged.
///
/// Rules, checked by the constructor before any CUDA call (InvalidArgument): C is a non-empty CSR
/// view of one matrix (convert other formats with sparse::to_csr), i32 or i64 indices; A and B are
/// 2-D dense tensors, each row-major or column-major (any leading dimension), with C's value dtype
/// (f32, f64, c32 or c64); op(A) is C.rows() × k and op(B) is k × C.cols(); neither A nor B
/// overlaps C's arrays; the options' enums are in range and not conjugate_transpose.
///
/// `plan(stream)` sizes cuSPARSE's buffer and runs its preprocessing on `stream` (blocking).
/// `execute(alpha, beta, stream)` then computes C's values from what A, B and C hold when it runs:
/// it allocates nothing and never synchronizes, so it may be captured into a CUDA graph once
/// planned. The plan reads the arrays of A, B and C it was made with: they must outlive it. Calls on
/// one plan are serialized on the host; its work must not run on two streams at once (order them or
/// make a plan per stream). Destroy a plan once its work has finished. Move-only; a moved-from plan
/// throws InvalidArgument from its methods.
class SDDMM {
public:
    /// Checks the operands (see the class) and keeps their views. No GPU work.
    SDDMM(const TensorView& a, const TensorView& b, const MatrixView& c, const SDDMMOptions& options = {});
    ~SDDMM();
    /// Moves the plan; the moved-from plan is empty.
    SDDMM(SDDMM&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    SDDMM& operator=(SDDMM&&) noexcept;
    SDDMM(const SDDMM&) = delete;
    SDDMM& operator=(const SDDMM&) = delete;

    /// Sizes the buffer and preprocesses on `stream` (blocking, idempotent, thread-safe); refused
    /// (InvalidArgument) while `stream` captures a CUDA graph. CusparseError, CudaError.
    void plan(core::StreamRef stream = core::current_stream());
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// C = α·(op(A)·op(B)) ∘ spy(C) + β·C on `stream` (plans first when not planned, outside a
    /// capture). InvalidArgument for a scalar with an imaginary part in a real dtype, or on a device
    /// other than the plan's. CusparseError.
    void execute(std::complex<double> alpha = 1.0, std::complex<double> beta = 0.0,
                 core::StreamRef stream = core::current_stream());

    /// The options the plan was made with (default SDDMMOptions when moved from).
    [[nodiscard]] const SDDMMOptions& options() const noexcept;

private:
    [[nodiscard]] gpumath::detail::SDDMMImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::SDDMMImpl> impl_;
};

}  // namespace gpumath::sparse
