// SPDX-License-Identifier: Apache-2.0
// gpumath::linalg against raw cuSOLVER doing the same work on the same buffers, same process:
// potrf, geqrf and syevd on large matrices (in place, each call on a fresh copy of the input, made
// by both sides alike), the host cost of a planned potrf, batched eigh against every cuSOLVER
// route, and time per matrix over n for the batched backends (no cliff).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <cusolverDn.h>

#include <gpumath/core.hpp>
#include <gpumath/linalg.hpp>
#include <gpumath/tensor_ops.hpp>
#include "linalg/kernels.hpp"
#include "linalg/matrices.hpp"

#include "harness.hpp"

using namespace gpumath;
using bench::Row;

namespace {

void solver_check(cusolverStatus_t s, const char* what) { bench::check_status(s, CUSOLVER_STATUS_SUCCESS, what); }

/// Raw cuSOLVER state for one stream: a handle, default parameters, device workspace.
struct Raw {
    cusolverDnHandle_t h = nullptr;
    cusolverDnParams_t p = nullptr;
    core::Buffer work;
    std::vector<std::byte> host;
    explicit Raw(const core::Stream& s) {
        solver_check(cusolverDnCreate(&h), "cusolverDnCreate");
        solver_check(cusolverDnCreateParams(&p), "cusolverDnCreateParams");
        solver_check(cusolverDnSetStream(h, s.handle()), "cusolverDnSetStream");
    }
    void reserve(std::size_t device, std::size_t host_bytes, const core::Stream& s) {
        if (work.size_bytes() < device) work = core::Buffer(device, s);
        if (host.size() < host_bytes) host.resize(host_bytes);
    }
    ~Raw() {
        cusolverDnDestroyParams(p);
        cusolverDnDestroy(h);
    }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;
};

/// `count` n×n matrices (column-major, packed): symmetric with entries in [-1, 1], plus n on the
/// diagonal when `spd` (positive definite).
Tensor matrices(DataType t, std::int64_t count, std::int64_t n, bool spd, const core::Stream& s) {
    const std::vector<std::int64_t> shape{count, n, n};
    const TensorLayout l = detail::packed_column_major(t, shape);
    Tensor a = Tensor::empty(l, s);
    detail::fill_random(TensorView(a.data(), l), s);
    if (spd) detail::add_diagonal(detail::matrix_params(TensorView(a.data(), l), count), t, double(n), s);
    return a;
}

std::size_t bytes_of(DataType t, std::int64_t count, std::int64_t n) { return std::size_t(count * n * n) * size_of(t); }

void large_factorizations(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const cudaStream_t s = stream.handle();
    for (const DataType t : {DataType::f64, DataType::f32})
        for (const std::int64_t n :
             report.quick() ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{4096, 16384}) {
            const std::string group = std::string("potrf ") + std::string(to_string(t)) + " n=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const Tensor a = matrices(t, 1, n, true, stream);
            const core::Buffer w(bytes_of(t, 1, n), stream);
            const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
            const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
            std::size_t dev = 0, host = 0;
            solver_check(
                cusolverDnXpotrf_bufferSize(raw.h, raw.p, CUBLAS_FILL_MODE_LOWER, n, ct, w.data(), n, ct, &dev, &host),
                "bufferSize");
            raw.reserve(dev, host, stream);
            const TensorLayout l({t, {n, n}, {1, n}});
            linalg::Cholesky plan(l);
            plan.plan();
            const TensorView wv(w.data(), l);
            const auto fresh = [&] {
                bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s),
                                  "copy");
            };
            const auto raw_call = [&](int) {
                fresh();
                solver_check(
                    cusolverDnXpotrf(raw.h, raw.p, CUBLAS_FILL_MODE_LOWER, n, ct, w.data(), n, ct, raw.work.data(), dev,
                                     raw.host.data(), host, static_cast<int*>(info.data())),
                    "cusolverDnXpotrf");
            };
            const auto ours = [&](int) {
                fresh();
                plan.factorize(wv, wv, info, stream);
            };
            const auto [raw_ms, ours_ms] =
                bench::compare(s, raw_call, ours, {.warmup = 2, .samples = 7, .rounds = 1, .max_seconds = 20});
            const double flops = double(n) * double(n) * double(n) / 3.0;
            report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, "copy + Xpotrf in place"});
            report.add({group, "gpumath", "ms", ours_ms, raw_ms / ours_ms,
                        std::to_string(int(flops / (ours_ms * 1e-3) / 1e12)) + " TFLOP/s"});
        }
    for (const DataType t : {DataType::f64, DataType::f32}) {
        const std::int64_t n = report.quick() ? 1024 : 4096;
        const std::string group = std::string("syevd ") + std::string(to_string(t)) + " n=" + std::to_string(n);
        if (!report.selected(group)) continue;
        const Tensor a = matrices(t, 1, n, false, stream);
        const core::Buffer w(bytes_of(t, 1, n), stream);
        const Tensor values = Tensor::empty(t, {n}, stream);
        const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
        const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
        std::size_t dev = 0, host = 0;
        solver_check(cusolverDnXsyevd_bufferSize(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, ct,
                                                 w.data(), n, ct, values.data(), ct, &dev, &host),
                     "bufferSize");
        raw.reserve(dev, host, stream);
        const TensorLayout l({t, {n, n}, {1, n}});
        linalg::Eigh plan(l);
        plan.plan();
        const TensorView wv(w.data(), l);
        const auto fresh = [&] {
            bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s), "copy");
        };
        const auto raw_call = [&](int) {
            fresh();
            solver_check(cusolverDnXsyevd(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, ct,
                                          w.data(), n, ct, values.data(), ct, raw.work.data(), dev, raw.host.data(),
                                          host, static_cast<int*>(info.data())),
                         "cusolverDnXsyevd");
        };
        const auto ours = [&](int) {
            fresh();
            plan.execute(wv, values, wv, info, stream);
        };
        const auto [raw_ms, ours_ms] =
            bench::compare(s, raw_call, ours, {.warmup = 1, .samples = 5, .rounds = 1, .max_seconds = 30});
        report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, "copy + Xsyevd in place, vectors"});
        report.add({group, "gpumath", "ms", ours_ms, raw_ms / ours_ms, ""});
    }
}

/// Xgeqrf in place on one n × n column-major matrix: raw cuSOLVER against QR::factorize with `qr`
/// = `a` (no copy), the same tau. The 16384 cases take long per call: few samples.
void large_qr(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const cudaStream_t s = stream.handle();
    for (const DataType t : {DataType::f64, DataType::f32})
        for (const std::int64_t n :
             report.quick() ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{4096, 16384}) {
            const std::string group = std::string("geqrf ") + std::string(to_string(t)) + " n=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const Tensor a = matrices(t, 1, n, false, stream);
            const core::Buffer w(bytes_of(t, 1, n), stream);
            const Tensor tau = Tensor::empty(t, {n}, stream);
            const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
            const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
            std::size_t dev = 0, host = 0;
            solver_check(
                cusolverDnXgeqrf_bufferSize(raw.h, raw.p, n, n, ct, w.data(), n, ct, tau.data(), ct, &dev, &host),
                "bufferSize");
            raw.reserve(dev, host, stream);
            const TensorLayout l({t, {n, n}, {1, n}});
            linalg::QR plan(l);
            plan.plan();
            const TensorView wv(w.data(), l);
            const auto fresh = [&] {
                bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s),
                                  "copy");
            };
            const auto raw_call = [&](int) {
                fresh();
                solver_check(cusolverDnXgeqrf(raw.h, raw.p, n, n, ct, w.data(), n, ct, tau.data(), ct, raw.work.data(),
                                              dev, raw.host.data(), host, static_cast<int*>(info.data())),
                             "cusolverDnXgeqrf");
            };
            const auto ours = [&](int) {
                fresh();
                plan.factorize(wv, wv, tau, stream);
            };
            // A call at n = 16384 takes over a second: one warm-up and three interleaved pairs, one
            // call per sample (compare would first time 22 calls to size its samples).
            double raw_ms = 0, ours_ms = 0;
            if (n > 8192) {
                const bench::PairedMs m = bench::paired_gpu_ms(s, raw_call, ours, 1, 3, 1);
                raw_ms = m.a;
                ours_ms = m.a / m.ratio;
            } else {
                std::tie(raw_ms, ours_ms) =
                    bench::compare(s, raw_call, ours, {.warmup = 2, .samples = 7, .rounds = 1, .max_seconds = 20});
            }
            const double flops = 4.0 / 3.0 * double(n) * double(n) * double(n);
            report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, "copy + Xgeqrf in place"});
            report.add({group, "gpumath", "ms", ours_ms, raw_ms / ours_ms,
                        std::to_string(int(flops / (ours_ms * 1e-3) / 1e12)) + " TFLOP/s"});
        }
}

void host_cost(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const std::string group = "potrf f32 n=32 host cost";
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const std::int64_t n = 32;
    const Tensor a = matrices(DataType::f32, 1, n, true, stream);
    const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
    std::size_t dev = 0, host = 0;
    solver_check(cusolverDnXpotrf_bufferSize(raw.h, raw.p, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_32F, a.data(), n,
                                             CUDA_R_32F, &dev, &host),
                 "bufferSize");
    raw.reserve(dev, host, stream);
    const TensorLayout l({DataType::f32, {n, n}, {1, n}});
    linalg::Cholesky plan(l);
    plan.plan();
    const TensorView av(a.data(), l);
    // In place on the same matrix again and again: the values do not matter for host time.
    const std::vector<double> us = bench::interleaved_host_us(
        s, {[&](int) {
                solver_check(
                    cusolverDnXpotrf(raw.h, raw.p, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_32F, a.data(), n, CUDA_R_32F,
                                     raw.work.data(), dev, raw.host.data(), host, static_cast<int*>(info.data())),
                    "cusolverDnXpotrf");
            },
            [&](int) { plan.factorize(av, av, info, stream); }});
    report.add({group, "raw cuSOLVER", "us/call", us[0], 0, ""});
    report.add({group, "gpumath", "us/call", us[1], 0, "+" + std::to_string(us[1] - us[0]).substr(0, 5) + " us"});
}

/// A batch of eigendecompositions by every route: raw XsyevBatched, raw syevjBatched (n <= 32),
/// raw Xsyevd looped on one stream, and gpumath's plan (automatic).
void batched_eigh(bench::Reporter& report, const core::Stream& stream, Raw& raw, DataType t, std::int64_t count,
                  std::int64_t n, const std::string& label) {
    const std::string group = label;
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const Tensor a = matrices(t, count, n, false, stream);
    const core::Buffer w(bytes_of(t, count, n), stream);
    const Tensor values = Tensor::empty(t, {count, n}, stream);
    const Tensor info = Tensor::empty(DataType::i32, {count}, stream);
    const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
    const auto fresh = [&] {
        bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s), "copy");
    };
    std::size_t bdev = 0, bhost = 0, sdev = 0, shost = 0;
    solver_check(cusolverDnXsyevBatched_bufferSize(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n,
                                                   ct, w.data(), n, ct, values.data(), ct, &bdev, &bhost, count),
                 "bufferSize");
    solver_check(cusolverDnXsyevd_bufferSize(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, ct,
                                             w.data(), n, ct, values.data(), ct, &sdev, &shost),
                 "bufferSize");
    raw.reserve(std::max(bdev, sdev), std::max(bhost, shost), stream);
    auto* ints = static_cast<int*>(info.data());
    std::vector<std::pair<std::string, std::function<void(int)>>> routes;
    routes.emplace_back("raw XsyevBatched", [&](int) {
        fresh();
        solver_check(
            cusolverDnXsyevBatched(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, ct, w.data(), n,
                                   ct, values.data(), ct, raw.work.data(), bdev, raw.host.data(), bhost, ints, count),
            "cusolverDnXsyevBatched");
    });
    syevjInfo_t jparams = nullptr;
    solver_check(cusolverDnCreateSyevjInfo(&jparams), "cusolverDnCreateSyevjInfo");
    int jwork = 0;
    if (n <= 32) {
        if (t == DataType::f64)
            solver_check(
                cusolverDnDsyevjBatched_bufferSize(raw.h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, int(n),
                                                   static_cast<double*>(w.data()), int(n),
                                                   static_cast<double*>(values.data()), &jwork, jparams, int(count)),
                "bufferSize");
        else
            solver_check(
                cusolverDnSsyevjBatched_bufferSize(raw.h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, int(n),
                                                   static_cast<float*>(w.data()), int(n),
                                                   static_cast<float*>(values.data()), &jwork, jparams, int(count)),
                "bufferSize");
        raw.reserve(std::size_t(jwork) * size_of(t), 0, stream);
        routes.emplace_back("raw syevjBatched", [&](int) {
            fresh();
            if (t == DataType::f64)
                solver_check(
                    cusolverDnDsyevjBatched(raw.h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, int(n),
                                            static_cast<double*>(w.data()), int(n), static_cast<double*>(values.data()),
                                            static_cast<double*>(raw.work.data()), jwork, ints, jparams, int(count)),
                    "syevjBatched");
            else
                solver_check(
                    cusolverDnSsyevjBatched(raw.h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, int(n),
                                            static_cast<float*>(w.data()), int(n), static_cast<float*>(values.data()),
                                            static_cast<float*>(raw.work.data()), jwork, ints, jparams, int(count)),
                    "syevjBatched");
        });
    }
    routes.emplace_back("raw Xsyevd looped", [&](int) {
        fresh();
        for (std::int64_t b = 0; b < count; ++b)
            solver_check(cusolverDnXsyevd(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, ct,
                                          static_cast<std::byte*>(w.data()) + bytes_of(t, b, n), n, ct,
                                          static_cast<std::byte*>(values.data()) + std::size_t(b * n) * size_of(t), ct,
                                          raw.work.data(), sdev, raw.host.data(), shost, ints + b),
                         "cusolverDnXsyevd");
    });
    const TensorLayout l = detail::packed_column_major(t, std::vector<std::int64_t>{count, n, n});
    linalg::Eigh plan(l);
    plan.plan();
    const TensorView av(a.data(), l), wv(w.data(), l);
    // gpumath copies A into the vectors itself: the same work as the raw routes' copy.
    const auto ours = [&](int) { plan.execute(av, values, wv, info, stream); };
    double best = 0;
    std::string best_name;
    for (const auto& [name, fn] : routes) {
        const double ms = bench::gpu_ms(s, fn, 2, 7, 1);
        report.add({group, name, "ms", ms, 0, ""});
        if (best_name.empty() || ms < best) {
            best = ms;
            best_name = name;
        }
    }
    const double ours_ms = bench::gpu_ms(s, ours, 2, 7, 1);
    report.add({group, "gpumath automatic", "ms", ours_ms, best / ours_ms,
                "vs " + best_name + "; chose " + std::string(linalg::to_string(plan.backend()))});
    cusolverDnDestroySyevjInfo(jparams);
}

/// Time per matrix over n, batch 128, for eigh and Cholesky with `automatic` and each backend.
void no_cliff(bench::Reporter& report, const core::Stream& stream) {
    const cudaStream_t s = stream.handle();
    const std::int64_t count = 128;
    for (const char* op : {"eigh", "cholesky"})
        for (const std::int64_t n : {2, 4, 8, 16, 24, 31, 32, 33, 40, 48, 64, 96, 128}) {
            const std::string group = std::string(op) + " f32 batch 128 n=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const bool eig = std::string(op) == "eigh";
            const Tensor a = matrices(DataType::f32, count, n, !eig, stream);
            const core::Buffer w(bytes_of(DataType::f32, count, n), stream);
            const Tensor values = Tensor::empty(DataType::f32, {count, n}, stream);
            const Tensor info = Tensor::empty(DataType::i32, {count}, stream);
            const TensorLayout l = detail::packed_column_major(DataType::f32, std::vector<std::int64_t>{count, n, n});
            const TensorView av(a.data(), l), wv(w.data(), l);
            for (const linalg::Backend b :
                 {linalg::Backend::looped, linalg::Backend::batched, linalg::Backend::automatic}) {
                std::function<void(int)> fn;
                std::string chosen;
                if (eig) {
                    auto plan = std::make_shared<linalg::Eigh>(l, linalg::EighOptions{.backend = b});
                    plan->plan();
                    chosen = linalg::to_string(plan->backend());
                    fn = [plan, &av, &values, &wv, &info, &stream](int) {
                        plan->execute(av, values, wv, info, stream);
                    };
                } else {
                    auto plan = std::make_shared<linalg::Cholesky>(l, linalg::CholeskyOptions{.backend = b});
                    plan->plan();
                    chosen = linalg::to_string(plan->backend());
                    fn = [plan, &av, &wv, &info, &stream](int) { plan->factorize(av, wv, info, stream); };
                }
                const double ms = bench::gpu_ms(s, fn, 2, 7, 1);
                report.add({group, std::string(linalg::to_string(b)), "us/matrix", ms * 1e3 / double(count), 0,
                            b == linalg::Backend::automatic ? "chose " + chosen : ""});
            }
        }
}

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_linalg");
    bench::Reporter report("bench_linalg", argc, argv);
    bench::print_environment("bench_linalg");
    const core::Stream stream;
    Raw raw(stream);
    host_cost(report, stream, raw);
    batched_eigh(report, stream, raw, DataType::f32, 500, 100, "eigh f32 500 x 100x100");
    batched_eigh(report, stream, raw, DataType::f64, 500, 100, "eigh f64 500 x 100x100");
    batched_eigh(report, stream, raw, DataType::f64, 512, 3, "eigh f64 512 x 3x3");
    no_cliff(report, stream);
    large_factorizations(report, stream, raw);
    large_qr(report, stream, raw);
    return 0;
}
