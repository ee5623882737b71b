// SPDX-License-Identifier: Apache-2.0
// gpumath::linalg against raw cuSOLVER doing the same work on the same buffers, same process:
// potrf, getrf, geqrf and syevd on large matrices (in place, each call on a fresh copy of the input, made
// by both sides alike), the host cost of a planned potrf, batched eigh against every cuSOLVER
// route, time per matrix over n for the batched backends (no cliff); the mixed-precision solve
// against f64 getrf + getrs, general eigendecompositions (Xgeev) against raw, gesvd on a large
// matrix against raw Xgesvd, and a batch of small SVDs by every backend.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <cusolverDn.h>
#include <fmt/format.h>

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

/// Median ms per call of `raw` and of `ours`, timed alternately in `rounds` rounds of `samples`
/// each, without gating the stream: gpumath's refined solve and Xgeev wait on the host inside,
/// which a gated stream would never let finish.
std::pair<double, double> alternating_ms(cudaStream_t s, const std::function<void(int)>& raw,
                                         const std::function<void(int)>& ours, int rounds, int samples, int warmup = 1,
                                         bool best = false) {
    std::vector<double> r, o;
    for (int i = 0; i < rounds; ++i) {
        r.push_back(bench::gpu_ms(s, raw, warmup, samples, 1));
        o.push_back(bench::gpu_ms(s, ours, warmup, samples, 1));
    }
    std::sort(r.begin(), r.end());
    std::sort(o.begin(), o.end());
    return best ? std::pair{r.front(), o.front()} : std::pair{r[r.size() / 2], o[o.size() / 2]};
}

/// Times raw against gpumath on one large matrix and reports both, with gpumath's TFLOP/s for
/// `flops`: bench::compare, or above n = 8192 where `few_when_large` (a call takes over a second)
/// one warm-up and three interleaved pairs of single calls (compare would first time 22 calls to
/// size its samples).
void report_large(bench::Reporter& report, const std::string& group, const char* raw_note, std::int64_t n, double flops,
                  bool few_when_large, cudaStream_t s, const std::function<void(int)>& raw_call,
                  const std::function<void(int)>& ours) {
    double raw_ms = 0, ours_ms = 0;
    if (few_when_large && n > 8192) {
        const bench::PairedMs m = bench::paired_gpu_ms(s, raw_call, ours, 1, 3, 1);
        raw_ms = m.a;
        ours_ms = m.a / m.ratio;
    } else {
        std::tie(raw_ms, ours_ms) =
            bench::compare(s, raw_call, ours, {.warmup = 2, .samples = 7, .rounds = 1, .max_seconds = 20});
    }
    report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, raw_note});
    report.add({group, "gpumath", "ms", ours_ms, raw_ms / ours_ms,
                std::to_string(int(flops / (ours_ms * 1e-3) / 1e12)) + " TFLOP/s"});
}

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
            report_large(report, group, "copy + Xpotrf in place", n, double(n) * double(n) * double(n) / 3.0, false, s,
                         raw_call, ours);
        }
    for (const DataType t : {DataType::f64, DataType::f32})
        for (const std::int64_t n :
             report.quick() ? std::vector<std::int64_t>{1024} : std::vector<std::int64_t>{4096, 16384}) {
            const std::string group = std::string("syevd ") + std::string(to_string(t)) + " n=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const Tensor a = matrices(t, 1, n, false, stream);
            const core::Buffer w(bytes_of(t, 1, n), stream);
            const Tensor values = Tensor::empty(t, {n}, stream);
            const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
            const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
            std::size_t dev = 0, host = 0;
            solver_check(cusolverDnXsyevd_bufferSize(raw.h, raw.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n,
                                                     ct, w.data(), n, ct, values.data(), ct, &dev, &host),
                         "bufferSize");
            raw.reserve(dev, host, stream);
            const TensorLayout l({t, {n, n}, {1, n}});
            linalg::Eigh plan(l);
            plan.plan();
            const TensorView wv(w.data(), l);
            const auto fresh = [&] {
                bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s),
                                  "copy");
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
            // At n = 16384 a call takes seconds: two interleaved pairs of single calls, no warm-up
            // beyond the n = 4096 case's (same kernels), the faster of each side's two.
            const auto [raw_ms, ours_ms] =
                n > 4096
                    ? alternating_ms(s, raw_call, ours, 2, 1, 0, true)
                    : bench::compare(s, raw_call, ours, {.warmup = 1, .samples = 5, .rounds = 1, .max_seconds = 30});
            report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, "copy + Xsyevd in place, vectors"});
            report.add({group, "gpumath", "ms", ours_ms, raw_ms / ours_ms, n > 4096 ? "best of 2 interleaved" : ""});
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
            report_large(report, group, "copy + Xgeqrf in place", n, 4.0 / 3.0 * double(n) * double(n) * double(n),
                         true, s, raw_call, ours);
        }
}

/// Xgetrf in place on one n × n column-major matrix (64-bit pivots): raw cuSOLVER against
/// LU::factorize with `lu` = `a` (no copy), the same info. Few samples at n = 16384.
void large_lu(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const cudaStream_t s = stream.handle();
    for (const DataType t : {DataType::f64, DataType::f32})
        for (const std::int64_t n :
             report.quick() ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{4096, 16384}) {
            const std::string group = std::string("getrf ") + std::string(to_string(t)) + " n=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const Tensor a = matrices(t, 1, n, false, stream);
            const core::Buffer w(bytes_of(t, 1, n), stream);
            const core::Buffer raw_pivots(std::size_t(n) * sizeof(std::int64_t), stream);
            const Tensor pivots = Tensor::empty(DataType::i32, {n}, stream);
            const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
            const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
            std::size_t dev = 0, host = 0;
            solver_check(cusolverDnXgetrf_bufferSize(raw.h, raw.p, n, n, ct, w.data(), n, ct, &dev, &host),
                         "bufferSize");
            raw.reserve(dev, host, stream);
            const TensorLayout l({t, {n, n}, {1, n}});
            linalg::LU plan(l);
            plan.plan();
            const TensorView wv(w.data(), l);
            const auto fresh = [&] {
                bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s),
                                  "copy");
            };
            const auto raw_call = [&](int) {
                fresh();
                solver_check(
                    cusolverDnXgetrf(raw.h, raw.p, n, n, ct, w.data(), n, static_cast<std::int64_t*>(raw_pivots.data()),
                                     ct, raw.work.data(), dev, raw.host.data(), host, static_cast<int*>(info.data())),
                    "cusolverDnXgetrf");
            };
            const auto ours = [&](int) {
                fresh();
                plan.factorize(wv, wv, pivots, info, stream);
            };
            report_large(report, group, "copy + Xgetrf in place, 64-bit pivots", n,
                         2.0 / 3.0 * double(n) * double(n) * double(n), true, s, raw_call, ours);
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

/// ‖A·x − b‖₂ / (‖A‖_F ‖x‖₂) on the host, for column-major A (n × n) and vectors x, b.
double backward_error(const std::vector<double>& a, const std::vector<double>& x, const std::vector<double>& b,
                      std::int64_t n) {
    std::vector<double> r(b.begin(), b.end());
    double an = 0, xn = 0;
    for (std::int64_t j = 0; j < n; ++j) {
        const double xj = x[std::size_t(j)];
        xn += xj * xj;
        const double* col = &a[std::size_t(j * n)];
        for (std::int64_t i = 0; i < n; ++i) {
            r[std::size_t(i)] -= col[i] * xj;
            an += col[i] * col[i];
        }
    }
    double rn = 0;
    for (const double v : r) rn += v * v;
    return std::sqrt(rn) / (std::sqrt(an) * std::sqrt(xn));
}

/// The mixed-precision solve (f16 LU refined to f64, cuSOLVER's IRSXgesv through RefinedSolve)
/// against raw Xgetrf + Xgetrs in f64 on the same buffers: a non-symmetric matrix with entries in
/// [-1, 1] and 2√n added to its diagonal (condition number about 4), one right-hand side. Both
/// sides copy A first (cuSOLVER's getrf overwrites it; RefinedSolve copies it itself).
void refined_solve(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const std::int64_t n = report.quick() ? 4096 : 16384;
    const std::string group = "refined solve f64 n=" + std::to_string(n);
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const TensorLayout l({DataType::f64, {n, n}, {1, n}});
    const Tensor a = Tensor::empty(l, stream);
    detail::fill_random(TensorView(a.data(), l), stream);
    detail::add_diagonal(detail::matrix_params(TensorView(a.data(), l), 1), DataType::f64, 2 * std::sqrt(double(n)), s);
    const Tensor b = Tensor::empty(DataType::f64, {n}, stream);
    detail::fill_random(b, stream);
    const core::Buffer w(bytes_of(DataType::f64, 1, n), stream);
    const Tensor x = Tensor::empty(DataType::f64, {n}, stream), x_raw = Tensor::empty(DataType::f64, {n}, stream);
    const core::Buffer pivots(std::size_t(n) * sizeof(std::int64_t), stream);
    const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
    std::size_t dev = 0, host = 0;
    solver_check(cusolverDnXgetrf_bufferSize(raw.h, raw.p, n, n, CUDA_R_64F, w.data(), n, CUDA_R_64F, &dev, &host),
                 "bufferSize");
    raw.reserve(dev, host, stream);
    auto* piv = static_cast<std::int64_t*>(pivots.data());
    auto* ints = static_cast<int*>(info.data());
    const auto raw_call = [&](int) {
        bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s), "copy");
        bench::cuda_check(cudaMemcpyAsync(x_raw.data(), b.data(), std::size_t(n) * 8, cudaMemcpyDeviceToDevice, s),
                          "copy");
        solver_check(cusolverDnXgetrf(raw.h, raw.p, n, n, CUDA_R_64F, w.data(), n, piv, CUDA_R_64F, raw.work.data(),
                                      dev, raw.host.data(), host, ints),
                     "cusolverDnXgetrf");
        solver_check(cusolverDnXgetrs(raw.h, raw.p, CUBLAS_OP_N, n, 1, CUDA_R_64F, w.data(), n, piv, CUDA_R_64F,
                                      x_raw.data(), n, ints),
                     "cusolverDnXgetrs");
    };
    linalg::RefinedSolve plan(l, b.view().layout());
    plan.plan();
    std::vector<linalg::RefinementStatus> last;
    // A as the raw side reads it: column-major (a Tensor's own view is row-major, which is Aᵀ).
    const TensorView av(a.data(), l);
    const auto ours = [&](int) { last = plan.execute(av, b, x, info, stream); };
    const auto [raw_ms, ours_ms] = alternating_ms(s, raw_call, ours, 3, 3);
    stream.synchronize();
    const std::vector<double> ha = a.to_host<double>(stream), hb = b.to_host<double>(stream);
    const double e_raw = backward_error(ha, x_raw.to_host<double>(stream), hb, n);
    const double e_ours = backward_error(ha, x.to_host<double>(stream), hb, n);
    const std::string it = last.empty() ? "?" : std::to_string(last[0].iterations);
    report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, "copy + Xgetrf + Xgetrs in f64"});
    report.add({group, "gpumath", "ms", ours_ms, raw_ms / ours_ms,
                "RefinedSolve f16 LU, " + it + " iterations" +
                    (!last.empty() && last[0].fell_back ? ", fell back" : "") + " (target ratio >= 2.5)"});
    report.add({group, "raw cuSOLVER", "backward error", e_raw, 0, "|Ax-b| / (|A|_F |x|)"});
    report.add({group, "gpumath", "backward error", e_ours, e_raw / e_ours, "target <= 10x raw's"});

    // cuSOLVER's IRSXgesv called directly with the plan's default parameters (f16 LU, GMRES): the
    // ceiling for the plan's speed and the reference for its accuracy.
    cusolverDnIRSParams_t params = nullptr;
    solver_check(cusolverDnIRSParamsCreate(&params), "cusolverDnIRSParamsCreate");
    solver_check(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_64F, CUSOLVER_R_16F), "precisions");
    solver_check(cusolverDnIRSParamsSetRefinementSolver(params, CUSOLVER_IRS_REFINE_GMRES), "refinement");
    std::size_t irs_bytes = 0;
    solver_check(cusolverDnIRSXgesv_bufferSize(raw.h, params, int(n), 1, &irs_bytes), "IRSXgesv_bufferSize");
    raw.reserve(irs_bytes, 0, stream);
    int raw_iters = 0;
    const auto raw_irs = [&](int) {
        bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s), "copy");
        cusolverDnIRSInfos_t infos = nullptr;
        solver_check(cusolverDnIRSInfosCreate(&infos), "cusolverDnIRSInfosCreate");
        solver_check(cusolverDnIRSXgesv(raw.h, params, infos, int(n), 1, w.data(), int(n), b.data(), int(n),
                                        x_raw.data(), int(n), raw.work.data(), irs_bytes, &raw_iters, ints),
                     "cusolverDnIRSXgesv");
        cusolverDnIRSInfosDestroy(infos);
    };
    const auto [irs_ms, ours2_ms] = alternating_ms(s, raw_irs, ours, 2, 3);
    stream.synchronize();
    const double e_irs = backward_error(ha, x_raw.to_host<double>(stream), hb, n);
    const double e_ours2 = backward_error(ha, x.to_host<double>(stream), hb, n);
    report.add({group, "raw IRSXgesv", "ms", irs_ms, 0,
                "f16 LU + GMRES, " + std::to_string(raw_iters) + " iterations, backward error " +
                    fmt::format("{:.2e}", e_irs)});
    report.add({group, "gpumath", "ms", ours2_ms, irs_ms / ours2_ms,
                "vs raw IRSXgesv, backward error " + fmt::format("{:.2e}", e_ours2)});
    cusolverDnIRSParamsDestroy(params);

    // Each lowest precision and refinement once, with its iterations and backward error.
    for (const linalg::LowestPrecision lp : {linalg::LowestPrecision::f16, linalg::LowestPrecision::bf16,
                                             linalg::LowestPrecision::tf32, linalg::LowestPrecision::f32}) {
        for (const linalg::Refinement r : {linalg::Refinement::classical, linalg::Refinement::gmres}) {
            linalg::RefinedSolve variant(l, b.view().layout(), {.lowest = lp, .refinement = r});
            variant.plan();
            std::vector<linalg::RefinementStatus> st;
            const double ms = bench::gpu_ms(
                s, [&](int) { st = variant.execute(av, b, x, info, stream); }, 1, 3, 1);
            stream.synchronize();
            const double e = backward_error(ha, x.to_host<double>(stream), hb, n);
            report.add({group, fmt::format("gpumath {} {}", linalg::to_string(lp), linalg::to_string(r)), "ms", ms,
                        raw_ms / ms,
                        fmt::format("{} iterations{}, backward error {:.2e}", st.empty() ? 0 : st[0].iterations,
                                    !st.empty() && st[0].fell_back ? " (fell back)" : "", e)});
        }
    }
}

/// Xgeev (eigenvalues and right eigenvectors) of a general f64 matrix: raw cuSOLVER in place on a
/// fresh copy against Eig with the same real packing, and with the complex vectors gpumath
/// unpacks.
void general_eig(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const std::int64_t n = report.quick() ? 512 : 2048;
    const std::string group = "geev f64 n=" + std::to_string(n);
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const Tensor a = matrices(DataType::f64, 1, n, false, stream);
    const TensorLayout l({DataType::f64, {n, n}, {1, n}});
    const core::Buffer w(bytes_of(DataType::f64, 1, n), stream);
    const Tensor values = Tensor::empty(DataType::c64, {n}, stream);
    const Tensor vr = Tensor::empty(l, stream);
    const Tensor vc = Tensor::empty(TensorLayout({DataType::c64, {n, n}, {1, n}}), stream);
    const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
    std::size_t dev = 0, host = 0;
    solver_check(cusolverDnXgeev_bufferSize(raw.h, raw.p, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n,
                                            CUDA_R_64F, w.data(), n, CUDA_C_64F, values.data(), CUDA_R_64F, nullptr, n,
                                            CUDA_R_64F, vr.data(), n, CUDA_R_64F, &dev, &host),
                 "bufferSize");
    raw.reserve(dev, host, stream);
    const auto raw_call = [&](int) {
        bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s), "copy");
        solver_check(
            cusolverDnXgeev(raw.h, raw.p, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, CUDA_R_64F, w.data(),
                            n, CUDA_C_64F, values.data(), CUDA_R_64F, nullptr, n, CUDA_R_64F, vr.data(), n, CUDA_R_64F,
                            raw.work.data(), dev, raw.host.data(), host, static_cast<int*>(info.data())),
            "cusolverDnXgeev");
    };
    const TensorView av(a.data(), l);  // the one matrix of the (1, n, n) tensor
    linalg::Eig packed(l, {.vectors = linalg::EigVectors::real_packed});
    linalg::Eig complex(l);
    packed.plan();
    complex.plan();
    const auto [raw_ms, packed_ms] = alternating_ms(
        s, raw_call, [&](int) { packed.execute(av, values, vr, info, stream); }, 2, 3);
    const auto [raw2_ms, complex_ms] = alternating_ms(
        s, raw_call, [&](int) { complex.execute(av, values, vc, info, stream); }, 1, 3);
    report.add({group, "raw cuSOLVER", "ms", raw_ms, 0, "copy + Xgeev, right vectors (real packing)"});
    report.add({group, "gpumath packed", "ms", packed_ms, raw_ms / packed_ms, "Eig, EigVectors::real_packed"});
    report.add({group, "gpumath complex", "ms", complex_ms, raw2_ms / complex_ms, "Eig, complex vectors unpacked"});
}

/// Xgesvd (thin U and Vᴴ) on one large column-major matrix, raw against the plan on the same
/// buffers: each call copies A into the matrix cuSOLVER overwrites (gpumath into its workspace).
/// Seconds per call: one warm-up and two timed pairs.
void large_svd(bench::Reporter& report, const core::Stream& stream, Raw& raw) {
    const cudaStream_t s = stream.handle();
    for (const DataType t : {DataType::f64, DataType::f32}) {
        const std::int64_t n = report.quick() ? 2048 : 8192;
        const std::string group = std::string("gesvd ") + std::string(to_string(t)) + " n=" + std::to_string(n);
        if (!report.selected(group)) continue;
        const Tensor a = matrices(t, 1, n, false, stream);
        const core::Buffer w(bytes_of(t, 1, n), stream), u(bytes_of(t, 1, n), stream), vt(bytes_of(t, 1, n), stream);
        const Tensor values = Tensor::empty(t, {n}, stream);
        const Tensor info = Tensor::empty(TensorLayout(DataType::i32, std::span<const std::int64_t>()), stream);
        const cudaDataType ct = t == DataType::f64 ? CUDA_R_64F : CUDA_R_32F;
        std::size_t dev = 0, host = 0;
        solver_check(cusolverDnXgesvd_bufferSize(raw.h, raw.p, 'S', 'S', n, n, ct, w.data(), n, ct, values.data(), ct,
                                                 u.data(), n, ct, vt.data(), n, ct, &dev, &host),
                     "bufferSize");
        raw.reserve(dev, host, stream);
        const TensorLayout l({t, {n, n}, {1, n}});
        linalg::SVD plan(l, {.backend = linalg::Backend::looped});
        plan.plan();
        const auto raw_call = [&](int) {
            bench::cuda_check(cudaMemcpyAsync(w.data(), a.data(), w.size_bytes(), cudaMemcpyDeviceToDevice, s), "copy");
            solver_check(cusolverDnXgesvd(raw.h, raw.p, 'S', 'S', n, n, ct, w.data(), n, ct, values.data(), ct,
                                          u.data(), n, ct, vt.data(), n, ct, raw.work.data(), dev, raw.host.data(),
                                          host, static_cast<int*>(info.data())),
                         "cusolverDnXgesvd");
        };
        // U and Vᴴ column-major: written in place, as the raw call writes them.
        const auto ours = [&](int) {
            plan.execute(TensorView(a.data(), l), TensorView(u.data(), l), values, TensorView(vt.data(), l), info,
                         stream);
        };
        const bench::PairedMs m = bench::paired_gpu_ms(s, raw_call, ours, 1, 2, 1);
        report.add({group, "raw cuSOLVER", "ms", m.a, 0, "copy + Xgesvd, thin U and Vh"});
        report.add({group, "gpumath", "ms", m.a / m.ratio, m.ratio, "looped (Xgesvd)"});
    }
}

/// A batch of small SVDs by every backend and by `automatic` (what it chose), in us per matrix.
void batched_svd(bench::Reporter& report, const core::Stream& stream, DataType t, std::int64_t count, std::int64_t n) {
    const std::string group = std::string("svd ") + std::string(to_string(t)) + " " + std::to_string(count) + " x " +
                              std::to_string(n) + "x" + std::to_string(n);
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const Tensor a = matrices(t, count, n, false, stream);
    const TensorLayout l = detail::packed_column_major(t, std::vector<std::int64_t>{count, n, n});
    const TensorView av(a.data(), l);
    for (const linalg::Backend b : {linalg::Backend::looped, linalg::Backend::jacobi, linalg::Backend::batched,
                                    linalg::Backend::approximate, linalg::Backend::automatic}) {
        auto plan = std::make_shared<linalg::SVD>(l, linalg::SVDOptions{.backend = b});
        plan->plan();
        auto u = std::make_shared<Tensor>(Tensor::empty(plan->u_layout(), stream));
        auto sv = std::make_shared<Tensor>(Tensor::empty(plan->values_layout(), stream));
        auto vh = std::make_shared<Tensor>(Tensor::empty(plan->vh_layout(), stream));
        auto info = std::make_shared<Tensor>(Tensor::empty(plan->info_layout(), stream));
        const double ms = bench::gpu_ms(
            s, [&, plan, u, sv, vh, info](int) { plan->execute(av, *u, *sv, *vh, *info, stream); }, 2, 7, 1);
        report.add({group, std::string(linalg::to_string(b)), "us/matrix", ms * 1e3 / double(count), 0,
                    b == linalg::Backend::automatic ? "chose " + std::string(linalg::to_string(plan->backend())) : ""});
    }
}

/// A (512, 3, 3) f64 eigendecomposition (values and vectors) on each backend and `automatic`, in ms.
void tiny_eigh_backends(bench::Reporter& report, const core::Stream& stream) {
    const std::string group = "eigh f64 512 x 3x3 by backend";
    if (!report.selected(group)) return;
    const cudaStream_t s = stream.handle();
    const std::int64_t count = 512, n = 3;
    const Tensor a = matrices(DataType::f64, count, n, false, stream);
    const core::Buffer w(bytes_of(DataType::f64, count, n), stream);
    const Tensor values = Tensor::empty(DataType::f64, {count, n}, stream);
    const Tensor info = Tensor::empty(DataType::i32, {count}, stream);
    const TensorLayout l = detail::packed_column_major(DataType::f64, std::vector<std::int64_t>{count, n, n});
    const TensorView av(a.data(), l), wv(w.data(), l);
    for (const linalg::Backend b : {linalg::Backend::warp, linalg::Backend::batched, linalg::Backend::jacobi_batched,
                                    linalg::Backend::looped, linalg::Backend::automatic}) {
        linalg::Eigh plan(l, {.backend = b});
        plan.plan();
        const double ms = bench::gpu_ms(
            s, [&](int) { plan.execute(av, values, wv, info, stream); }, 3, 15, 1);
        report.add({group, std::string(linalg::to_string(b)), "ms", ms, 0,
                    b == linalg::Backend::automatic        ? "chose " + std::string(linalg::to_string(plan.backend()))
                    : b == linalg::Backend::batched        ? "XsyevBatched"
                    : b == linalg::Backend::jacobi_batched ? "syevjBatched"
                                                           : ""});
    }
}

/// Time per matrix over n = 1 ... 128, batch 128, f32, for Cholesky, LU and eigh on each backend that
/// takes them (warp up to n = 32) and `automatic`: where the warp backend ends, no cliff.
void no_cliff_small(bench::Reporter& report, const core::Stream& stream) {
    const cudaStream_t s = stream.handle();
    const std::int64_t count = 128;
    const std::vector<std::int64_t> orders =
        report.quick() ? std::vector<std::int64_t>{1, 3, 8, 16, 32, 33, 64}
                       : std::vector<std::int64_t>{1,  2,  3,  4,  5,  6,  8,  10, 12, 16, 20,
                                                   24, 28, 31, 32, 33, 36, 40, 48, 64, 96, 128};
    for (const std::string op : {"cholesky", "lu", "eigh"})
        for (const std::int64_t n : orders) {
            const std::string group = "small " + op + " f32 batch 128 n=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const Tensor a = matrices(DataType::f32, count, n, op == "cholesky", stream);
            if (op == "lu")  // comfortably invertible
                detail::add_diagonal(detail::matrix_params(a, count), DataType::f32, double(n) / 4, stream);
            const core::Buffer w(bytes_of(DataType::f32, count, n), stream);
            const Tensor values = Tensor::empty(DataType::f32, {count, n}, stream);
            const Tensor pivots = Tensor::empty(DataType::i32, {count, n}, stream);
            const Tensor info = Tensor::empty(DataType::i32, {count}, stream);
            const TensorLayout l = detail::packed_column_major(DataType::f32, std::vector<std::int64_t>{count, n, n});
            const TensorView av(a.data(), l), wv(w.data(), l);
            for (const linalg::Backend b :
                 {linalg::Backend::warp, linalg::Backend::batched, linalg::Backend::jacobi_batched,
                  linalg::Backend::looped, linalg::Backend::automatic}) {
                if (b == linalg::Backend::warp && n > 32) continue;
                if (b == linalg::Backend::jacobi_batched && (op != "eigh" || n > 32)) continue;
                std::function<void(int)> fn;
                std::string chosen;
                if (op == "eigh") {
                    auto plan = std::make_shared<linalg::Eigh>(l, linalg::EighOptions{.backend = b});
                    plan->plan();
                    chosen = linalg::to_string(plan->backend());
                    fn = [plan, &av, &values, &wv, &info, &stream](int) {
                        plan->execute(av, values, wv, info, stream);
                    };
                } else if (op == "lu") {
                    auto plan = std::make_shared<linalg::LU>(l, linalg::LUOptions{.backend = b});
                    plan->plan();
                    chosen = linalg::to_string(plan->backend());
                    fn = [plan, &av, &wv, &pivots, &info, &stream](int) {
                        plan->factorize(av, wv, pivots, info, stream);
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
    tiny_eigh_backends(report, stream);
    no_cliff_small(report, stream);
    large_factorizations(report, stream, raw);
    large_qr(report, stream, raw);
    large_lu(report, stream, raw);
    refined_solve(report, stream, raw);
    general_eig(report, stream, raw);
    batched_svd(report, stream, DataType::f32, 1000, 16);
    batched_svd(report, stream, DataType::f64, 1000, 16);
    large_svd(report, stream, raw);
    return 0;
}
