// SPDX-License-Identifier: Apache-2.0
// A windowed FFT with normalization: a Hann window applied by a load callback as cuFFT reads the
// data, a forward c2c FFT with Normalization::forward (so a unit-amplitude tone on a bin shows as
// magnitude 0.5, the Hann window's mean), through a stateful plan reused for several signals.
// gpumath times the fused and the separate way of running the window once, at planning, and
// keeps the faster. The spectra are checked against a CPU DFT in double.
//
// Without a GPU it validates the plan, compiles the window to LTO-IR (NVRTC needs no GPU), says
// so, and exits with 77.
#include <cmath>
#include <complex>
#include <cstdio>
#include <exception>
#include <numbers>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/fft.hpp>

namespace gm = gpumath;

// The window depends on the position within each row: offset % N (rows are contiguous).
constexpr const char* hann_source = R"(
#include <cufftXt.h>
extern "C" __device__ cufftComplex hann(void* in, unsigned long long offset, void*, void*) {
    const unsigned long long n = N;
    const float w = 0.5f - 0.5f * cospif(2.0f * float(offset % n) / float(n));
    const cufftComplex v = static_cast<const cufftComplex*>(in)[offset];
    return make_cuComplex(v.x * w, v.y * w);
}
)";

int main() try {
    constexpr std::int64_t rows = 16, n = 2048;
    std::string source = hann_source;
    source.replace(source.find("N;"), 1, std::to_string(n));
    const gm::FFTOptions options{.normalization = gm::Normalization::forward,
                                 .prolog = {.source = source, .symbol = "hann"},
                                 .callback_mode = gm::CallbackMode::automatic};
    gm::FFT plan(gm::TensorLayout(gm::DataType::c32, {rows, n}), options);

    if (gm::core::Device::count() == 0) {
        const gm::core::ObjectCode code =
            gm::compile_fft_callback(options.prolog, gm::FFTCallbackKind::load, gm::DataType::c32, "sm_90");
        std::printf(
            "plan for %s validated; the Hann window compiles to %zu bytes of LTO-IR for sm_90; running the "
            "FFT needs a GPU, and this machine has no CUDA device\n",
            gm::to_string(plan.input_layout()).c_str(), code.bytes().size());
        return 77;
    }

    plan.plan();
    std::printf("window runs %s (measured at planning)\n",
                plan.callback_mode() == gm::CallbackMode::fused ? "fused into cuFFT" : "as a separate pass");
    gm::core::Stream stream;
    std::vector<std::complex<double>> twiddle(static_cast<std::size_t>(n));
    std::vector<double> window(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < n; ++t) {
        twiddle[std::size_t(t)] = std::polar(1.0, -2 * std::numbers::pi * double(t) / double(n));
        window[std::size_t(t)] = 0.5 - 0.5 * std::cos(2 * std::numbers::pi * double(t) / double(n));
    }
    double worst = 0;
    for (int signal = 0; signal < 3; ++signal) {
        // Row r: a complex tone at bin 10 * (r + 1) + signal plus a weaker one.
        std::vector<std::complex<float>> x(std::size_t(rows * n));
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t t = 0; t < n; ++t) {
                const double f1 = double(10 * (r + 1) + signal), f2 = 300.5;
                x[std::size_t(r * n + t)] =
                    std::complex<float>(std::polar(1.0, 2 * std::numbers::pi * f1 * double(t) / double(n)) +
                                        std::polar(0.1, 2 * std::numbers::pi * f2 * double(t) / double(n)));
            }
        const gm::Tensor dx = gm::Tensor::from_host(x, {rows, n}, stream);
        const gm::Tensor spectrum = plan.execute(dx, gm::Direction::forward, stream);
        const std::vector<std::complex<float>> got = spectrum.to_host<std::complex<float>>(stream);

        double err = 0, ref = 0;
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t k = 0; k < n; ++k) {
                std::complex<double> s = 0;
                for (std::int64_t t = 0; t < n; ++t)
                    s += std::complex<double>(x[std::size_t(r * n + t)]) * window[std::size_t(t)] *
                         twiddle[std::size_t((k * t) % n)];
                s /= double(n);
                err += std::norm(std::complex<double>(got[std::size_t(r * n + k)]) - s);
                ref += std::norm(s);
            }
        const double rel = std::sqrt(err / ref);
        worst = std::max(worst, rel);
        const std::int64_t peak = 10 + signal;
        std::printf(
            "signal %d: |X[%lld]| of row 0 = %.4f (a unit tone under the Hann window: 0.5), relative error %.2e\n",
            signal, static_cast<long long>(peak), std::abs(got[std::size_t(peak)]), rel);
    }
    if (!(worst < 1e-5)) {
        std::fprintf(stderr, "08_fft_windowed: spectra differ from the CPU reference\n");
        return 1;
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "08_fft_windowed: %s\n", e.what());
    return 1;
}
