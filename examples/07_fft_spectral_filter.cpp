// SPDX-License-Identifier: Apache-2.0
// A spectral low-pass filter: rfft -> multiply each frequency bin by a filter in a store callback
// -> irfft. The filter runs inside cuFFT or as a separate pass, whichever gpumath measures to be
// faster (CallbackMode::automatic). The result is checked against a CPU reference in double.
//
// Without a GPU it validates the plans, compiles the callback to LTO-IR (NVRTC needs no GPU),
// says so, and exits with 77 because running the transforms needs a GPU.
#include <cmath>
#include <complex>
#include <cstdio>
#include <exception>
#include <numbers>
#include <random>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/fft.hpp>

namespace gm = gpumath;

// The store callback: bin k of every row is multiplied by filter[k]. `offset` counts complex
// elements of the (rows, bins) output; user_info points to the filter (bins floats). Declaring it
// extern "C" or not makes no difference to gpumath.
constexpr const char* filter_source = R"(
#include <cufftXt.h>
constexpr unsigned long long bins = BINS;
__device__ void low_pass(void* out, unsigned long long offset, cufftComplex value, void* info, void*) {
    const float h = static_cast<const float*>(info)[offset % bins];
    static_cast<cufftComplex*>(out)[offset] = make_cuComplex(value.x * h, value.y * h);
}
)";

int main() try {
    constexpr std::int64_t rows = 8, n = 1024, bins = n / 2 + 1;
    std::string source = filter_source;
    source.replace(source.find("BINS"), 4, std::to_string(bins));

    // Plans validate their layouts and options with no GPU work.
    const gm::TensorLayout signal(gm::DataType::f32, {rows, n});
    const gm::FFT forward(signal);
    const gm::FFT inverse(forward.output_layout(), {.kind = gm::FFTKind::c2r, .last_axis_size = n});
    std::printf("rfft %s -> %s, irfft back to %s\n", gm::to_string(signal).c_str(),
                gm::to_string(forward.output_layout()).c_str(), gm::to_string(inverse.output_layout()).c_str());

    if (gm::core::Device::count() == 0) {
        const gm::core::ObjectCode code = gm::compile_fft_callback(
            {.source = source, .symbol = "low_pass"}, gm::FFTCallbackKind::store, gm::DataType::c32, "sm_90");
        std::printf(
            "compiled the filter callback to %zu bytes of LTO-IR for sm_90; running the transforms needs a "
            "GPU, and this machine has no CUDA device\n",
            code.bytes().size());
        return 77;
    }

    // A noisy two-tone signal and a Gaussian low-pass filter over the bins.
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0.0f, 0.3f);
    std::vector<float> x(std::size_t(rows * n));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t t = 0; t < n; ++t)
            x[std::size_t(r * n + t)] = float(std::sin(2 * std::numbers::pi * double(3 + r) * double(t) / double(n)) +
                                              0.5 * std::sin(2 * std::numbers::pi * 200.0 * double(t) / double(n))) +
                                        noise(rng);
    std::vector<float> filter(static_cast<std::size_t>(bins));
    for (std::int64_t k = 0; k < bins; ++k)
        filter[std::size_t(k)] = float(std::exp(-0.5 * std::pow(double(k) / 40.0, 2)));

    gm::core::Stream stream;
    const gm::Tensor dx = gm::Tensor::from_host(x, {rows, n}, stream);
    const gm::core::Buffer dfilter = gm::core::Buffer::from_host(filter, stream);
    const gm::FFTOptions filtered{.epilog = {.source = source, .symbol = "low_pass", .user_info = dfilter.data()}};
    const gm::Tensor spectrum = gm::rfft(dx, filtered, stream);
    const gm::Tensor y = gm::irfft(spectrum, {.last_axis_size = n}, stream);
    const std::vector<float> got = y.to_host<float>(stream);

    // CPU reference in double: DFT, filter, inverse DFT (backward normalization: 1/n).
    double err = 0, ref = 0;
    std::vector<std::complex<double>> spec(static_cast<std::size_t>(bins));
    std::vector<std::complex<double>> twiddle(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < n; ++t)
        twiddle[std::size_t(t)] = std::polar(1.0, 2 * std::numbers::pi * double(t) / double(n));
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t k = 0; k < bins; ++k) {
            std::complex<double> s = 0;
            for (std::int64_t t = 0; t < n; ++t)
                s += double(x[std::size_t(r * n + t)]) * std::conj(twiddle[std::size_t((k * t) % n)]);
            spec[std::size_t(k)] = s * double(filter[std::size_t(k)]);
        }
        for (std::int64_t t = 0; t < n; ++t) {
            double v = spec[0].real();
            for (std::int64_t k = 1; k < bins; ++k) {
                const double w = (2 * k == n) ? 1.0 : 2.0;
                v += w * (spec[std::size_t(k)] * twiddle[std::size_t((k * t) % n)]).real();
            }
            v /= double(n);
            const double d = double(got[std::size_t(r * n + t)]) - v;
            err += d * d;
            ref += v * v;
        }
    }
    const double rel = std::sqrt(err / ref);
    std::printf("filtered %lld rows of %lld samples; relative error vs CPU reference %.2e\n",
                static_cast<long long>(rows), static_cast<long long>(n), rel);
    if (!(rel < 1e-5)) {
        std::fprintf(stderr, "07_fft_spectral_filter: result differs from the CPU reference\n");
        return 1;
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "07_fft_spectral_filter: %s\n", e.what());
    return 1;
}
