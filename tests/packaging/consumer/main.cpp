// SPDX-License-Identifier: Apache-2.0
// Uses what its target offers, on a machine with or without a GPU: the whole library, or one module
// through its umbrella header (GPUMATH_CONSUMER_CORE / _MATMUL / _FFT / _LINALG / _SPARSE / _DIST).
#include <cstdio>
#include <cstring>

#if defined(GPUMATH_CONSUMER_CORE)
#include <gpumath/core.hpp>
#elif defined(GPUMATH_CONSUMER_MATMUL)
#include <gpumath/matmul.hpp>
#elif defined(GPUMATH_CONSUMER_FFT)
#include <gpumath/fft.hpp>
#elif defined(GPUMATH_CONSUMER_LINALG)
#include <gpumath/linalg.hpp>
#elif defined(GPUMATH_CONSUMER_SPARSE)
#include <gpumath/sparse.hpp>
#elif defined(GPUMATH_CONSUMER_DIST)
#include <gpumath/dist.hpp>  // gpumath::dist links the matmul and FFT modules too
#include <gpumath/fft.hpp>
#include <gpumath/matmul.hpp>
#else
#include <gpumath/gpumath.hpp>
#endif
#include <gpumath/core/device.hpp>
#include <gpumath/version.hpp>

// fmt is private to gpumath's build: no public header but the opt-in <gpumath/fmt.hpp> reaches it.
#if defined(FMT_VERSION)
#error "a gpumath header included fmt, which consumers need not have"
#endif
#if defined(EXPECT_DLPACK) && !defined(GPUMATH_HAS_DLPACK)
#error "gpumath was built with DLPack interop, but its target does not define GPUMATH_HAS_DLPACK"
#endif
#if defined(GPUMATH_HAS_DLPACK)
#include <gpumath/dlpack.hpp>
#endif
#if defined(EXPECT_DIST) && (defined(GPUMATH_CONSUMER_DIST) || defined(GPUMATH_CONSUMER_GPUMATH)) && \
    !defined(GPUMATH_HAS_DIST)
#error "gpumath was built with the multi-GPU module, but its target does not define GPUMATH_HAS_DIST"
#endif

int main() {
    if (std::strcmp(gpumath::version_string, EXPECTED_VERSION) != 0) {
        std::printf("version mismatch: headers say %s, package says %s\n", gpumath::version_string, EXPECTED_VERSION);
        return 1;
    }
    const gpumath::TensorLayout layout(gpumath::DataType::bf16, {2, 3, 4});
    if (layout.stride(0) != 12 || layout.stride(1) != 4 || layout.stride(2) != 1 || layout.size() != 24) {
        std::printf("unexpected layout %s\n", gpumath::to_string(layout).c_str());
        return 1;
    }
    try {
        (void)gpumath::TensorLayout(gpumath::DataType::f32, {-1});
        std::printf("a negative extent was accepted\n");
        return 1;
    } catch (const gpumath::InvalidArgument&) {}
#if defined(GPUMATH_HAS_DLPACK)
    // DLPack interop links and validates without a GPU: a CPU tensor is refused.
    std::int64_t extent = 4;
    float values[4] = {};  // NOLINT: DLPack points at plain arrays
    DLTensor host{};
    host.data = values;
    host.device.device_type = kDLCPU;
    host.ndim = 1;
    host.dtype = gpumath::to_dlpack(gpumath::DataType::f32);
    host.shape = &extent;
    try {
        (void)gpumath::TensorView::from_dlpack(host);
        std::printf("a CPU DLPack tensor was accepted\n");
        return 1;
    } catch (const gpumath::InvalidArgument&) {}
#endif
#if defined(GPUMATH_CONSUMER_MATMUL) || !(defined(GPUMATH_CONSUMER_CORE) || defined(GPUMATH_CONSUMER_FFT) || \
                                          defined(GPUMATH_CONSUMER_LINALG) || defined(GPUMATH_CONSUMER_SPARSE))
    // A plan is validated without a GPU.
    const gpumath::Matmul mm(gpumath::TensorLayout(gpumath::DataType::f32, {8, 4}),
                             gpumath::TensorLayout(gpumath::DataType::f32, {4, 6}));
    if (mm.m() != 8 || mm.n() != 6 || mm.k() != 4) {
        std::printf("unexpected matmul problem\n");
        return 1;
    }
#endif
#if defined(GPUMATH_CONSUMER_FFT) || !(defined(GPUMATH_CONSUMER_CORE) || defined(GPUMATH_CONSUMER_MATMUL) || \
                                       defined(GPUMATH_CONSUMER_LINALG) || defined(GPUMATH_CONSUMER_SPARSE))
    const gpumath::FFT fft(gpumath::TensorLayout(gpumath::DataType::c32, {4, 64}));
    if (fft.kind() != gpumath::FFTKind::c2c || fft.output_layout().shape(1) != 64) {
        std::printf("unexpected FFT plan\n");
        return 1;
    }
#endif
#if defined(GPUMATH_CONSUMER_LINALG) || defined(GPUMATH_CONSUMER_GPUMATH)
    // A linalg plan is validated without a GPU; bad input is refused before any CUDA call.
    const gpumath::linalg::Eigh eigh(gpumath::TensorLayout(gpumath::DataType::c32, {3, 8, 8}));
    if (eigh.values_layout().dtype() != gpumath::DataType::f32 || eigh.info_layout().size() != 3) {
        std::printf("unexpected eigh plan\n");
        return 1;
    }
    try {
        (void)gpumath::linalg::Cholesky(gpumath::TensorLayout(gpumath::DataType::f32, {4, 5}));
        std::printf("a non-square Cholesky was accepted\n");
        return 1;
    } catch (const gpumath::InvalidArgument&) {}
#endif
#if defined(GPUMATH_CONSUMER_SPARSE) || defined(GPUMATH_CONSUMER_GPUMATH)
    // A sparse view is checked on the host, without a GPU.
    try {
        (void)gpumath::sparse::MatrixView::csr(4, 4, gpumath::TensorView(nullptr, gpumath::DataType::i32, {4}),
                                               gpumath::TensorView(nullptr, gpumath::DataType::i32, {0}),
                                               gpumath::TensorView(nullptr, gpumath::DataType::f32, {0}));
        std::printf("a CSR view with 4 row offsets for 4 rows was accepted\n");
        return 1;
    } catch (const gpumath::InvalidArgument&) {}
#endif
#if defined(GPUMATH_HAS_DIST)
    // The multi-GPU module validates without a GPU, and finds NCCL at run time (or says why not).
    try {
        (void)gpumath::dist::Communicator{-1};
        std::printf("a communicator on device -1 was accepted\n");
        return 1;
    } catch (const gpumath::InvalidArgument&) {}
    try {
        std::printf("NCCL %d loaded at run time\n", gpumath::dist::nccl_version());
    } catch (const gpumath::NcclError& e) {
        std::printf("NCCL not loaded: %s\n", e.what());
    }
#endif
    std::printf("gpumath %s consumer: %d CUDA device(s)\n", gpumath::version_string, gpumath::core::Device::count());
    return 0;
}
