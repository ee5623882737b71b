// SPDX-License-Identifier: Apache-2.0
// Backend::warp: launches of the small-matrix kernels (linalg/small.hpp).
#include "linalg/small.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/core/device.hpp>
#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "linalg/kernels/small_matrices.cu.inc"
#include "linalg/kernels/small_params.hpp"
#include "linalg/kernels/small_params.hpp.inc"

namespace gpumath::detail {
namespace {

/// Dynamic shared memory a block may take without opting in.
constexpr std::int64_t shared_limit = std::int64_t(48) << 10;
constexpr std::int64_t max_blocks = std::int64_t(1) << 20;
/// Jacobi sweeps before an eigendecomposition is reported as not converged (f64 needs about 10 at
/// n = 32).
constexpr int max_sweeps = 30;

const DeviceProgram& program() {
    static const DeviceProgram p(small_kernel_source(), small_kernel_options(), small_kernel_names());
    return p;
}

int kernel_of(SmallOp op) {
    switch (op) {
        case SmallOp::cholesky:
            return kernels::small_kernel_cholesky;
        case SmallOp::lu:
            return kernels::small_kernel_lu;
        default:
            return kernels::small_kernel_eigh;
    }
}

/// The name expressions of the kernels, by operation (small_kernel_*) and element type.
constexpr std::array<std::array<const char*, 4>, 3> kernel_names{
    {{{"gpumath::kernels::small_cholesky<float, false>", "gpumath::kernels::small_cholesky<double, false>",
       "gpumath::kernels::small_cholesky<float, true>", "gpumath::kernels::small_cholesky<double, true>"}},
     {{"gpumath::kernels::small_lu<float, false>", "gpumath::kernels::small_lu<double, false>",
       "gpumath::kernels::small_lu<float, true>", "gpumath::kernels::small_lu<double, true>"}},
     {{"gpumath::kernels::small_eigh<float, false>", "gpumath::kernels::small_eigh<double, false>",
       "gpumath::kernels::small_eigh<float, true>", "gpumath::kernels::small_eigh<double, true>"}}}};

int type_index(DataType type) {
    switch (type) {
        case DataType::f64:
            return 1;
        case DataType::c32:
            return 2;
        case DataType::c64:
            return 3;
        default:
            return 0;
    }
}

const char* kernel_name(SmallOp op, DataType type) {
    return kernel_names[std::size_t(kernel_of(op))][std::size_t(type_index(type))];
}

bool solver_type(DataType t) noexcept {
    return t == DataType::f32 || t == DataType::f64 || t == DataType::c32 || t == DataType::c64;
}

kernels::SmallBatch batch_params(const SquareBatch& batch) {
    kernels::SmallBatch b;
    b.rank = batch.batch_rank;
    for (int d = 0; d < batch.batch_rank; ++d) b.shape[d] = batch.a.shape(d);
    b.n = int(batch.n);
    b.count = batch.count;
    return b;
}

/// `view`'s matrices (or vectors, with `vector` true: one stride between elements) as the kernels
/// address them; the batch dimensions are the first `batch_rank`.
kernels::SmallOperand operand(const TensorView& view, int batch_rank, bool vector = false) {
    kernels::SmallOperand o;
    o.data = view.data();
    if (vector) {
        o.col_stride = view.stride(-1);
    } else {
        o.row_stride = view.stride(-2);
        o.col_stride = view.stride(-1);
    }
    for (int d = 0; d < batch_rank; ++d) o.batch[d] = view.stride(d);
    return o;
}

/// Launches `op`'s kernel for `batch` with `params`: one warp per matrix, as many warps per block
/// as fit the shared memory (fewer for small batches, which then spread over more multiprocessors).
template <class Params>
void launch_small(SmallOp op, const SquareBatch& batch, const Params& params, core::StreamRef stream) {
    const std::int64_t bytes = kernels::small_warp_bytes(kernel_of(op), int(batch.n), int(size_of(batch.dtype)));
    std::int64_t warps = batch.count <= 1024 ? 1 : batch.count <= 8192 ? 2 : kernels::small_max_warps;
    warps = std::max<std::int64_t>(1, std::min(warps, shared_limit / bytes));
    const std::int64_t blocks = std::min((batch.count + warps - 1) / warps, max_blocks);
    const core::Kernel k = device_kernel(current_device(), program(), kernel_name(op, batch.dtype));
    core::launch(stream, {.grid = blocks, .block = warps * 32, .shared_memory = std::size_t(warps * bytes)}, k, params);
}

}  // namespace

bool small_kernel_supported(SmallOp /*op*/, DataType type, std::int64_t n) noexcept {
    return solver_type(type) && n >= 0 && n <= kernels::small_max_n;
}

void check_small_backend(SmallOp op, const SquareBatch& batch, const char* api) {
    if (small_kernel_supported(op, batch.dtype, batch.n)) return;
    throw_not_supported(fmt::format("options.backend: warp runs gpumath's own kernel, one matrix per warp, for "
                                    "n <= {} of f32, f64, c32 and c64; this plan has n {} of {} (use looped or "
                                    "automatic)",
                                    kernels::small_max_n, batch.n, to_string(batch.dtype)),
                        api);
}

std::string_view small_kernel_source() { return embedded::linalg_kernels_small_matrices_cu; }

core::ProgramOptions small_kernel_options() {
    core::ProgramOptions options;
    options.name = "gpumath_linalg_small";
    options.std = "c++17";
    options.headers["small_params.hpp"] = std::string(embedded::linalg_kernels_small_params_hpp);
    return options;
}

std::vector<std::string> small_kernel_names() {
    std::vector<std::string> names;
    for (const SmallOp op : {SmallOp::cholesky, SmallOp::lu, SmallOp::eigh})
        for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64})
            names.emplace_back(kernel_name(op, t));
    return names;
}

void small_cholesky(const SquareBatch& batch, const TensorView& a, const TensorView& factor, int* info, bool upper,
                    core::StreamRef stream) {
    if (batch.count == 0 || batch.n == 0) return;
    kernels::SmallCholeskyParams p;
    p.batch = batch_params(batch);
    p.a = operand(a, batch.batch_rank);
    p.factor = operand(factor, batch.batch_rank);
    p.info = info;
    p.upper = upper ? 1 : 0;
    launch_small(SmallOp::cholesky, batch, p, stream);
}

void small_lu(const SquareBatch& batch, const TensorView& a, const TensorView& lu, int* pivots, int* info,
              core::StreamRef stream) {
    if (batch.count == 0 || batch.n == 0) return;
    kernels::SmallLUParams p;
    p.batch = batch_params(batch);
    p.a = operand(a, batch.batch_rank);
    p.lu = operand(lu, batch.batch_rank);
    p.pivots = pivots;
    p.info = info;
    launch_small(SmallOp::lu, batch, p, stream);
}

void small_eigh(const SquareBatch& batch, const TensorView& a, const TensorView& values, const TensorView& vectors,
                int* info, bool upper, core::StreamRef stream) {
    if (batch.count == 0 || batch.n == 0) return;
    kernels::SmallEighParams p;
    p.batch = batch_params(batch);
    p.a = operand(a, batch.batch_rank);
    p.values = operand(values, batch.batch_rank, true);
    if (vectors.data() != nullptr) p.vectors = operand(vectors, batch.batch_rank);
    p.info = info;
    p.upper = upper ? 1 : 0;
    p.max_sweeps = max_sweeps;
    launch_small(SmallOp::eigh, batch, p, stream);
}

}  // namespace gpumath::detail
