// SPDX-License-Identifier: Apache-2.0
// gpumath::sparse against raw cuSPARSE doing the same work on the same buffers, same process:
// SpMV f32 and f64 on a 27-point 3-D Laplacian (128³) and a power-law graph (2²² rows, 16 entries
// per row on average), each the plan against raw cusparseSpMV with the algorithm the plan runs, the
// automatic choice against raw CUSPARSE_SPMV_ALG_DEFAULT, and the bandwidth reached as a fraction
// of a bare device-to-device copy of the same bytes; SpMM with 32 and 128 right-hand sides against
// raw cusparseSpMM; the host cost of a planned SpMV against raw cusparseSpMV; and DirectSolver's
// analysis + factorization + solve of a 7-point 3-D Laplacian (64³, 100³, f64) against cuDSS called
// directly through the same loaded library, with each phase and the refactorization timed.
#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cusparse.h>
#include <fmt/format.h>

#include <gpumath/core.hpp>
#include <gpumath/sparse.hpp>
#include <gpumath/tensor_ops.hpp>

#include "harness.hpp"
#if defined(GPUMATH_HAS_CUDSS)
#include "sparse/cudss_api.hpp"
#endif

using namespace gpumath;
using bench::Row;

namespace {

void sparse_check(cusparseStatus_t s, const char* what) { bench::check_status(s, CUSPARSE_STATUS_SUCCESS, what); }

/// A CSR pattern on the host (i32 indices).
struct HostPattern {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int32_t> offsets, indices;
};

/// The 27-point Laplacian of an n³ grid.
HostPattern laplacian27(std::int64_t n) {
    HostPattern p;
    p.rows = p.cols = n * n * n;
    p.offsets.reserve(std::size_t(p.rows) + 1);
    p.indices.reserve(std::size_t(p.rows) * 27);
    p.offsets.push_back(0);
    for (std::int64_t z = 0; z < n; ++z)
        for (std::int64_t y = 0; y < n; ++y)
            for (std::int64_t x = 0; x < n; ++x) {
                for (std::int64_t dz = -1; dz <= 1; ++dz)
                    for (std::int64_t dy = -1; dy <= 1; ++dy)
                        for (std::int64_t dx = -1; dx <= 1; ++dx) {
                            const std::int64_t xx = x + dx, yy = y + dy, zz = z + dz;
                            if (xx < 0 || yy < 0 || zz < 0 || xx >= n || yy >= n || zz >= n) continue;
                            p.indices.push_back(std::int32_t((zz * n + yy) * n + xx));
                        }
                p.offsets.push_back(std::int32_t(p.indices.size()));
            }
    return p;
}

/// A power-law graph: row lengths mean·(X - 1) for X of a Pareto law of index 2 (mean about
/// `mean`, a heavy tail cut at 65536, short rows empty), columns uniform and sorted within a row.
HostPattern power_law(std::int64_t rows, double mean, std::uint64_t seed) {
    HostPattern p;
    p.rows = p.cols = rows;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<std::int32_t> col(0, std::int32_t(rows - 1));
    p.offsets.reserve(std::size_t(rows) + 1);
    p.indices.reserve(std::size_t(double(rows) * mean * 1.1));
    p.offsets.push_back(0);
    for (std::int64_t r = 0; r < rows; ++r) {
        const double pareto = 1.0 / std::sqrt(1.0 - u(rng));  // index 2, minimum 1, mean 2
        const auto len = std::int64_t(std::min(65536.0, std::floor((mean + 0.5) * (pareto - 1.0))));
        const std::size_t start = p.indices.size();
        for (std::int64_t k = 0; k < len; ++k) p.indices.push_back(col(rng));
        std::sort(p.indices.begin() + std::ptrdiff_t(start), p.indices.end());
        p.offsets.push_back(std::int32_t(p.indices.size()));
    }
    return p;
}

/// The pattern on the device with `t` values (uniform in [-1, 1]).
struct DeviceCsr {
    Tensor offsets, indices, values;
    sparse::MatrixView view;
    [[nodiscard]] std::size_t bytes() const {
        return std::size_t(offsets.view().span_bytes() + indices.view().span_bytes() + values.view().span_bytes());
    }
};

DeviceCsr upload(const HostPattern& p, DataType t, const core::Stream& s) {
    DeviceCsr d;
    d.offsets = Tensor::from_host(p.offsets, {std::int64_t(p.offsets.size())}, s);
    d.indices = Tensor::from_host(p.indices, {std::int64_t(p.indices.size())}, s);
    d.values = Tensor::empty(t, {std::int64_t(p.indices.size())}, s);
    random::uniform(d.values, -1.0, 1.0, {}, s);
    d.view = sparse::MatrixView::csr(p.rows, p.cols, d.offsets, d.indices, d.values);
    return d;
}

cusparseSpMVAlg_t raw_alg(sparse::SpMVAlgorithm a) {
    switch (a) {
        case sparse::SpMVAlgorithm::alg1:
            return CUSPARSE_SPMV_CSR_ALG1;
        case sparse::SpMVAlgorithm::alg2:
            return CUSPARSE_SPMV_CSR_ALG2;
        default:
            return CUSPARSE_SPMV_ALG_DEFAULT;
    }
}

cudaDataType cuda_type(DataType t) { return t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F; }

/// Raw cuSPARSE SpMV y = A·x on one stream: handle, descriptors, buffer, preprocess.
struct RawSpMV {
    cusparseHandle_t h = nullptr;
    cusparseSpMatDescr_t a = nullptr;
    cusparseDnVecDescr_t x = nullptr, y = nullptr;
    core::Buffer buffer;
    cusparseSpMVAlg_t alg;
    cudaDataType t;
    double alpha64 = 1.0, beta64 = 0.0;
    float alpha32 = 1.0F, beta32 = 0.0F;

    RawSpMV(const DeviceCsr& m, const Tensor& xv, const Tensor& yv, cusparseSpMVAlg_t with, const core::Stream& s)
        : alg(with), t(cuda_type(m.values.dtype())) {
        sparse_check(cusparseCreate(&h), "cusparseCreate");
        sparse_check(cusparseSetStream(h, s.handle()), "cusparseSetStream");
        sparse_check(
            cusparseCreateCsr(&a, m.view.rows(), m.view.cols(), m.view.nnz(), m.offsets.data(), m.indices.data(),
                              m.values.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, t),
            "cusparseCreateCsr");
        sparse_check(cusparseCreateDnVec(&x, xv.size(), xv.data(), t), "cusparseCreateDnVec");
        sparse_check(cusparseCreateDnVec(&y, yv.size(), yv.data(), t), "cusparseCreateDnVec");
        std::size_t bytes = 0;
        sparse_check(
            cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha(), a, x, beta(), y, t, alg, &bytes),
            "cusparseSpMV_bufferSize");
        buffer = core::Buffer(std::max<std::size_t>(bytes, 1), s);
        sparse_check(cusparseSpMV_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha(), a, x, beta(), y, t, alg,
                                             buffer.data()),
                     "cusparseSpMV_preprocess");
    }
    [[nodiscard]] const void* alpha() const { return t == CUDA_R_64F ? static_cast<const void*>(&alpha64) : &alpha32; }
    [[nodiscard]] const void* beta() const { return t == CUDA_R_64F ? static_cast<const void*>(&beta64) : &beta32; }
    void run() const {
        sparse_check(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha(), a, x, beta(), y, t, alg, buffer.data()),
                     "cusparseSpMV");
    }
    ~RawSpMV() {
        cusparseDestroyDnVec(y);
        cusparseDestroyDnVec(x);
        cusparseDestroySpMat(a);
        cusparseDestroy(h);
    }
    RawSpMV(const RawSpMV&) = delete;
    RawSpMV& operator=(const RawSpMV&) = delete;
};

std::string ratio_note(double ratio) { return ratio >= 0.98 ? "" : "below 0.98"; }

void spmv_case(bench::Reporter& report, const core::Stream& stream, const HostPattern& p, DataType t,
               const std::string& name) {
    const std::string group = "SpMV " + std::string(to_string(t)) + " " + name;
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const DeviceCsr m = upload(p, t, stream);
    const Tensor x = Tensor::empty(t, {p.cols}, stream);
    const Tensor y = Tensor::empty(t, {p.rows}, stream);
    random::uniform(x, -1.0, 1.0, {}, stream);
    const bench::Timing timing{.max_seconds = 4};

    // The plan (automatic) against raw cuSPARSE with the algorithm the plan chose.
    sparse::SpMV plan(m.view, x, y);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    plan.plan();
    const RawSpMV same(m, x, y, raw_alg(plan.algorithm()), stream);
    const auto [raw_ms, ours_ms] = bench::compare(
        s, [&](int) { same.run(); }, [&](int) { plan.execute(x, y, 1.0, 0.0, stream); }, timing);
    const std::string alg(to_string(plan.algorithm()));
    report.add({group, "raw " + alg, "ms", raw_ms, 0, ""});
    report.add({group, "gpumath " + alg, "ms", ours_ms, raw_ms / ours_ms, ratio_note(raw_ms / ours_ms)});

    // The automatic choice against raw CUSPARSE_SPMV_ALG_DEFAULT.
    const RawSpMV def(m, x, y, CUSPARSE_SPMV_ALG_DEFAULT, stream);
    const auto [def_ms, auto_ms] = bench::compare(
        s, [&](int) { def.run(); }, [&](int) { plan.execute(x, y, 1.0, 0.0, stream); }, timing);
    report.add({group, "raw ALG_DEFAULT", "ms", def_ms, 0, ""});
    report.add(
        {group, "gpumath automatic", "ms", auto_ms, def_ms / auto_ms, def_ms / auto_ms >= 1.0 ? "" : "below 1.0"});

    // Bandwidth: the bytes a SpMV moves (A's arrays, x, y) against a bare copy of A's bytes.
    const std::size_t moved = m.bytes() + std::size_t(x.view().span_bytes() + y.view().span_bytes());
    const core::Buffer copy_dst(m.bytes(), stream);
    const double copy_ms = bench::gpu_ms(s, [&](int) {
        bench::cuda_check(cudaMemcpyAsync(copy_dst.data(), m.values.data(), m.values.view().span_bytes(),
                                          cudaMemcpyDeviceToDevice, s),
                          "cudaMemcpyAsync");
        bench::cuda_check(cudaMemcpyAsync(static_cast<std::byte*>(copy_dst.data()) + m.values.view().span_bytes(),
                                          m.indices.data(), m.indices.view().span_bytes(), cudaMemcpyDeviceToDevice, s),
                          "cudaMemcpyAsync");
    });
    const double copied = double(m.values.view().span_bytes() + m.indices.view().span_bytes());
    const double copy_gbs = 2.0 * copied / (copy_ms * 1e-3) / 1e9;  // read + write
    const double spmv_gbs = double(moved) / (ours_ms * 1e-3) / 1e9;
    report.add({group, "bare D2D copy", "GB/s", copy_gbs, 0, "read + write of A's values and indices"});
    report.add({group, "gpumath SpMV", "GB/s", spmv_gbs, spmv_gbs / copy_gbs, "fraction of the copy (aim >= 0.8)"});
}

/// Raw cusparseSpMM C = A·B, row-major B and C.
void spmm_case(bench::Reporter& report, const core::Stream& stream, const HostPattern& p, std::int64_t n,
               const std::string& name) {
    const std::string group = "SpMM f32 " + name + " n=" + std::to_string(n);
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const DeviceCsr m = upload(p, DataType::f32, stream);
    const Tensor b = Tensor::empty(DataType::f32, {p.cols, n}, stream);
    const Tensor c = Tensor::empty(DataType::f32, {p.rows, n}, stream);
    random::uniform(b, -1.0, 1.0, {}, stream);
    sparse::SpMM plan(m.view, b, c);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    plan.plan();
    const cusparseSpMMAlg_t alg = plan.algorithm() == sparse::SpMMAlgorithm::alg1   ? CUSPARSE_SPMM_CSR_ALG1
                                  : plan.algorithm() == sparse::SpMMAlgorithm::alg2 ? CUSPARSE_SPMM_CSR_ALG2
                                  : plan.algorithm() == sparse::SpMMAlgorithm::alg3 ? CUSPARSE_SPMM_CSR_ALG3
                                                                                    : CUSPARSE_SPMM_ALG_DEFAULT;
    cusparseHandle_t h = nullptr;
    cusparseSpMatDescr_t a = nullptr;
    cusparseDnMatDescr_t bd = nullptr, cd = nullptr;
    sparse_check(cusparseCreate(&h), "cusparseCreate");
    sparse_check(cusparseSetStream(h, s), "cusparseSetStream");
    sparse_check(
        cusparseCreateCsr(&a, p.rows, p.cols, m.view.nnz(), m.offsets.data(), m.indices.data(), m.values.data(),
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
        "cusparseCreateCsr");
    sparse_check(cusparseCreateDnMat(&bd, p.cols, n, n, b.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW), "DnMat");
    sparse_check(cusparseCreateDnMat(&cd, p.rows, n, n, c.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW), "DnMat");
    const float alpha = 1.0F, beta = 0.0F;
    std::size_t bytes = 0;
    sparse_check(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                         a, bd, &beta, cd, CUDA_R_32F, alg, &bytes),
                 "cusparseSpMM_bufferSize");
    const core::Buffer buffer(std::max<std::size_t>(bytes, 1), stream);
    sparse_check(cusparseSpMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                         a, bd, &beta, cd, CUDA_R_32F, alg, buffer.data()),
                 "cusparseSpMM_preprocess");
    const auto [raw_ms, ours_ms] = bench::compare(
        s,
        [&](int) {
            sparse_check(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a,
                                      bd, &beta, cd, CUDA_R_32F, alg, buffer.data()),
                         "cusparseSpMM");
        },
        [&](int) { plan.execute(b, c, 1.0, 0.0, stream); }, bench::Timing{.max_seconds = 4});
    const std::string alg_name(to_string(plan.algorithm()));
    report.add({group, "raw " + alg_name, "ms", raw_ms, 0, ""});
    report.add({group, "gpumath " + alg_name, "ms", ours_ms, raw_ms / ours_ms, ratio_note(raw_ms / ours_ms)});
    stream.synchronize();
    cusparseDestroyDnMat(cd);
    cusparseDestroyDnMat(bd);
    cusparseDestroySpMat(a);
    cusparseDestroy(h);
}

void host_cost(bench::Reporter& report, const core::Stream& stream) {
    const std::string group = "SpMV f32 Laplacian 16^3 host cost";
    if (!report.selected(group)) return;
    const HostPattern p = laplacian27(16);
    const DeviceCsr m = upload(p, DataType::f32, stream);
    const Tensor x = Tensor::empty(DataType::f32, {p.cols}, stream);
    const Tensor y = Tensor::empty(DataType::f32, {p.rows}, stream);
    random::uniform(x, -1.0, 1.0, {}, stream);
    sparse::SpMV plan(m.view, x, y);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    plan.plan();
    const RawSpMV raw(m, x, y, raw_alg(plan.algorithm()), stream);
    const std::vector<double> us = bench::interleaved_host_us(
        stream.handle(), {[&](int) { raw.run(); }, [&](int) { plan.execute(x, y, 1.0, 0.0, stream); }});
    report.add({group, "raw cusparseSpMV", "us/call", us[0], 0, ""});
    report.add({group, "gpumath", "us/call", us[1], 0,
                "+" + std::to_string(us[1] - us[0]).substr(0, 5) + " us (target <= +0.5)"});
}

#if defined(GPUMATH_HAS_CUDSS)

/// The 7-point Laplacian of an n³ grid with Dirichlet boundaries: 6 on the diagonal, −1 to each
/// neighbour (symmetric positive definite), as i32 CSR with f64 values.
struct HostCsr {
    HostPattern p;
    std::vector<double> values;
};

HostCsr laplacian7(std::int64_t n) {
    HostCsr m;
    m.p.rows = m.p.cols = n * n * n;
    m.p.offsets.reserve(std::size_t(m.p.rows + 1));
    m.p.offsets.push_back(0);
    for (std::int64_t z = 0; z < n; ++z)
        for (std::int64_t y = 0; y < n; ++y)
            for (std::int64_t x = 0; x < n; ++x) {
                const std::int64_t row = (z * n + y) * n + x;
                const auto add = [&](std::int64_t col, double v) {
                    m.p.indices.push_back(std::int32_t(col));
                    m.values.push_back(v);
                };
                if (z > 0) add(row - n * n, -1);
                if (y > 0) add(row - n, -1);
                if (x > 0) add(row - 1, -1);
                add(row, 6);
                if (x + 1 < n) add(row + 1, -1);
                if (y + 1 < n) add(row + n, -1);
                if (z + 1 < n) add(row + n * n, -1);
                m.p.offsets.push_back(std::int32_t(m.p.indices.size()));
            }
    return m;
}

void cudss_check(cudssStatus_t st, const char* what) { bench::check_status(st, CUDSS_STATUS_SUCCESS, what); }

/// Wall milliseconds of fn() until `s` drains (the analysis works partly on the host).
double wall_ms(const core::Stream& s, const std::function<void()>& fn) {
    s.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// ‖A·x − b‖₂ / ‖b‖₂ on the host.
double relative_residual(const HostCsr& a, const std::vector<double>& x, const std::vector<double>& b) {
    double r2 = 0, b2 = 0;
    for (std::int64_t i = 0; i < a.p.rows; ++i) {
        double ax = 0;
        for (std::int32_t k = a.p.offsets[std::size_t(i)]; k < a.p.offsets[std::size_t(i) + 1]; ++k)
            ax += a.values[std::size_t(k)] * x[std::size_t(a.p.indices[std::size_t(k)])];
        const double r = ax - b[std::size_t(i)];
        r2 += r * r;
        b2 += b[std::size_t(i)] * b[std::size_t(i)];
    }
    return std::sqrt(r2 / b2);
}

/// One solver's phase times (ms).
struct Phases {
    double total = 0, analysis = 0, factorization = 0, solve = 0, refactorization = 0;
};

/// cuDSS called directly: handle, configuration, data and matrices made inside the timed region,
/// as DirectSolver makes them inside analyze().
class RawCudss {
public:
    RawCudss(const HostCsr& host, const Tensor& off, const Tensor& idx, const Tensor& val, const Tensor& b,
             const Tensor& x)
        : host_(host), off_(off), idx_(idx), val_(val), b_(b), x_(x) {}

    Phases run(const core::Stream& s, const Tensor& new_values) {
        const detail::CudssApi& api = detail::cudss();
        Phases t;
        cudssHandle_t h = nullptr;
        cudssConfig_t config = nullptr;
        cudssData_t data = nullptr;
        cudssMatrix_t a = nullptr, xm = nullptr, bm = nullptr;
        const std::int64_t n = host_.p.rows;
        t.analysis = wall_ms(s, [&] {
            cudss_check(api.cudssCreate(&h), "cudssCreate");
            cudss_check(api.cudssSetStream(h, s.handle()), "cudssSetStream");
            cudss_check(api.cudssConfigCreate(&config), "cudssConfigCreate");
            cudss_check(api.cudssDataCreate(h, &data), "cudssDataCreate");
            cudss_check(api.cudssMatrixCreateCsr(&a, n, n, std::int64_t(host_.values.size()), off_.data(), nullptr,
                                                 idx_.data(), val_.data(), CUDA_R_32I, CUDA_R_32I, CUDA_R_64F,
                                                 CUDSS_MTYPE_SPD, CUDSS_MVIEW_FULL, CUDSS_BASE_ZERO),
                        "cudssMatrixCreateCsr");
            cudss_check(api.cudssMatrixCreateDn(&xm, n, 1, n, x_.data(), CUDA_R_64F, CUDSS_LAYOUT_COL_MAJOR),
                        "cudssMatrixCreateDn");
            cudss_check(api.cudssMatrixCreateDn(&bm, n, 1, n, b_.data(), CUDA_R_64F, CUDSS_LAYOUT_COL_MAJOR),
                        "cudssMatrixCreateDn");
            cudss_check(api.cudssExecute(h, CUDSS_PHASE_ANALYSIS, config, data, a, xm, bm), "analysis");
        });
        t.factorization = wall_ms(s, [&] {
            cudss_check(api.cudssExecute(h, CUDSS_PHASE_FACTORIZATION, config, data, a, xm, bm), "factorization");
        });
        t.solve =
            wall_ms(s, [&] { cudss_check(api.cudssExecute(h, CUDSS_PHASE_SOLVE, config, data, a, xm, bm), "solve"); });
        t.total = t.analysis + t.factorization + t.solve;
        t.refactorization = wall_ms(s, [&] {
            cudss_check(api.cudssMatrixSetValues(a, new_values.data()), "cudssMatrixSetValues");
            cudss_check(api.cudssExecute(h, CUDSS_PHASE_REFACTORIZATION, config, data, a, xm, bm), "refactorization");
        });
        cudss_check(api.cudssMatrixSetValues(a, val_.data()), "cudssMatrixSetValues");
        api.cudssMatrixDestroy(a);
        api.cudssMatrixDestroy(xm);
        api.cudssMatrixDestroy(bm);
        api.cudssDataDestroy(h, data);
        api.cudssConfigDestroy(config);
        api.cudssDestroy(h);
        return t;
    }

private:
    const HostCsr& host_;
    const Tensor &off_, &idx_, &val_, &b_, &x_;
};

/// DirectSolver made, analyzed, factorized and solved inside the timed region.
Phases ours(const sparse::MatrixView& view, const Tensor& b, const Tensor& x, const Tensor& new_values,
            const core::Stream& s) {
    Phases t;
    std::optional<sparse::DirectSolver> solver;
    t.analysis = wall_ms(s, [&] {
        solver.emplace(view, sparse::DirectSolverOptions{.type = sparse::MatrixType::spd});
        solver->analyze(s);
    });
    t.factorization = wall_ms(s, [&] { solver->factorize(s); });
    t.solve = wall_ms(s, [&] { solver->solve(b, x, s); });
    t.total = t.analysis + t.factorization + t.solve;
    t.refactorization = wall_ms(s, [&] { solver->refactorize(new_values, s); });
    return t;
}

double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void direct_case(bench::Reporter& report, const core::Stream& stream, std::int64_t grid) {
    const std::string group = "cuDSS f64 Laplacian7 " + std::to_string(grid) + "^3";
    if (!report.selected(group)) return;
    try {
        (void)sparse::DirectSolver::library_version();
    } catch (const Error& e) {
        std::printf("  %-44s skipped: %s\n", group.c_str(), e.what());
        return;
    }
    const HostCsr host = laplacian7(grid);
    const std::int64_t n = host.p.rows, nnz = std::int64_t(host.values.size());
    const Tensor off = Tensor::from_host(host.p.offsets, {n + 1}, stream);
    const Tensor idx = Tensor::from_host(host.p.indices, {nnz}, stream);
    const Tensor val = Tensor::from_host(host.values, {nnz}, stream);
    // The same pattern with 1% larger off-diagonal weights for the refactorization.
    std::vector<double> scaled = host.values;
    for (double& v : scaled)
        if (v < 0) v *= 1.01;
    const Tensor val2 = Tensor::from_host(scaled, {nnz}, stream);
    const Tensor b = Tensor::empty(DataType::f64, {n}, stream);
    random::uniform(b, -1.0, 1.0, {}, stream);
    const Tensor x = Tensor::empty(DataType::f64, {n}, stream), x_raw = Tensor::empty(DataType::f64, {n}, stream);
    const sparse::MatrixView view = sparse::MatrixView::csr(n, n, off, idx, val);
    RawCudss raw(host, off, idx, val, b, x_raw);
    // One warm-up each (first handles, module loads), then interleaved runs, each side first in
    // every other pair (the analysis works on the host, where order can matter).
    (void)raw.run(stream, val2);
    (void)ours(view, b, x, val2, stream);
    const int runs = grid > 64 ? 2 : 5;
    std::vector<Phases> r, o;
    for (int i = 0; i < runs; ++i) {
        if (i % 2 == 0) {
            r.push_back(raw.run(stream, val2));
            o.push_back(ours(view, b, x, val2, stream));
        } else {
            o.push_back(ours(view, b, x, val2, stream));
            r.push_back(raw.run(stream, val2));
        }
    }
    const auto med = [](const std::vector<Phases>& v, double Phases::*f) {
        std::vector<double> xs;
        for (const Phases& p : v) xs.push_back(p.*f);
        return median_of(xs);
    };
    // The residuals of the last solves (the refactorization leaves the solutions of the original
    // values in x and x_raw).
    const std::vector<double> hb = b.to_host<double>(stream);
    const double res_raw = relative_residual(host, x_raw.to_host<double>(stream), hb);
    const double res_ours = relative_residual(host, x.to_host<double>(stream), hb);
    const std::pair<const char*, double Phases::*> phases[] = {{"analysis+factor+solve", &Phases::total},
                                                               {"analysis", &Phases::analysis},
                                                               {"factorization", &Phases::factorization},
                                                               {"solve", &Phases::solve},
                                                               {"refactorization", &Phases::refactorization}};
    for (const auto& [name, f] : phases) {
        const double rm = med(r, f), om = med(o, f);
        report.add({group + " " + name, "raw cuDSS", "ms", rm, 0,
                    f == &Phases::total ? fmt::format("residual {:.1e}", res_raw) : ""});
        report.add(
            {group + " " + name, "gpumath", "ms", om, rm / om,
             f == &Phases::total ? fmt::format("residual {:.1e}, median of {} (target >= 0.98)", res_ours, runs) : ""});
    }
}

#endif

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_sparse");
    bench::Reporter report("bench_sparse", argc, argv);
    bench::print_environment("bench_sparse");
    const core::Stream stream;
    host_cost(report, stream);
    const std::int64_t grid = report.quick() ? 64 : 128;
    const std::int64_t graph_rows = report.quick() ? (std::int64_t(1) << 18) : (std::int64_t(1) << 22);
    const HostPattern lap = laplacian27(grid);
    const HostPattern graph = power_law(graph_rows, 16.0, 42);
    const std::string lap_name = "Laplacian27 " + std::to_string(grid) + "^3";
    const std::string graph_name = "power-law 2^" + std::to_string(int(std::log2(double(graph_rows)))) + " x16";
    for (const DataType t : {DataType::f32, DataType::f64}) {
        spmv_case(report, stream, lap, t, lap_name);
        spmv_case(report, stream, graph, t, graph_name);
    }
    for (const std::int64_t n : {32, 128}) spmm_case(report, stream, lap, n, lap_name);
#if defined(GPUMATH_HAS_CUDSS)
    for (const std::int64_t side : report.quick() ? std::vector<std::int64_t>{32} : std::vector<std::int64_t>{64, 100})
        direct_case(report, stream, side);
#endif
    return 0;
}
