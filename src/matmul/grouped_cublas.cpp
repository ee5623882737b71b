// SPDX-License-Identifier: Apache-2.0
// The cublas backend of grouped products: one cublasGemmGroupedBatchedEx call (per 128 groups), its
// arrays of device pointers written by a small run-time compiled kernel
// (kernels/grouped_pointers.cu).
#include "matmul/grouped_cublas.hpp"

#include <map>
#include <mutex>
#include <vector>

#include <cublas_v2.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>

#include "core/stream_workspace.hpp"
#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"
#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "matmul/grouped.hpp"
#include "matmul/kernels/grouped_pointers.cu.inc"
#include "matmul/kernels/grouped_pointers_params.hpp"
#include "matmul/kernels/grouped_pointers_params.hpp.inc"

namespace gpumath::detail {
namespace {

using kernels::PointerChunk;
static_assert(kernels::pointer_chunk_groups == int(cublas_groups_per_call),
              "the pointer kernel writes the pointers of one call's groups");

/// The program of the pointer kernel (kernels/grouped_pointers.cu), made once.
const DeviceProgram& pointer_program() {
    static const DeviceProgram program = [] {
        core::ProgramOptions options;
        options.name = "gpumath_grouped_pointers";
        options.headers["grouped_pointers_params.hpp"] =
            std::string(embedded::matmul_kernels_grouped_pointers_params_hpp);
        return DeviceProgram(embedded::matmul_kernels_grouped_pointers_cu, std::move(options));
    }();
    return program;
}

/// Per device: a cuBLAS handle (calls serialized: the stream and workspace are handle state) and
/// the pointer kernel (from the core kernel loader), made on first use and never destroyed.
struct CublasContext {
    std::mutex mutex;
    cublasHandle_t handle = nullptr;
    core::Kernel write_pointers;
};

CublasContext& cublas_context(int device) {
    static auto& contexts = *new DeviceRegistry<CublasContext>();  // never destroyed
    return contexts.get(device, "grouped matmul (cublas backend)", [](int d) {
        DeviceGuard guard(d);
        auto ctx = std::make_unique<CublasContext>();
        // The first call may come inside a caller's capture; cublasCreate may allocate.
        const RelaxedCaptureMode relaxed("creating the cuBLAS handle of the cublas grouped backend");
        const cublasStatus_t created = cublasCreate(&ctx->handle);
        check_cublas(int(created), "cublasCreate",
                     [&] { return fmt::format("creating the cuBLAS handle of device {}", d); });
        ctx->write_pointers = device_kernel(d, pointer_program(), "gm_write_pointers");
        return ctx.release();
    });
}

bool half_type(cudaDataType_t t) { return t == CUDA_R_16F || t == CUDA_R_16BF; }

}  // namespace

void prepare_cublas(int device) { (void)cublas_context(device); }

core::ObjectCode compile_pointer_kernel(const std::string& arch) {
    core::ProgramOptions options = pointer_program().options();
    options.arch = arch;
    return core::Program(std::string(pointer_program().source()), std::move(options)).compile(core::CodeType::cubin);
}

namespace {

enum class CublasRefusal { none, epilog, c, batched, fp8, types, compute };

CublasRefusal cublas_refusal_of(const MatmulProblem& P) noexcept {
    const LtArrangement& lt = P.lt;
    if (lt.epilog != CUBLASLT_EPILOGUE_DEFAULT || P.pass.on) return CublasRefusal::epilog;
    if (lt.has_c) return CublasRefusal::c;
    if (P.shape.batch != 1 || lt.loop.on) return CublasRefusal::batched;
    if (P.types.fp8) return CublasRefusal::fp8;
    // Measured on the H200 (cuBLAS 13.1): f16 or bf16 into f32 is CUBLAS_STATUS_NOT_SUPPORTED.
    const bool types_ok =
        lt.a.type == lt.b.type && lt.d.type == lt.a.type && (half_type(lt.a.type) || lt.a.type == CUDA_R_32F);
    if (!types_ok) return CublasRefusal::types;
    const bool compute_ok = lt.compute == CUBLAS_COMPUTE_32F || lt.compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                            lt.compute == CUBLAS_COMPUTE_32F_FAST_16BF || lt.compute == CUBLAS_COMPUTE_32F_FAST_16F;
    if (!compute_ok || lt.scale_type != CUDA_R_32F) return CublasRefusal::compute;
    return CublasRefusal::none;
}

}  // namespace

bool cublas_grouped_runs(const MatmulProblem& P) noexcept { return cublas_refusal_of(P) == CublasRefusal::none; }

std::string cublas_grouped_refusal(const MatmulProblem& P) {
    switch (cublas_refusal_of(P)) {
        case CublasRefusal::none:
            return {};
        case CublasRefusal::epilog:
            return "an epilog: cublasGemmGroupedBatchedEx has none";
        case CublasRefusal::c:
            return "c: cublasGemmGroupedBatchedEx reads no separate C";
        case CublasRefusal::batched:
            return "a batched product";
        case CublasRefusal::fp8:
            return "FP8 inputs: cublasGemmGroupedBatchedEx takes f16, bf16 and f32";
        case CublasRefusal::types:
            return fmt::format(
                "types {} x {} -> {}: cublasGemmGroupedBatchedEx takes f16, bf16 and f32, each into its "
                "own type",
                to_string(P.types.a), to_string(P.types.b), to_string(P.types.d));
        case CublasRefusal::compute:
            return fmt::format("compute type {}: the cublas backend runs f32 compute types",
                               to_string(P.types.compute));
    }
    return {};
}

void enqueue_cublas(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                    const Scalar& alpha, core::StreamRef stream, int device) {
    if (groups.empty()) return;
    CublasContext& ctx = cublas_context(device);
    const std::size_t count = groups.size();
    // Per group, as cuBLAS takes them (host arrays; the pointers go to the device below).
    std::vector<cublasOperation_t> op_a(count), op_b(count);
    std::vector<std::int64_t> m(count), n(count), k(count), lda(count), ldb(count), ldd(count), group_size(count, 1);
    std::vector<float> alphas(count, float(alpha.real)), betas(count, 0.0F);
    const LtArrangement& first = plans[0]->problem().lt;
    for (std::size_t i = 0; i < count; ++i) {
        const LtArrangement& lt = plans[i]->problem().lt;
        op_a[i] = lt.op_a;
        op_b[i] = lt.op_b;
        m[i] = std::int64_t(lt.d.rows);
        n[i] = std::int64_t(lt.d.cols);
        k[i] = std::int64_t(lt.op_a == CUBLAS_OP_N ? lt.a.cols : lt.a.rows);
        lda[i] = lt.a.ld;
        ldb[i] = lt.b.ld;
        ldd[i] = lt.d.ld;
    }
    // Workspace: the three pointer arrays, then cuBLAS's own (256-byte aligned; at most the options'
    // workspace_limit), leased like every plan's (from the options' memory resource).
    const MatmulPlan& plan = *plans.front();
    const std::size_t array_bytes = (3 * count * sizeof(void*) + 255) / 256 * 256;
    const std::size_t cublas_bytes = std::min(plan.workspace_limit(), default_workspace_limit);
    StreamWorkspace::Lease lease = plan.workspace().acquire(array_bytes + cublas_bytes, stream);
    auto** arrays = static_cast<void**>(lease.data);
    void* cublas_work = static_cast<unsigned char*>(lease.data) + array_bytes;
    for (std::size_t start = 0; start < count; start += cublas_groups_per_call) {
        PointerChunk chunk;
        chunk.count = std::int64_t(std::min(cublas_groups_per_call, count - start));
        chunk.a_out = arrays + start;
        chunk.b_out = arrays + count + start;
        chunk.d_out = arrays + 2 * count + start;
        for (std::size_t j = 0; j < std::size_t(chunk.count); ++j) {
            const GroupOperands& g = groups[start + j];
            const bool swap = plans[start + j]->problem().lt.swap;
            chunk.a[j] = swap ? g.b.data() : g.a.data();
            chunk.b[j] = swap ? g.a.data() : g.b.data();
            chunk.d[j] = g.d.data();
        }
        core::launch(stream, {.grid = {1}, .block = {unsigned(cublas_groups_per_call)}}, ctx.write_pointers, chunk);
    }
    std::lock_guard lock(ctx.mutex);
    check_cublas(int(cublasSetStream(ctx.handle, stream.handle())), "cublasSetStream", "the cublas grouped backend");
    // After cublasSetStream, which resets the workspace to cuBLAS's default pool.
    check_cublas(int(cublasSetWorkspace(ctx.handle, cublas_work, cublas_bytes)), "cublasSetWorkspace",
                 "the cublas grouped backend");
    for (std::size_t start = 0; start < count; start += cublas_groups_per_call) {
        const std::size_t c = std::min(cublas_groups_per_call, count - start);
        const cublasStatus_t s = cublasGemmGroupedBatchedEx_64(
            ctx.handle, op_a.data() + start, op_b.data() + start, m.data() + start, n.data() + start, k.data() + start,
            alphas.data() + start, const_cast<const void* const*>(arrays + start), first.a.type, lda.data() + start,
            const_cast<const void* const*>(arrays + count + start), first.b.type, ldb.data() + start,
            betas.data() + start, arrays + 2 * count + start, first.d.type, ldd.data() + start, std::int64_t(c),
            group_size.data() + start, first.compute);
        if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]]
            check_cublas(int(s), "cublasGemmGroupedBatchedEx_64",
                         [&] { return fmt::format("running {} grouped products", c); });
    }
}

}  // namespace gpumath::detail
