// SPDX-License-Identifier: Apache-2.0
// The blocking check of a linalg call's per-matrix info.
#include <gpumath/linalg/info.hpp>

#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <gpumath/error.hpp>
#include <gpumath/linalg/functions.hpp>
#include <gpumath/linalg/qr.hpp>
#include <gpumath/linalg/svd.hpp>
#include "detail/status.hpp"
#include "linalg/matrices.hpp"

namespace gpumath::linalg {
namespace {

/// What a positive info means for `operation`, by cuSOLVER's conventions.
std::string meaning(std::string_view operation, int v) {
    if (operation.find("lstsq") != std::string_view::npos || operation.find("LeastSquares") != std::string_view::npos)
        return fmt::format("rank deficient: R({0}, {0}) is exactly zero", v);
    if (operation.find("holesky") != std::string_view::npos)
        return fmt::format("not positive definite: its leading minor of order {} is not", v);
    if (operation.find("solve") != std::string_view::npos || operation.find("inv") != std::string_view::npos ||
        operation.find("LU") != std::string_view::npos || operation.find("lu") != std::string_view::npos)
        return fmt::format("singular: U({0}, {0}) is exactly zero", v);
    if (operation.find("svd") != std::string_view::npos || operation.find("SVD") != std::string_view::npos)
        return fmt::format("one whose singular value iteration did not converge (info {})", v);
    if (operation.find("igh") != std::string_view::npos)
        return fmt::format("one whose eigenvalue iteration did not converge ({} off-diagonal elements remained)", v);
    if (operation.find("eig") != std::string_view::npos || operation.find("Eig") != std::string_view::npos)
        return fmt::format("one whose QR algorithm failed (only eigenvalues {} to n converged)", v + 1);
    return fmt::format("info {}", v);
}

}  // namespace

void check_info(const TensorView& info, std::string_view operation, core::StreamRef stream) {
    const char* api = "linalg::check_info";
    detail::check_info_operand(info, info, "info", api);
    if (info.size() == 0) return;
    std::vector<int> host(std::size_t(info.size()));
    detail::check(
        cudaMemcpyAsync(host.data(), info.data(), host.size() * sizeof(int), cudaMemcpyDeviceToHost, stream.handle()),
        "cudaMemcpyAsync", "reading a linalg call's info");
    detail::check(cudaStreamSynchronize(stream.handle()), "cudaStreamSynchronize", "reading a linalg call's info");
    for (std::size_t b = 0; b < host.size(); ++b) {
        const int v = host[b];
        if (v == 0) continue;
        const std::string where =
            info.rank() == 0 ? std::string("the matrix") : fmt::format("matrix {} of the batch", b);
        if (v < 0)
            throw CusolverError(
                fmt::format("{}: cuSOLVER rejected its argument {} for {} (info {})", operation, -v, where, v), 0,
                std::string(operation));
        throw NumericalError(fmt::format("{}: {} is {} (info {})", operation, where, meaning(operation, v), v),
                             std::string(operation), static_cast<long long>(b), v);
    }
}

void CholeskyResult::check(core::StreamRef stream) const { check_info(info, "linalg::cholesky", stream); }

void SolveResult::check(core::StreamRef stream) const { check_info(info, "linalg::solve", stream); }

void InverseResult::check(core::StreamRef stream) const { check_info(info, "linalg::inv", stream); }

void EighResult::check(core::StreamRef stream) const { check_info(info, "linalg::eigh", stream); }

void SVDResult::check(core::StreamRef stream) const { check_info(info, "linalg::svd", stream); }
void LstsqResult::check(core::StreamRef stream) const { check_info(info, "linalg::lstsq", stream); }

}  // namespace gpumath::linalg
