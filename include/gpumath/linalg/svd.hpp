// SPDX-License-Identifier: Apache-2.0
/// @file
/// Singular value decomposition on cuSOLVER: the stateful SVD and TruncatedSVD plans and the
/// stateless `svd`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::detail {
struct SVDImpl;
struct TruncatedSVDImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// A planned singular value decomposition A = U·diag(S)·Vᴴ of m × n matrices of one layout, as
/// NumPy returns it: S real and descending, U with orthonormal columns, Vᴴ with orthonormal rows.
/// Move-only; a moved-from plan may only be destroyed or assigned to (its methods throw
/// InvalidArgument, its accessors report an empty plan).
///
/// The layout is `(..., m, n)` of f32, f64, c32 or c64, any m and n, any leading batch dimensions,
/// any strides. cuSOLVER's routines take m ≥ n, so a wide matrix is decomposed through its
/// transpose (Aᵀ = U'·S·V'ᴴ gives U = conj(V'), Vᴴ = U'ᵀ), with the roles of U and Vᴴ swapped in
/// memory rather than copied. The constructor validates only (no GPU work). `plan()` sizes the
/// workspace on the current device and, for Backend::automatic and more than one matrix, measures
/// the exact backends (looped, jacobi and, for m and n at most 32, batched) once per (job, m, n,
/// batch, dtype, device) (it then blocks on a private stream).
///
/// `execute` enqueues on the caller's stream and never synchronizes. Planned with Backend::batched
/// (gesvdjBatched) it may be captured into a CUDA graph; the other backends refuse a capturing
/// stream with NotSupported before any work (gpumath does not capture gesvd, gesvdj and
/// gesvdaStridedBatched, which may wait on the host inside).
class SVD {
public:
    /// Plans the decomposition of matrices laid out as `a`. InvalidArgument for a rank below 2, an
    /// enum value outside its enumerators, `options.rank` outside 0..min(m, n) or given to a
    /// backend other than `approximate`; NotSupported for other dtypes, `batched` with m or n above
    /// 32, `approximate` with SVDJob::full, and sizes above INT_MAX for the int routines (jacobi,
    /// batched, approximate).
    explicit SVD(const TensorLayout& a, const SVDOptions& options = {});
    ~SVD();
    /// Moves the plan; the moved-from plan is empty.
    SVD(SVD&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    SVD& operator=(SVD&&) noexcept;
    SVD(const SVD&) = delete;
    SVD& operator=(const SVD&) = delete;

    /// Sizes the workspace and chooses the backend on the current device now (idempotent,
    /// thread-safe; implicit on the first execute). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Decomposes `a` on `stream`. `u`, `s` and `vh` have the shapes and dtypes of `u_layout()`,
    /// `values_layout()` and `vh_layout()`, any strides; pass empty views (`TensorView{}`) for `u`
    /// and `vh` with SVDJob::values. `info` is a contiguous i32 tensor of the batch shape
    /// (`info_layout()`): 0, or positive when the iteration did not converge. No output may
    /// overlap another or `a`: InvalidArgument before any GPU work. `a` is never written: it is
    /// copied once into workspace in the orientation the routine takes (a plain device copy when
    /// it is already laid out so; `approximate` reads a packed column-major A in place). Outputs
    /// are written where they are when they are column-major in the routine's orientation with a
    /// leading dimension of their row count (and packed, for the batched routines); otherwise
    /// through workspace, copied out afterwards.
    void execute(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                 const TensorView& info, core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `s` must have (strides free): `(..., k)` of A's real dtype, k = min(m, n) (or
    /// `options.rank`).
    [[nodiscard]] const TensorLayout& values_layout() const noexcept;
    /// The layout `u` must have (strides free): `(..., m, k)`, or `(..., m, m)` with SVDJob::full.
    [[nodiscard]] const TensorLayout& u_layout() const noexcept;
    /// The layout `vh` must have (strides free): `(..., k, n)`, or `(..., n, n)` with SVDJob::full.
    [[nodiscard]] const TensorLayout& vh_layout() const noexcept;
    /// The layout `info` must have: i32 of A's batch shape (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default SVDOptions when moved from).
    [[nodiscard]] const SVDOptions& options() const noexcept;
    /// The backend that runs the batch: `options().backend` until planned, then the one chosen.
    [[nodiscard]] Backend backend() const noexcept;
    /// Bytes of device workspace one execution takes at most (0 before `plan()` or when moved
    /// from).
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::SVDImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::SVDImpl> impl_;
};

/// A planned truncated randomized SVD A ≈ U·diag(S)·Vᴴ of rank k (cuSOLVER's Xgesvdr, once per
/// matrix, spread over the caller's stream and side streams): the k largest singular values,
/// descending, and their vectors, accurate with high probability when the spectrum decays (more
/// oversampling or power iterations for one that decays slowly). Move-only, like SVD.
///
/// The layout is `(..., m, n)` of f32, f64, c32 or c64. A is copied into workspace (cuSOLVER
/// overwrites it), a wide matrix decomposed through its transpose as in SVD; the routine's outputs
/// are written to workspace and their first k columns copied out. `execute` enqueues on the
/// caller's stream, never synchronizes, and refuses a capturing stream with NotSupported (gpumath
/// does not capture gesvdr).
class TruncatedSVD {
public:
    /// Plans the rank-`rank` decomposition of matrices laid out as `a`. InvalidArgument for a rank
    /// below 2, `rank` outside 1..min(m, n), `options.oversampling` below -1 or with `rank` beyond
    /// min(m, n), `options.power_iterations` below 0; NotSupported for other dtypes.
    TruncatedSVD(const TensorLayout& a, std::int64_t rank, const TruncatedSVDOptions& options = {});
    ~TruncatedSVD();
    /// Moves the plan; the moved-from plan is empty.
    TruncatedSVD(TruncatedSVD&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    TruncatedSVD& operator=(TruncatedSVD&&) noexcept;
    TruncatedSVD(const TruncatedSVD&) = delete;
    TruncatedSVD& operator=(const TruncatedSVD&) = delete;

    /// Sizes the workspace on the current device now (idempotent, thread-safe; implicit on the
    /// first execute). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Decomposes `a` on `stream` into `u` `(..., m, k)`, `s` `(..., k)` of the real dtype and `vh`
    /// `(..., k, n)`, any strides (empty views for `u` and `vh` without `options.vectors`), and
    /// `info` (contiguous i32 of the batch shape). Operand rules as SVD::execute.
    void execute(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                 const TensorView& info, core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The rank k (0 when moved from).
    [[nodiscard]] std::int64_t rank() const noexcept;
    /// The oversampling used: `options().oversampling`, or its default resolved (0 when moved from).
    [[nodiscard]] std::int64_t oversampling() const noexcept;
    /// The layout `s` must have: `(..., k)` of A's real dtype.
    [[nodiscard]] const TensorLayout& values_layout() const noexcept;
    /// The layout `u` must have: `(..., m, k)`.
    [[nodiscard]] const TensorLayout& u_layout() const noexcept;
    /// The layout `vh` must have: `(..., k, n)`.
    [[nodiscard]] const TensorLayout& vh_layout() const noexcept;
    /// The layout `info` must have: i32 of A's batch shape.
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default TruncatedSVDOptions when moved from).
    [[nodiscard]] const TruncatedSVDOptions& options() const noexcept;
    /// Bytes of device workspace one execution takes at most (0 before `plan()` or when moved
    /// from).
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::TruncatedSVDImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::TruncatedSVDImpl> impl_;
};

/// A singular value decomposition with each matrix's status.
struct SVDResult {
    /// U, row-major: `(..., m, k)`, `(..., m, m)` with SVDJob::full; empty with SVDJob::values.
    Tensor u;
    /// The singular values, `(..., k)` of A's real dtype, descending.
    Tensor s;
    /// Vᴴ, row-major: `(..., k, n)`, `(..., n, n)` with SVDJob::full; empty with SVDJob::values.
    Tensor vh;
    /// i32 of A's batch shape: 0, or positive when the iteration did not converge.
    Tensor info;
    /// `check_info(info, "linalg::svd", stream)`: blocks, throws NumericalError on a failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The singular value decomposition of each matrix of `a` (see SVD), in new tensors allocated on
/// `stream` from `options.memory_resource`, through the plan cache. Does not check `info`: call
/// the result's `check()` (it synchronizes). InvalidArgument / NotSupported as SVD, before any
/// CUDA call.
[[nodiscard]] SVDResult svd(const TensorView& a, const SVDOptions& options = {},
                            core::StreamRef stream = core::current_stream());

}  // namespace gpumath::linalg
