// SPDX-License-Identifier: Apache-2.0
/// @file
/// Symmetric and Hermitian eigendecomposition on cuSOLVER: the stateful Eigh plan.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>

namespace gpumath::detail {
struct EighImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// A planned eigendecomposition A·V = V·Λ of symmetric (Hermitian) matrices of one layout:
/// eigenvalues in ascending order, and, with `options.vectors`, orthonormal eigenvectors as the
/// columns of V. Move-only; a moved-from plan may only be destroyed or assigned to (its methods
/// throw InvalidArgument, its accessors report an empty plan).
///
/// The layout is `(..., n, n)` of f32, f64, c32 or c64, any leading batch dimensions, any strides;
/// only `options.triangle` of A is read. The constructor validates only (no GPU work). `plan()`
/// sizes the workspace on the current device and, for Backend::automatic and more than one matrix,
/// measures the backends once per (n, batch, dtype, device) (it then blocks on a private stream).
///
/// `options.range` computes some of the eigenvalues (EighRange::index: the k of ascending
/// positions first to last; EighRange::value: those in (low, high]) with cuSOLVER's Xsyevdx once
/// per matrix (Backend::looped only). Xsyevdx returns the number it found to the host, so a range
/// blocks the calling thread until the stream has run the decomposition, and refuses a capturing
/// stream with NotSupported.
///
/// `execute` enqueues on the caller's stream, never synchronizes (ranges aside), and leaves A
/// untouched unless `vectors` is A itself. Planned with Backend::batched, Backend::warp or
/// Backend::jacobi_batched (n ≤ 32; warp copies nothing) it may be captured into a CUDA graph
/// (jacobi_batched reads its Jacobi parameters on the host when called, not when replayed); the
/// looped backend (cuSOLVER's syevd, which waits on the host inside) refuses a capturing stream
/// with NotSupported before any work.
class Eigh {
public:
    /// Plans the decomposition of matrices laid out as `a`. InvalidArgument for a rank below 2,
    /// non-square matrices, an enum value outside its enumerators, a range's bounds out of order or
    /// outside 0..n-1 (index) or NaN (value), or bounds given for another range; NotSupported for
    /// other dtypes, for a range with a backend other than looped or automatic, and for
    /// Backend::jacobi_batched with n > 32.
    explicit Eigh(const TensorLayout& a, const EighOptions& options = {});
    ~Eigh();
    /// Moves the plan; the moved-from plan is empty.
    Eigh(Eigh&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    Eigh& operator=(Eigh&&) noexcept;
    Eigh(const Eigh&) = delete;
    Eigh& operator=(const Eigh&) = delete;

    /// Sizes the workspace and chooses the backend on the current device now (idempotent,
    /// thread-safe; implicit on the first execute). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Decomposes `a` on `stream`. `values` has `values_layout()`'s shape and dtype (`(..., n)`, or
    /// `(..., k)` for an index range, of A's real dtype: f32 for f32 and c32, f64 for f64 and c64),
    /// any strides. `vectors` has `vectors_layout()`'s shape and dtype, any strides, and may be `a`
    /// itself when it has A's shape; pass an empty view (`TensorView{}`) when the plan has no
    /// vectors. `info` is a contiguous i32 tensor of the batch shape (`info_layout()`): 0, or
    /// positive when the algorithm did not converge. No output may overlap another or `a` (except
    /// `vectors` being `a`): InvalidArgument before any GPU work. A is copied to `vectors` (or to
    /// workspace without vectors, for an index range, or when `vectors` does not have unit stride
    /// along its columns and one stride between matrices) because cuSOLVER overwrites it. A plan of
    /// EighRange::value needs the overload with `counts`.
    void execute(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                 core::StreamRef stream = core::current_stream());
    /// As the overload above, and for EighRange::value (the only range that takes it, InvalidArgument
    /// otherwise) writes to `counts`, a contiguous i32 tensor of the batch shape, how many
    /// eigenvalues of each matrix lie in (low, high]: that many leading entries of `values` and
    /// columns of `vectors` hold them, and the rest are set to NaN.
    void execute(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                 const TensorView& counts, core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `values` must have (shape and dtype; strides free): `(..., n)` of A's real dtype,
    /// `(..., k)` for EighRange::index.
    [[nodiscard]] const TensorLayout& values_layout() const noexcept;
    /// The layout `vectors` must have (shape and dtype; strides free): A's, `(..., n, k)` for
    /// EighRange::index.
    [[nodiscard]] const TensorLayout& vectors_layout() const noexcept;
    /// The layout `info` (and, for EighRange::value, `counts`) must have: i32 of A's batch shape
    /// (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default EighOptions when moved from).
    [[nodiscard]] const EighOptions& options() const noexcept;
    /// The backend that runs the batch: `options().backend` until planned, then the one chosen.
    [[nodiscard]] Backend backend() const noexcept;
    /// Bytes of workspace one execution takes at most (0 before `plan()` or when moved from).
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::EighImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::EighImpl> impl_;
};

}  // namespace gpumath::linalg
