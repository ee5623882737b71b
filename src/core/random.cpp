// SPDX-License-Identifier: Apache-2.0
// Random tensors on cuRAND's host API (Philox4x32-10): the checks, a pool of generators per device
// (a generator is not thread-safe and is costly to make, so calls borrow one), and the passes that
// bring cuRAND's f32 or f64 values to the tensor's dtype and range.
#include <gpumath/tensor_ops.hpp>

#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>
#include <curand.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>

#include "core/stream_workspace.hpp"
#include "core/tensor_ops_internal.hpp"
#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

namespace {

enum class Distribution { uniform, normal, lognormal };

/// A device's idle generators. Never destroyed (per-device state, see device_registry.hpp).
struct GeneratorPool {
    std::mutex mutex;
    std::vector<curandGenerator_t> idle;
};

/// A generator borrowed from the current device's pool for one call.
class Borrowed {
public:
    explicit Borrowed(int device) : pool_(pool_of(device)) {
        {
            std::lock_guard lock(pool_.mutex);
            if (!pool_.idle.empty()) {
                generator_ = pool_.idle.back();
                pool_.idle.pop_back();
                return;
            }
        }
        // Making one may allocate on the device: allowed while the caller's stream captures.
        const RelaxedCaptureMode relaxed("creating a cuRAND generator");
        check_curand(int(curandCreateGenerator(&generator_, CURAND_RNG_PSEUDO_PHILOX4_32_10)), "curandCreateGenerator",
                     "creating a Philox generator");
    }
    ~Borrowed() {
        std::lock_guard lock(pool_.mutex);
        pool_.idle.push_back(generator_);
    }
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    Borrowed(Borrowed&&) = delete;
    Borrowed& operator=(Borrowed&&) = delete;

    [[nodiscard]] curandGenerator_t get() const noexcept { return generator_; }

private:
    static GeneratorPool& pool_of(int device) {
        static auto& pools = *new DeviceRegistry<GeneratorPool>();
        return pools.get(device, "gpumath::random", [](int) { return new GeneratorPool(); });
    }
    GeneratorPool& pool_;
    curandGenerator_t generator_ = nullptr;
};

const char* name_of(Distribution d) {
    return d == Distribution::uniform ? "uniform" : d == Distribution::normal ? "normal" : "lognormal";
}

/// The rules of a random tensor that its layout and the parameters decide.
void check_random(const TensorLayout& out, Distribution d, double a, double b, const char* api) {
    const DataType t = out.dtype();
    if (t != DataType::f16 && t != DataType::bf16 && t != DataType::f32 && t != DataType::f64)
        throw_invalid(fmt::format("out: {} elements; random::{} writes f16, bf16, f32 or f64 (cast the result for "
                                  "another type)",
                                  to_string(t), name_of(d)),
                      api);
    if (!out.is_contiguous())
        throw_invalid(fmt::format("out: strides {} are not row-major; random values fill contiguous tensors "
                                  "(copy them into a strided view after)",
                                  to_string(out.strides())),
                      api);
    if (!std::isfinite(a) || !std::isfinite(b))
        throw_invalid(fmt::format("{}: {} and {}: the parameters must be finite",
                                  d == Distribution::uniform ? "low, high" : "mean, stddev", a, b),
                      api);
    if (d == Distribution::uniform && a > b) throw_invalid(fmt::format("low: {} is above high ({})", a, b), api);
    if (d != Distribution::uniform && b < 0) throw_invalid(fmt::format("stddev: {} is negative", b), api);
}

/// cuRAND's values for `n` elements of f32 (or f64) at `data`. Normal values come in pairs
/// (Box-Muller): cuRAND needs an even count.
void generate(curandGenerator_t g, Distribution d, bool f64, void* data, std::size_t n, double a, double b) {
    const char* api = "curandGenerate";
    curandStatus_t s = CURAND_STATUS_SUCCESS;
    switch (d) {
        case Distribution::uniform:
            api = f64 ? "curandGenerateUniformDouble" : "curandGenerateUniform";
            s = f64 ? curandGenerateUniformDouble(g, static_cast<double*>(data), n)
                    : curandGenerateUniform(g, static_cast<float*>(data), n);
            break;
        case Distribution::normal:
            api = f64 ? "curandGenerateNormalDouble" : "curandGenerateNormal";
            s = f64 ? curandGenerateNormalDouble(g, static_cast<double*>(data), n, a, b)
                    : curandGenerateNormal(g, static_cast<float*>(data), n, float(a), float(b));
            break;
        case Distribution::lognormal:
            api = f64 ? "curandGenerateLogNormalDouble" : "curandGenerateLogNormal";
            s = f64 ? curandGenerateLogNormalDouble(g, static_cast<double*>(data), n, a, b)
                    : curandGenerateLogNormal(g, static_cast<float*>(data), n, float(a), float(b));
            break;
    }
    check_curand(int(s), api, [&] { return fmt::format("drawing {} {} values", n, name_of(d)); });
}

void draw(const TensorView& out, Distribution d, double a, double b, const random::RandomOptions& o,
          core::StreamRef stream, const char* api) {
    check_written(out, "out", api);
    check_random(out, d, a, b, api);
    const auto n = std::size_t(out.size());
    if (n == 0) return;
    const int device = current_device();
    const bool f64 = out.dtype() == DataType::f64;
    const DataType drawn = f64 ? DataType::f64 : DataType::f32;
    const bool direct = out.dtype() == drawn;
    // cuRAND draws normal values in pairs: an odd count draws one more into scratch memory.
    const bool pairs = d != Distribution::uniform;
    const std::size_t even = pairs ? n & ~std::size_t(1) : n;
    const std::size_t scratch = (direct ? 0 : n * size_of(drawn)) + (even != n ? 2 * size_of(drawn) : 0);
    StreamWorkspace::Lease area = default_stream_workspace(device).acquire(scratch, stream);
    void* values = direct ? out.data() : area.data;
    Borrowed g(device);
    check_curand(int(curandSetPseudoRandomGeneratorSeed(g.get(), o.seed)), "curandSetPseudoRandomGeneratorSeed");
    check_curand(int(curandSetGeneratorOffset(g.get(), o.offset)), "curandSetGeneratorOffset");
    check_curand(int(curandSetStream(g.get(), stream.handle())), "curandSetStream");
    if (even > 0) generate(g.get(), d, f64, values, even, a, b);
    if (even != n) {
        // The last value: the first of the next pair, drawn where the sequence continues.
        auto* pair = static_cast<char*>(area.data) + (direct ? 0 : n * size_of(drawn));
        check_curand(int(curandSetGeneratorOffset(g.get(), o.offset + even)), "curandSetGeneratorOffset");
        generate(g.get(), d, f64, pair, 2, a, b);
        check(cudaMemcpyAsync(static_cast<char*>(values) + even * size_of(drawn), pair, size_of(drawn),
                              cudaMemcpyDeviceToDevice, stream.handle()),
              "cudaMemcpyAsync", "placing the last of an odd count of random values");
    }
    // Uniform values come on (0, 1]; other dtypes are rounded from f32.
    const bool scaled = d == Distribution::uniform && (a != 0.0 || b != 1.0);
    if (scaled || !direct)
        affine_flat(values, drawn, out.data(), out.dtype(), std::int64_t(n), scaled ? b - a : 1.0, scaled ? a : 0.0,
                    stream);
}

Tensor allocate_and_draw(DataType dtype, std::initializer_list<std::int64_t> shape, Distribution d, double a, double b,
                         const random::RandomOptions& o, core::StreamRef stream, const char* api) {
    const TensorLayout layout(dtype, shape);
    check_random(layout, d, a, b, api);
    reject_capture(stream, api, "gpumath allocates no results during a capture: fill a tensor made before");
    Tensor t = Tensor::empty(layout, stream);
    draw(t.view(), d, a, b, o, stream, api);
    return t;
}

}  // namespace

}  // namespace gpumath::detail

namespace gpumath::random {

void uniform(const TensorView& out, double low, double high, const RandomOptions& options, core::StreamRef stream) {
    detail::draw(out, detail::Distribution::uniform, low, high, options, stream, "gpumath::random::uniform");
}

void normal(const TensorView& out, double mean, double stddev, const RandomOptions& options, core::StreamRef stream) {
    detail::draw(out, detail::Distribution::normal, mean, stddev, options, stream, "gpumath::random::normal");
}

void lognormal(const TensorView& out, double mean, double stddev, const RandomOptions& options,
               core::StreamRef stream) {
    detail::draw(out, detail::Distribution::lognormal, mean, stddev, options, stream, "gpumath::random::lognormal");
}

Tensor uniform(DataType dtype, std::initializer_list<std::int64_t> shape, double low, double high,
               const RandomOptions& options, core::StreamRef stream) {
    return detail::allocate_and_draw(dtype, shape, detail::Distribution::uniform, low, high, options, stream,
                                     "gpumath::random::uniform");
}

Tensor normal(DataType dtype, std::initializer_list<std::int64_t> shape, double mean, double stddev,
              const RandomOptions& options, core::StreamRef stream) {
    return detail::allocate_and_draw(dtype, shape, detail::Distribution::normal, mean, stddev, options, stream,
                                     "gpumath::random::normal");
}

Tensor lognormal(DataType dtype, std::initializer_list<std::int64_t> shape, double mean, double stddev,
                 const RandomOptions& options, core::StreamRef stream) {
    return detail::allocate_and_draw(dtype, shape, detail::Distribution::lognormal, mean, stddev, options, stream,
                                     "gpumath::random::lognormal");
}

}  // namespace gpumath::random
