// SPDX-License-Identifier: Apache-2.0
// DLPack both ways: a gpumath tensor handed out as a DLManagedTensor (the consumer reads it, then
// hands it back), and a tensor from another framework (here, code with its own cudaMalloc and
// deleter, as PyTorch, CuPy or JAX would give) adopted as a gpumath Tensor, multiplied with
// gpumath::matmul and checked, its deleter running once when gpumath lets go.
//
// The producer's matrix A (M, K) is column-major (strides (1, M) in elements): gpumath takes the
// strides as they are, no copy. Built when gpumath has DLPack interop (libdlpack-dev). Without a
// GPU it shows a refused CPU tensor, says why it stops, and exits 77.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include <gpumath/dlpack.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::Tensor;
namespace core = gpumath::core;

namespace {

// The other framework: owns a device matrix and tells, through its deleter, when it may free it.
struct Producer {
    std::int64_t shape[2] = {0, 0};    // NOLINT: DLPack points at plain arrays
    std::int64_t strides[2] = {0, 0};  // NOLINT
    DLManagedTensor managed{};
    int deletes = 0;
};

void check_cuda(cudaError_t status, const char* what) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
        std::exit(1);
    }
}

// A column-major (m, k) f32 matrix A[i][p] = values[i + p * m] in cudaMalloc'ed memory.
DLManagedTensor* produce(Producer& p, const std::vector<float>& values, std::int64_t m, std::int64_t k) {
    void* data = nullptr;
    check_cuda(cudaMalloc(&data, values.size() * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMemcpy(data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    p.shape[0] = m;
    p.shape[1] = k;
    p.strides[0] = 1;
    p.strides[1] = m;
    DLTensor& t = p.managed.dl_tensor;
    t.data = data;
    t.device.device_type = kDLCUDA;
    t.device.device_id = device;
    t.ndim = 2;
    t.dtype = gpumath::to_dlpack(DataType::f32);
    t.shape = p.shape;
    t.strides = p.strides;
    p.managed.manager_ctx = &p;
    p.managed.deleter = [](DLManagedTensor* self) {
        cudaFree(self->dl_tensor.data);
        ++static_cast<Producer*>(self->manager_ctx)->deletes;
    };
    return &p.managed;
}

const char* device_name(int type) {
    switch (type) {
        case kDLCUDA:
            return "kDLCUDA";
        case kDLCUDAHost:
            return "kDLCUDAHost";
        case kDLCUDAManaged:
            return "kDLCUDAManaged";
        default:
            return "other";
    }
}

}  // namespace

int main() try {
    // Validation needs no GPU: a CPU tensor is refused, naming the field.
    std::int64_t host_shape[1] = {4};     // NOLINT: DLPack points at plain arrays
    float host_values[4] = {1, 2, 3, 4};  // NOLINT
    DLTensor host{};
    host.data = host_values;
    host.device.device_type = kDLCPU;
    host.ndim = 1;
    host.dtype = gpumath::to_dlpack(DataType::f32);
    host.shape = host_shape;
    try {
        (void)gpumath::TensorView::from_dlpack(host);
    } catch (const gpumath::InvalidArgument& e) {
        std::printf("a CPU tensor is refused: %s\n", e.what());
    }
    if (core::Device::count() == 0) {
        std::printf("needs a CUDA GPU to exchange device tensors; this machine has no CUDA device\n");
        return 77;
    }
    core::Stream stream;

    // 1. gpumath -> DLPack -> gpumath.
    const std::vector<float> x = {1, 2, 3, 4, 5, 6};
    Tensor t = Tensor::from_host(x, {2, 3}, stream);
    DLManagedTensor* out = std::move(t).to_dlpack();
    const DLTensor& dl = out->dl_tensor;
    std::printf("exported: %s:%d, dtype code %d bits %d, shape (%lld, %lld), strides (%lld, %lld)\n",
                device_name(dl.device.device_type), dl.device.device_id, dl.dtype.code, dl.dtype.bits,
                static_cast<long long>(dl.shape[0]), static_cast<long long>(dl.shape[1]),
                static_cast<long long>(dl.strides[0]), static_cast<long long>(dl.strides[1]));
    // A consumer reads the memory in the stream order of gpumath's work, then hands it back.
    stream.synchronize();
    std::vector<float> seen(x.size());
    check_cuda(cudaMemcpy(seen.data(), dl.data, seen.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const Tensor back = Tensor::from_dlpack(out);
    const bool round_trip = seen == x && back.to_host<float>(stream) == x;
    std::printf("round trip gpumath -> DLPack -> gpumath: %s\n", round_trip ? "same data" : "DATA DIFFERS");

    // 2. A producer's column-major A (M, K) adopted and multiplied by gpumath's B (K, N).
    constexpr std::int64_t m = 64, k = 48, n = 32;
    std::vector<float> a(std::size_t(m * k)), b(std::size_t(k * n));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 13) - 6) / 8.0f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 7) - 3) / 4.0f;
    Producer producer;
    std::vector<float> y;
    {
        const Tensor a_dev = Tensor::from_dlpack(produce(producer, a, m, k));
        std::printf("adopted: %s\n", gpumath::to_string(a_dev.layout()).c_str());
        const Tensor b_dev = Tensor::from_host(b, {k, n}, stream);
        const Tensor y_dev = gpumath::matmul(a_dev, b_dev, {}, {}, stream);
        y = y_dev.to_host<float>(stream);
        std::printf("producer's deleter calls while gpumath holds A: %d\n", producer.deletes);
    }
    std::printf("producer's deleter calls after gpumath let go: %d\n", producer.deletes);

    double worst = 0;
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (std::int64_t p = 0; p < k; ++p)
                want += double(a[std::size_t(i + p * m)]) * double(b[std::size_t(p * n + j)]);
            worst = std::fmax(worst, std::fabs(double(y[std::size_t(i * n + j)]) - want));
        }
    std::printf("A @ B against the CPU: largest difference %.3e\n", worst);
    const bool ok = round_trip && producer.deletes == 1 && worst < 1e-2;
    std::printf("%s\n", ok ? "DLPack exchange checked" : "DLPACK EXCHANGE FAILED");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "11_dlpack: %s\n", e.what());
    return 1;
}
