// SPDX-License-Identifier: Apache-2.0
/// @file
/// QR factorization and least squares on cuSOLVER: the QR and LeastSquares plans and the stateless
/// qr and lstsq.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::detail {
struct QRImpl;
struct LeastSquaresImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// Which Q a QR plan forms and what the stateless `qr` returns, as numpy.linalg.qr's `mode`
/// (k = min(m, n)).
enum class QRMode : std::uint8_t {
    reduced,   ///< Q `(..., m, k)` with orthonormal columns and R `(..., k, n)`.
    complete,  ///< Q `(..., m, m)` unitary and R `(..., m, n)` (rows past n zero).
    r          ///< R `(..., k, n)` alone: Q is not formed.
};

/// Number of QRMode enumerators.
inline constexpr int qr_mode_count = 3;

/// The side Q multiplies C from in QR::apply_q.
enum class Side : std::uint8_t {
    left,  ///< op(Q)·C, C of m rows.
    right  ///< C·op(Q), C of m columns.
};

/// Number of Side enumerators.
inline constexpr int side_count = 2;

/// "reduced", "complete" or "r" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(QRMode m) noexcept {
    switch (m) {
        case QRMode::reduced:
            return "reduced";
        case QRMode::complete:
            return "complete";
        case QRMode::r:
            return "r";
    }
    return "?";
}

/// "left" or "right" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(Side s) noexcept {
    switch (s) {
        case Side::left:
            return "left";
        case Side::right:
            return "right";
    }
    return "?";
}

/// Options of a QR factorization (QR, qr).
struct QROptions {
    /// The Q `form_q` forms (and `qr` returns): reduced, complete, or none (QRMode::r).
    QRMode mode = QRMode::reduced;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// How QR::apply_q multiplies: op(Q)·C or C·op(Q), op(Q) being Q or Qᴴ.
struct ApplyQOptions {
    /// The side Q multiplies from.
    Side side = Side::left;
    /// Multiply by Qᴴ (Qᵀ for real dtypes) instead of Q.
    bool adjoint = false;
};

/// Options of a least-squares solve (LeastSquares, lstsq).
struct LeastSquaresOptions {
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// A planned QR factorization A = Q·R of m × n matrices of one layout, by Householder reflections
/// (cuSOLVER's Xgeqrf), with Q formed explicitly (orgqr / ungqr) or applied to other matrices
/// (ormqr / unmqr). Move-only; a moved-from plan may only be destroyed or assigned to (its methods
/// throw InvalidArgument, its accessors report an empty plan).
///
/// The layout is `(..., m, n)` of f32, f64, c32 or c64, any m and n (0 included), any leading batch
/// dimensions, any strides; k = min(m, n). The constructor validates only (no GPU work); `plan()`
/// sizes the workspace on the current device. `factorize`, `form_q` and `apply_q` enqueue on the
/// caller's stream, never synchronize, and may be captured into a CUDA graph once planned. The
/// matrices of a batch run one after another on the caller's stream and up to four side streams.
///
/// `form_q` and `apply_q` run cuSOLVER's legacy routines, whose sizes are int: a call whose m, k,
/// Q's or C's columns are above INT_MAX is NotSupported, naming the limit (`factorize` runs the
/// 64-bit API and has no such limit).
class QR {
public:
    /// Plans the factorization of matrices laid out as `a`. InvalidArgument for a rank below 2 or
    /// an enum value outside its enumerators; NotSupported for other dtypes.
    explicit QR(const TensorLayout& a, const QROptions& options = {});
    ~QR();
    /// Moves the plan; the moved-from plan is empty.
    QR(QR&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    QR& operator=(QR&&) noexcept;
    QR(const QR&) = delete;
    QR& operator=(const QR&) = delete;

    /// Sizes the workspace on the current device now (idempotent, thread-safe; implicit on the
    /// first call). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Factorizes `a` into `qr` and `tau` on `stream`, as LAPACK's geqrf stores it: R on and above
    /// the diagonal of `qr`, the Householder vectors below it (their unit leading elements implied),
    /// their scalars in `tau`. `qr` has `a`'s shape and dtype with any strides, and may be `a` itself
    /// (in place); otherwise it must not overlap `a`, and `a` is copied to it first. `tau` is a
    /// contiguous tensor `(..., k)` of A's dtype (`tau_layout()`). In place, with no copy, when `qr`
    /// is column-major (unit stride down its columns, one stride between matrices); otherwise through
    /// a workspace copy (a row-major `qr` holds Aᵀ in column-major order, whose QR is not A's).
    void factorize(const TensorView& a, const TensorView& qr, const TensorView& tau,
                   core::StreamRef stream = core::current_stream());

    /// Forms Q from the factorization `factorize` wrote (`qr` and `tau`) into `q` (`q_layout()`:
    /// `(..., m, k)` for QRMode::reduced, `(..., m, m)` for QRMode::complete; any strides) on
    /// `stream`. `q` may be `qr` itself when their shapes agree (reduced, m ≥ n: R is then lost);
    /// otherwise it must not overlap `qr` or `tau`. The reflectors are copied into `q` (one copy of
    /// min(n, q's columns) columns) and Q formed there when `q` is column-major, else in workspace
    /// and copied out. InvalidArgument for a plan of QRMode::r, which forms no Q.
    void form_q(const TensorView& qr, const TensorView& tau, const TensorView& q,
                core::StreamRef stream = core::current_stream());

    /// `out` = op(Q)·C (`how.side` left; `c` is `(..., m, p)` or `(..., m)`) or C·op(Q) (right;
    /// `c` is `(..., p, m)`), op(Q) = Qᴴ when `how.adjoint`, from the factorization `factorize`
    /// wrote, on `stream`; Q is the complete m × m matrix. `out` has `c`'s shape and dtype with any
    /// strides, and may be `c` itself; otherwise it must not overlap `c`. Neither may overlap `qr`
    /// or `tau`. Without a copy when `out` is column-major, or row-major of a real dtype (the other
    /// side is applied to its transpose); otherwise through workspace. `qr` is read where it is
    /// when column-major, else its first k columns are copied to workspace.
    void apply_q(const TensorView& qr, const TensorView& tau, const TensorView& c, const TensorView& out,
                 const ApplyQOptions& how = {}, core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `tau` must have: `(..., k)` of A's dtype, contiguous.
    [[nodiscard]] const TensorLayout& tau_layout() const noexcept;
    /// The shape and dtype `form_q`'s `q` must have (strides free): `(..., m, m)` for
    /// QRMode::complete, else `(..., m, k)`.
    [[nodiscard]] const TensorLayout& q_layout() const noexcept;
    /// The options the plan was made with (default QROptions when moved from).
    [[nodiscard]] const QROptions& options() const noexcept;
    /// Bytes of workspace one factorization of a column-major `qr` takes at most (0 before `plan()`
    /// or when moved from); copies through workspace take more.
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::QRImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::QRImpl> impl_;
};

/// A planned least-squares solve of A·X ≈ B for m × n matrices A of one layout, by QR: for m ≥ n,
/// the X minimizing ‖A·X − B‖ (A = Q·R, X = R⁻¹·(QᴴB)'s first n rows); for m < n, the X of least
/// norm with A·X = B (Aᴴ = Q·R, X = Q·R⁻ᴴ·B). A is taken to have full rank (n for m ≥ n, m for
/// m < n); where it does not, R has a zero on its diagonal, and `info` says so. Move-only; a
/// moved-from plan may only be destroyed or assigned to.
///
/// The layout is `(..., m, n)` of f32, f64, c32 or c64, any leading batch dimensions, any strides;
/// m and n at most INT_MAX (the Householder application is a legacy routine of int sizes:
/// NotSupported above). The constructor validates only (no GPU work); `plan()` sizes the
/// workspace on the current device. `execute` enqueues on the caller's stream, never synchronizes,
/// and may be captured into a CUDA graph once planned.
class LeastSquares {
public:
    /// Plans solves with matrices laid out as `a`. InvalidArgument for a rank below 2;
    /// NotSupported for other dtypes and for m or n above INT_MAX.
    explicit LeastSquares(const TensorLayout& a, const LeastSquaresOptions& options = {});
    ~LeastSquares();
    /// Moves the plan; the moved-from plan is empty.
    LeastSquares(LeastSquares&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    LeastSquares& operator=(LeastSquares&&) noexcept;
    LeastSquares(const LeastSquares&) = delete;
    LeastSquares& operator=(const LeastSquares&) = delete;

    /// Sizes the workspace on the current device now (idempotent, thread-safe; implicit on the
    /// first execute). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Solves on `stream`. `b` is `(..., m, p)` or `(..., m)` with A's batch shape and dtype; `x`
    /// is `(..., n, p)` or `(..., n)` (b's rank) of A's dtype, any strides, and may be `b` itself
    /// when m = n. `residuals`, when given (else pass `TensorView{}`), is a contiguous tensor
    /// `(..., p)` (or of the batch shape for a vector `b`) of A's real dtype: ‖A·x − b‖ for every
    /// column, from the last m − n entries of Qᴴ·b (0 when m ≤ n: the system is solved exactly).
    /// `info` is a contiguous i32 tensor of the batch shape (`info_layout()`): 0, or the 1-based
    /// index of the first exact zero on R's diagonal (A rank deficient: that matrix's x and
    /// residuals are not meaningful). No output may overlap an input or another output
    /// (InvalidArgument). A and B are copied to workspace (cuSOLVER overwrites them), and X is
    /// copied out of it: A and B are never written.
    void execute(const TensorView& a, const TensorView& b, const TensorView& x, const TensorView& residuals,
                 const TensorView& info, core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `info` must have: i32 of A's batch shape (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default LeastSquaresOptions when moved from).
    [[nodiscard]] const LeastSquaresOptions& options() const noexcept;

private:
    [[nodiscard]] gpumath::detail::LeastSquaresImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::LeastSquaresImpl> impl_;
};

/// The factors of a QR factorization, as numpy.linalg.qr returns them.
struct QRResult {
    /// Q, row-major: `(..., m, k)` (QRMode::reduced), `(..., m, m)` (complete), empty (QRMode::r).
    Tensor q;
    /// R, row-major, upper triangular (zeros below the diagonal): `(..., k, n)`, or `(..., m, n)`
    /// for QRMode::complete.
    Tensor r;
};

/// A least-squares solution with each matrix's status.
struct LstsqResult {
    /// X, row-major: `(..., n, p)`, or `(..., n)` for a vector b.
    Tensor x;
    /// ‖A·x − b‖ per column, row-major `(..., p)` (or of the batch shape) of A's real dtype; zeros
    /// when m ≤ n.
    Tensor residuals;
    /// i32 of A's batch shape: 0, or the 1-based index of the first zero on R's diagonal (A rank
    /// deficient).
    Tensor info;
    /// `check_info(info, "linalg::lstsq", stream)`: blocks, throws NumericalError for a rank
    /// deficient matrix.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The QR factorization of each matrix of `a` (see QR) in new tensors allocated on `stream` from
/// `options.memory_resource`, through the plan cache. A is factorized in a column-major workspace
/// copy; Q is formed there and copied out, R copied out with zeros below its diagonal.
/// InvalidArgument / NotSupported as QR (and as form_q for sizes above INT_MAX), before any CUDA
/// call.
[[nodiscard]] QRResult qr(const TensorView& a, const QROptions& options = {},
                          core::StreamRef stream = core::current_stream());

/// The least-squares (m ≥ n) or least-norm (m < n) solution X of A·X ≈ B for each matrix of `a`
/// and `b` (`(..., m, p)` or `(..., m)`, A's batch shape and dtype; see LeastSquares), with the
/// residual norms and each matrix's `info`, in new tensors allocated on `stream`, through the plan
/// cache. Does not check `info`: call the result's `check()` (it synchronizes). InvalidArgument /
/// NotSupported as LeastSquares, before any CUDA call.
[[nodiscard]] LstsqResult lstsq(const TensorView& a, const TensorView& b, const LeastSquaresOptions& options = {},
                                core::StreamRef stream = core::current_stream());

}  // namespace gpumath::linalg
