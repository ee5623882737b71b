// SPDX-License-Identifier: Apache-2.0
/// @file
/// General (non-symmetric) eigendecomposition on cuSOLVER: the stateful Eig plan and the stateless
/// eig.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::detail {
struct EigImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// A planned eigendecomposition A·V = V·diag(w) of general square matrices of one layout, on
/// cuSOLVER's Xgeev: complex eigenvalues w (for a real A they come as conjugate pairs, the one
/// with the positive imaginary part first, in no other order) and, as `options.vectors` asks,
/// right eigenvectors as the columns of V, each of Euclidean norm 1 with its largest component
/// real. Move-only; a moved-from plan may only be destroyed or assigned to (its methods throw
/// InvalidArgument, its accessors report an empty plan).
///
/// The layout is `(..., n, n)` of f32, f64, c32 or c64, any leading batch dimensions, any strides.
/// The constructor validates only (no GPU work); `plan()` sizes the workspace on the current
/// device. `execute` enqueues on the caller's stream and leaves A untouched (it is copied to
/// workspace, because cuSOLVER overwrites it). The matrices run one Xgeev each, one after another
/// on the caller's stream. Xgeev works on the host as well as on the GPU and waits for the GPU
/// inside, so the calling thread waits for each matrix in turn and a capturing stream is refused
/// with NotSupported before any work.
class Eig {
public:
    /// Plans the decomposition of matrices laid out as `a`. InvalidArgument for a rank below 2,
    /// non-square matrices, an enum value outside its enumerators, and `EigVectors::real_packed`
    /// for complex matrices; NotSupported for other dtypes and for Backend::batched.
    explicit Eig(const TensorLayout& a, const EigOptions& options = {});
    ~Eig();
    /// Moves the plan; the moved-from plan is empty.
    Eig(Eig&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    Eig& operator=(Eig&&) noexcept;
    Eig(const Eig&) = delete;
    Eig& operator=(const Eig&) = delete;

    /// Sizes the workspace on the current device now (idempotent, thread-safe; implicit on the
    /// first execute). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Decomposes `a` on `stream`. `values` is `(..., n)` of the complex dtype (`values_layout()`),
    /// any strides. `vectors` has `vectors_layout()`'s shape and dtype (c32 / c64 for
    /// EigVectors::complex, A's real dtype for `real_packed`), any strides; pass an empty view
    /// (`TensorView{}`) for EigVectors::none. `info` is a contiguous i32 tensor of the batch shape
    /// (`info_layout()`): 0, or i > 0 when the QR algorithm failed, eigenvalues i + 1 to n being
    /// the ones that converged (1-based). No output may overlap another or `a`: InvalidArgument
    /// before any GPU work; NotSupported when `stream` is capturing a CUDA graph.
    void execute(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                 core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `values` must have (shape and dtype; strides free): `(..., n)`, complex.
    [[nodiscard]] const TensorLayout& values_layout() const noexcept;
    /// The layout `vectors` must have (shape and dtype; strides free): A's shape, c32 / c64 for
    /// EigVectors::complex, A's dtype for `real_packed`; rank 0 for EigVectors::none.
    [[nodiscard]] const TensorLayout& vectors_layout() const noexcept;
    /// The layout `info` must have: i32 of A's batch shape (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default EigOptions when moved from).
    [[nodiscard]] const EigOptions& options() const noexcept;
    /// Bytes of device workspace one execution takes at most with column-major or packed
    /// operands (0 before `plan()` or when moved from).
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::EigImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::EigImpl> impl_;
};

/// Eigenvalues (and right eigenvectors) of general matrices with each matrix's status.
struct EigResult {
    /// `(..., n)` of the complex dtype (c32 for f32 and c32, c64 for f64 and c64).
    Tensor values;
    /// A's shape, row-major, eigenvectors as columns: complex, or A's real dtype for
    /// EigVectors::real_packed; empty for EigVectors::none.
    Tensor vectors;
    /// i32 of A's batch shape: 0, or i > 0 when the QR algorithm failed (eigenvalues i + 1 to n
    /// converged).
    Tensor info;
    /// `check_info(info, "linalg::eig", stream)`: blocks, throws NumericalError on a failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The eigenvalues and, as `options.vectors` asks, right eigenvectors of each matrix of `a` (see
/// Eig), in new tensors allocated on `stream` from `options.memory_resource`, through the plan
/// cache. Waits on the host for each matrix as Xgeev does; refuses a capturing stream
/// (NotSupported). Does not check `info`: call the result's `check()`. InvalidArgument /
/// NotSupported as Eig, before any CUDA call.
[[nodiscard]] EigResult eig(const TensorView& a, const EigOptions& options = {},
                            core::StreamRef stream = core::current_stream());

}  // namespace gpumath::linalg
