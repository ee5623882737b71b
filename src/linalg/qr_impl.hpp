// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the state of the QR and LeastSquares plans, and the shapes of a
// least-squares call (used by the plan and by the stateless lstsq).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <gpumath/linalg/qr.hpp>

#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {

/// Column-major matrices where cuSOLVER works on them: element (i, j) of matrix b at
/// `data + (b * batch_stride + i + j * ld)` elements of `elem` bytes.
struct SolverMatrices {
    std::byte* data = nullptr;
    std::int64_t ld = 0;
    std::int64_t batch_stride = 0;
    std::size_t elem = 0;

    [[nodiscard]] std::byte* at(std::int64_t b) const noexcept { return data + b * batch_stride * std::int64_t(elem); }
};

struct QRImpl final : PlanState {
    MatrixBatch batch;
    linalg::QROptions options;
    std::int64_t k = 0;           // min(m, n)
    TensorLayout tau_layout;      // (..., k) of A's dtype, contiguous
    TensorLayout q_layout;        // (..., m, k) or (..., m, m)
    std::size_t geqrf_bytes = 0;  // Xgeqrf's device workspace per matrix in flight, leading dimension m
    std::size_t geqrf_host = 0;   // and host workspace

    void plan_locked() override;
    /// The calls on checked operands (`c` and `out` as matrices), on a planned plan.
    void factorize(const TensorView& a, const TensorView& qr, void* tau, core::StreamRef stream);
    void form_q(const TensorView& qr, const void* tau, const TensorView& q, core::StreamRef stream);
    void apply_q(const TensorView& qr, const void* tau, const TensorView& c, const TensorView& out,
                 const linalg::ApplyQOptions& how, core::StreamRef stream);
};

/// NotSupported naming `api` unless Q's m rows and `q_cols` columns fit orgqr's int sizes.
void check_q_sizes(std::int64_t m, std::int64_t q_cols, const char* api);

/// The shapes of a least-squares call with right-hand sides `b`: x's and the residuals'.
struct LstsqShapes {
    std::array<std::int64_t, max_rank> x{};
    std::array<std::int64_t, max_rank> residuals{};
    int x_rank = 0;
    int residuals_rank = 0;
    std::int64_t p = 1;  // right-hand sides (1 for `(..., m)`)

    [[nodiscard]] std::span<const std::int64_t> x_shape() const noexcept { return {x.data(), std::size_t(x_rank)}; }
    [[nodiscard]] std::span<const std::int64_t> residuals_shape() const noexcept {
        return {residuals.data(), std::size_t(residuals_rank)};
    }
};

/// Checks `b` against `batch` (`(..., m, p)` or `(..., m)`, its batch shape and dtype, p at most
/// INT_MAX) and returns the shapes that follow (InvalidArgument / NotSupported naming `api`).
[[nodiscard]] LstsqShapes lstsq_shapes(const MatrixBatch& batch, const TensorView& b, const char* api);

struct LeastSquaresImpl final : PlanState {
    MatrixBatch batch;
    linalg::LeastSquaresOptions options;
    bool wide = false;      // m < n: the least-norm solution, through the QR of Aᴴ
    std::int64_t rows = 0;  // of the matrix factorized: A's (m × n) or Aᴴ's (n × m); rows >= cols
    std::int64_t cols = 0;
    std::size_t geqrf_bytes = 0;  // Xgeqrf's device workspace per matrix in flight, leading dimension rows
    std::size_t geqrf_host = 0;

    void plan_locked() override;
    /// The solve of checked operands (`b` and `x` as matrices; `residuals` may be null).
    void execute(const TensorView& a, const TensorView& b, const TensorView& x, void* residuals, int* info,
                 core::StreamRef stream);
};

}  // namespace gpumath::detail
