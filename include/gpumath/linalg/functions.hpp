// SPDX-License-Identifier: Apache-2.0
/// @file
/// The stateless calls of gpumath::linalg, on a plan cache, and the plan cache's controls.
#pragma once

#include <cstddef>
#include <string>

#include <gpumath/core/cache.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::linalg {

/// A Cholesky factor with each matrix's status.
struct CholeskyResult {
    /// The factor, row-major, of A's shape and dtype; the triangle not asked for is zero.
    Tensor factor;
    /// i32 of A's batch shape: 0, or the order of the leading minor that is not positive definite.
    Tensor info;
    /// `check_info(info, "linalg::cholesky", stream)`: blocks, throws NumericalError on a failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// Eigenvalues (and eigenvectors) with each matrix's status.
struct EighResult {
    /// `(..., n)` of A's real dtype, ascending (`(..., k)` for EighRange::index).
    Tensor values;
    /// A's shape and dtype, eigenvectors as columns (`(..., n, k)` for EighRange::index); empty
    /// without `options.vectors`.
    Tensor vectors;
    /// i32 of A's batch shape: 0, or positive when the algorithm did not converge.
    Tensor info;
    /// EighRange::value only (empty otherwise): i32 of A's batch shape, how many eigenvalues of each
    /// matrix lie in (low, high], the leading entries of `values` (columns of `vectors`); the rest
    /// are NaN.
    Tensor counts;
    /// `check_info(info, "linalg::eigh", stream)`: blocks, throws NumericalError on a failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The solution of A·X = B with each matrix's status.
struct SolveResult {
    /// X, row-major, of B's shape and dtype.
    Tensor x;
    /// i32 of A's batch shape: 0, or the 1-based index of the first zero pivot (A singular).
    Tensor info;
    /// `check_info(info, "linalg::solve", stream)`: blocks, throws NumericalError on a failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The inverse of each matrix with its status.
struct InverseResult {
    /// A⁻¹, row-major, of A's shape and dtype (meaningless where `info` is not 0).
    Tensor inverse;
    /// i32 of A's batch shape: 0, or the 1-based index of the first zero pivot (A singular).
    Tensor info;
    /// `check_info(info, "linalg::inv", stream)`: blocks, throws NumericalError on a failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The Cholesky factor of each matrix of `a` (see Cholesky), in new tensors allocated on `stream`
/// from `options.memory_resource`, through the plan cache. Does not check `info`: call the
/// result's `check()` (it synchronizes). InvalidArgument / NotSupported as Cholesky, before any
/// CUDA call.
[[nodiscard]] CholeskyResult cholesky(const TensorView& a, const CholeskyOptions& options = {},
                                      core::StreamRef stream = core::current_stream());

/// The eigenvalues and, with `options.vectors`, eigenvectors of each matrix of `a` (see Eigh), in
/// new tensors allocated on `stream`, through the plan cache; all of them, or `options.range`'s
/// (which blocks the calling thread: see Eigh). Does not check `info`: call the result's `check()`.
/// InvalidArgument / NotSupported as Eigh, before any CUDA call.
[[nodiscard]] EighResult eigh(const TensorView& a, const EighOptions& options = {},
                              core::StreamRef stream = core::current_stream());

/// The solution of A·X = B for each matrix of `a` (square, `(..., n, n)`) and `b` (`(..., n, k)` or
/// `(..., n)`, the same batch shape and dtype) by LU with partial pivoting (see LU), in new tensors
/// allocated on `stream`, through the plan cache. `b` is copied to X's column-major workspace and
/// back (X is row-major). Does not check `info`: call the result's `check()`.
[[nodiscard]] SolveResult solve(const TensorView& a, const TensorView& b, const LUOptions& options = {},
                                core::StreamRef stream = core::current_stream());

/// The inverse of each matrix of `a` by LU with partial pivoting (getrf, then getrs against the
/// identity), in new tensors allocated on `stream`, through the plan cache; no copy beyond A's into
/// the factor. Does not check `info`: call the result's `check()`.
[[nodiscard]] InverseResult inv(const TensorView& a, const LUOptions& options = {},
                                core::StreamRef stream = core::current_stream());

/// The determinant of each matrix of `a`, a new tensor of A's batch shape and dtype allocated on
/// `stream`: the product of U's diagonal from an LU factorization, its sign from the row
/// interchanges. A singular matrix gives 0 (not an error); the product is not rescaled, so it
/// overflows or underflows where the determinant does.
[[nodiscard]] Tensor det(const TensorView& a, const LUOptions& options = {},
                         core::StreamRef stream = core::current_stream());

/// Writes every backend Backend::automatic has chosen in this process (measured or loaded), for
/// every device model, to the file at `path`, replacing it atomically: a text file of one line per
/// (device model, operation, dtype, n, batch). InvalidArgument when something other than a regular
/// file is at `path`; Error when it cannot be written.
void save_backend_choices(const std::string& path);

/// Adds the choices of a file `save_backend_choices` wrote: a later plan of the same operation,
/// n, batch and dtype on a device of the same model takes the saved backend without measuring
/// (unless the plan cannot run that backend there: then it warns and measures).
/// Returns how many were read; 0 when nothing is at `path`. InvalidArgument, with nothing added,
/// for something other than a regular file of at most 16 MiB, or for a line that is not as
/// `save_backend_choices` writes them (naming the line).
std::size_t load_backend_choices(const std::string& path);

/// The process-wide, thread-safe LRU cache of plans behind the stateless linalg calls, reached
/// through `linalg_plan_cache()`. A plan is keyed by operation, device, layout and options.
class LinalgPlanCache final : public gpumath::detail::PlanCacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 256;

    LinalgPlanCache(const LinalgPlanCache&) = delete;
    LinalgPlanCache& operator=(const LinalgPlanCache&) = delete;
    LinalgPlanCache(LinalgPlanCache&&) = delete;
    LinalgPlanCache& operator=(LinalgPlanCache&&) = delete;

private:
    friend LinalgPlanCache& linalg_plan_cache();
    LinalgPlanCache();
    ~LinalgPlanCache() = default;
};

/// The process-wide linalg plan cache.
[[nodiscard]] LinalgPlanCache& linalg_plan_cache();

}  // namespace gpumath::linalg
