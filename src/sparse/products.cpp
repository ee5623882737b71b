// SPDX-License-Identifier: Apache-2.0
// What the SpMV and SpMM plans share (sparse/products.hpp).
#include "sparse/products.hpp"

#include <algorithm>
#include <array>
#include <complex>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/error.hpp>
#include "detail/capture_mode.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

bool views_overlap(const TensorView& a, const TensorView& b) noexcept {
    if (a.span_bytes() == 0 || b.span_bytes() == 0 || a.data() == nullptr || b.data() == nullptr) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data()), b0 = reinterpret_cast<std::uintptr_t>(b.data());
    return a0 < b0 + std::uintptr_t(b.span_bytes()) && b0 < a0 + std::uintptr_t(a.span_bytes());
}

void check_made(const sparse::MatrixView& m, const char* name, const char* api) {
    if (m.empty())
        throw_invalid(fmt::format("{}: the view is empty (default-constructed); make it with MatrixView::csr, csc, "
                                  "coo or bsr",
                                  name),
                      api);
}

void check_aligned_to_elements(const TensorView& v, const char* name, const char* api) {
    const std::size_t size = size_of(v.dtype());
    if (size != 0 && reinterpret_cast<std::uintptr_t>(v.data()) % size != 0)
        throw_invalid(fmt::format("{}: address {} is not aligned to its {}-byte elements", name, v.data(), size), api);
}

void check_apart(const TensorView& out, const char* out_name, const TensorView& in, const char* in_name,
                 const char* api) {
    if (views_overlap(out, in))
        throw_invalid(fmt::format("{} overlaps {} in memory; the output needs memory of its own", out_name, in_name),
                      api);
}

void check_apart_from_matrix(const TensorView& out, const char* out_name, const sparse::MatrixView& a,
                             const char* api) {
    const std::array<std::pair<const TensorView*, const char*>, 4> arrays{{{&a.offsets(), "A's offsets"},
                                                                           {&a.indices(), "A's indices"},
                                                                           {&a.row_indices(), "A's row indices"},
                                                                           {&a.values(), "A's values"}}};
    for (const auto& [v, name] : arrays) check_apart(out, out_name, *v, name, api);
}

void check_same_pattern(const sparse::MatrixView& a, const sparse::MatrixView& planned, const char* api) {
    check_made(a, "a", api);
    const auto same = [](const TensorView& x, const TensorView& y) {
        return x.data() == y.data() && x.layout() == y.layout();
    };
    if (a.format() != planned.format() || a.rows() != planned.rows() || a.cols() != planned.cols() ||
        a.block() != planned.block() || a.block_order() != planned.block_order() ||
        !same(a.offsets(), planned.offsets()) || !same(a.indices(), planned.indices()) ||
        !same(a.row_indices(), planned.row_indices()))
        throw_invalid(fmt::format("a: a {} {} × {} matrix whose pattern arrays are not the plan's ({} {} × {}); an "
                                  "execute takes new values of the planned pattern only (make a plan per pattern)",
                                  sparse::to_string(a.format()), a.rows(), a.cols(),
                                  sparse::to_string(planned.format()), planned.rows(), planned.cols()),
                      api);
    if (a.values().layout() != planned.values().layout())
        throw_invalid(fmt::format("a: values {} of shape {} where the plan has {} of shape {}",
                                  to_string(a.value_type()), gpumath::to_string(a.values().shape()),
                                  to_string(planned.value_type()), gpumath::to_string(planned.values().shape())),
                      api);
}

void throw_layout_mismatch(const char* name, const TensorLayout& got, const TensorLayout& planned, const char* api) {
    throw_invalid(fmt::format("{}: {} where the plan was made for {}; make a plan for this layout", name,
                              gpumath::to_string(got), gpumath::to_string(planned)),
                  api);
}

std::int64_t op_rows(const sparse::MatrixView& a, sparse::Operation op) noexcept {
    return op == sparse::Operation::none ? a.rows() : a.cols();
}

std::int64_t op_cols(const sparse::MatrixView& a, sparse::Operation op) noexcept {
    return op == sparse::Operation::none ? a.cols() : a.rows();
}

cusparseOperation_t to_cusparse(sparse::Operation op, DataType values) noexcept {
    switch (op) {
        case sparse::Operation::transpose:
            return CUSPARSE_OPERATION_TRANSPOSE;
        case sparse::Operation::conjugate_transpose:
            return is_complex(values) ? CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE : CUSPARSE_OPERATION_TRANSPOSE;
        case sparse::Operation::none:
            break;
    }
    return CUSPARSE_OPERATION_NON_TRANSPOSE;
}

Scalars::Scalars(DataType compute, double a, double b) noexcept {
    const auto put = [&](unsigned char* out, double v) {
        switch (compute) {
            case DataType::f64: {
                std::memcpy(out, &v, sizeof v);
                break;
            }
            case DataType::c32: {
                const std::complex<float> c(float(v), 0.0F);
                std::memcpy(out, &c, sizeof c);
                break;
            }
            case DataType::c64: {
                const std::complex<double> c(v, 0.0);
                std::memcpy(out, &c, sizeof c);
                break;
            }
            default: {
                const auto f = float(v);
                std::memcpy(out, &f, sizeof f);
                break;
            }
        }
    };
    put(alpha, a);
    put(beta, b);
}

void check_plan_device(int device, const char* api) {
    const int d = current_device();
    if (d != device)
        throw_invalid(
            fmt::format("the plan was made for device {}, the current device is {}; make a plan per device", device, d),
            api);
}

void ProductPlan::plan(const core::StreamRef* after) {
    if (planned.load(std::memory_order_acquire)) return;
    std::lock_guard lock(plan_mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    device = current_device();
    if (after != nullptr) {
        // A's arrays may still be being written on the caller's stream (an upload just enqueued):
        // the private planning stream must not read them before that work ends.
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        check(cudaStreamIsCapturing(after->handle(), &status), "cudaStreamIsCapturing",
              "asking whether the caller's stream captures");
        if (status == cudaStreamCaptureStatusNone)
            check(cudaStreamSynchronize(after->handle()), "cudaStreamSynchronize",
                  "waiting for the writes of A's arrays before planning");
    }
    plan_locked();
    planned.store(true, std::memory_order_release);
}

void ProductPlan::ensure_planned(const char* api, core::StreamRef stream) {
    plan(&stream);
    check_plan_device(device, api);
}

namespace {

struct Choices {
    std::mutex mutex;
    std::map<std::string, int> kept;
};

Choices& choices() {
    static auto* c = new Choices();  // never destroyed, like every per-process state
    return *c;
}

constexpr int rounds = 5;

}  // namespace

std::string sparse_device_model(int device) {
    std::string name = core::Device(device).properties().name;
    std::replace(name.begin(), name.end(), ' ', '_');
    return name;
}

int measured_choice(const std::string& key, const char* what, std::span<const std::string> names,
                    const std::function<void(int, core::StreamRef)>& prepare,
                    const std::function<void(int, core::StreamRef)>& run) {
    {
        Choices& c = choices();
        std::lock_guard lock(c.mutex);
        if (const auto it = c.kept.find(key); it != c.kept.end()) return it->second;
    }
    const RelaxedCaptureMode relaxed("measuring sparse algorithms");
    const core::Stream stream;
    const int count = int(names.size());
    std::vector<bool> usable(names.size(), false);
    std::string refusal;
    for (int i = 0; i < count; ++i) {
        try {
            prepare(i, stream);
            run(i, stream);  // warm-up
            usable[std::size_t(i)] = true;
        } catch (const CusparseError& e) {
            refusal = e.what();
            log(LogLevel::debug, "sparse {} [{}]: {} is refused: {}", what, key, names[std::size_t(i)], e.what());
        }
    }
    if (std::find(usable.begin(), usable.end(), true) == usable.end())
        throw CusparseError(
            fmt::format("{}: cuSPARSE refuses every algorithm for this problem; the last: {}", what, refusal), 0, what);
    std::vector<std::array<float, rounds>> times(names.size());
    const core::Event start({.timing = true}), stop({.timing = true});
    for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < count; ++i) {
            if (!usable[std::size_t(i)]) continue;
            stream.record(start);
            run(i, stream);
            stream.record(stop);
            stop.synchronize();
            times[std::size_t(i)][std::size_t(r)] = core::Event::elapsed_ms(start, stop);
        }
    int chosen = -1;
    float best = 0.0F;
    std::string report;
    for (int i = 0; i < count; ++i) {
        if (!usable[std::size_t(i)]) continue;
        std::array<float, rounds> t = times[std::size_t(i)];
        std::nth_element(t.begin(), t.begin() + rounds / 2, t.end());
        const float median = t[rounds / 2];
        report += fmt::format("{}{} {:.4f} ms", report.empty() ? "" : ", ", names[std::size_t(i)], median);
        if (chosen < 0 || median < best) {
            best = median;
            chosen = i;
        }
    }
    log(LogLevel::info, "sparse {} [{}]: {} -> {}", what, key, report, names[std::size_t(chosen)]);
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    return c.kept.emplace(key, chosen).first->second;  // the first measurement of a key wins
}

std::string stream_identity(core::StreamRef stream) {
    if (stream.handle() == cudaStreamPerThread)
        return fmt::format("per-thread:{}", std::hash<std::thread::id>{}(std::this_thread::get_id()));
    return fmt::format("{}", static_cast<const void*>(stream.handle()));
}

}  // namespace gpumath::detail
