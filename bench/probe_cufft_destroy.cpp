// SPDX-License-Identifier: Apache-2.0
// Whether destroying a cuFFT plan waits for work still queued on the device. A kernel holds a
// stream until the host releases it (it spins on mapped host memory, 10 s at most); a transform is
// enqueued behind it; then the plan is destroyed while the stream is still held. The probe prints
// how long cufftDestroy took and whether the stream was still busy afterwards, for a plan with
// cuFFT's own work area and for one with a caller's work area (auto-allocation off, as gpumath
// plans), and the same for cudaFree of an unrelated buffer. Raw CUDA runtime, NVRTC and cuFFT only.
//
// Build by hand (not part of the CMake build), one command:
//   g++ -std=c++20 -O2 -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//       bench/probe_cufft_destroy.cpp -lcufft -lnvrtc -lcudart -o probe_cufft_destroy
// Usage: probe_cufft_destroy. Prints one line per case.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <cufft.h>
#include <nvrtc.h>

namespace {

const char* const hold_source = R"(
extern "C" __global__ void hold(volatile const int* release, int* seen) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (;;) {
        if (*release != 0) { *seen = 1; return; }
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > 10000000000ull) { *seen = 2; return; }
    }
})";

bool cuda_ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) std::printf("%s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

// The hold kernel, compiled with NVRTC for the device's architecture and loaded.
cudaKernel_t load_hold(int major, int minor) {
    nvrtcProgram prog = nullptr;
    nvrtcCreateProgram(&prog, hold_source, "hold.cu", 0, nullptr, nullptr);
    const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
    const char* opts[] = {arch.c_str()};
    if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
        std::printf("NVRTC failed\n");
        return nullptr;
    }
    std::size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    std::vector<char> cubin(n);
    nvrtcGetCUBIN(prog, cubin.data());
    nvrtcDestroyProgram(&prog);
    cudaLibrary_t lib = nullptr;
    cudaKernel_t k = nullptr;
    if (!cuda_ok(cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                 "cudaLibraryLoadData") ||
        !cuda_ok(cudaLibraryGetKernel(&k, lib, "hold"), "cudaLibraryGetKernel"))
        return nullptr;
    return k;
}

struct Held {
    int* release = nullptr;  // mapped host memory
    int* seen = nullptr;     // device
};

// Launches the hold kernel on `s`.
bool hold(cudaKernel_t k, cudaStream_t s, Held& h) {
    *h.release = 0;
    int* release_dev = nullptr;
    cudaHostGetDevicePointer(reinterpret_cast<void**>(&release_dev), h.release, 0);
    cudaMemsetAsync(h.seen, 0, sizeof(int), s);
    void* args[] = {&release_dev, &h.seen};
    return cuda_ok(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(1), dim3(1), args, 0, s), "launch hold");
}

// Releases the held stream, waits for it and returns what the kernel saw (1: released, 2: timed out).
int release(cudaStream_t s, Held& h) {
    __atomic_store_n(h.release, 1, __ATOMIC_SEQ_CST);
    cudaStreamSynchronize(s);
    int seen = 0;
    cudaMemcpy(&seen, h.seen, sizeof seen, cudaMemcpyDeviceToHost);
    return seen;
}

// Runs `call` while `s` is held (after `enqueue` queued work behind the held kernel) and prints
// how long it took, whether the stream was still busy after it and whether it waited for the kernel.
template <class Enqueue, class Call>
bool while_held(cudaKernel_t k, cudaStream_t s, Held& h, const std::string& what, Enqueue&& enqueue, Call&& call) {
    if (!hold(k, s, h)) return false;
    enqueue();
    const auto t0 = std::chrono::steady_clock::now();
    const std::string status = call();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const cudaError_t busy = cudaStreamQuery(s);
    const int seen = release(s, h);
    std::printf("%s: %s, %.3f ms, stream %s afterwards, held kernel %s\n", what.c_str(), status.c_str(), ms,
                busy == cudaErrorNotReady ? "still busy" : "idle",
                seen == 1 ? "released by the host" : "timed out (the call waited for it)");
    return true;
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("probe_cufft_destroy: no CUDA device; nothing to probe\n");
        return 0;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    int cufft_version = 0;
    cufftGetVersion(&cufft_version);
    std::printf("device %s cc %d.%d, cuFFT %d\n", prop.name, prop.major, prop.minor, cufft_version);
    const cudaKernel_t k = load_hold(prop.major, prop.minor);
    if (k == nullptr) return 1;
    Held h;
    cudaHostAlloc(reinterpret_cast<void**>(&h.release), sizeof(int), cudaHostAllocMapped);
    cudaMalloc(reinterpret_cast<void**>(&h.seen), sizeof(int));
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    constexpr int n = 1 << 20;
    cufftComplex* data = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&data), sizeof(cufftComplex) * n);
    cudaMemset(data, 0, sizeof(cufftComplex) * n);

    for (const bool own_work : {true, false}) {
        cufftHandle plan = 0;
        cufftCreate(&plan);
        void* work = nullptr;
        std::size_t work_bytes = 0;
        if (!own_work) cufftSetAutoAllocation(plan, 0);
        if (cufftMakePlan1d(plan, n, CUFFT_C2C, 1, &work_bytes) != CUFFT_SUCCESS) {
            std::printf("cufftMakePlan1d failed\n");
            return 1;
        }
        if (!own_work) {
            cudaMalloc(&work, work_bytes);
            cufftSetWorkArea(plan, work);
        }
        cufftSetStream(plan, s);
        cufftExecC2C(plan, data, data, CUFFT_FORWARD);
        cudaStreamSynchronize(s);
        const bool ran = while_held(
            k, s, h, std::string("cufftDestroy, ") + (own_work ? "cuFFT's own" : "a caller's") + " work area",
            [&] { cufftExecC2C(plan, data, data, CUFFT_FORWARD); },
            [&] { return "status " + std::to_string(int(cufftDestroy(plan))); });
        if (!ran) return 1;
        if (work != nullptr) cudaFree(work);
    }
    void* other = nullptr;
    cudaMalloc(&other, 1 << 20);
    if (!while_held(
            k, s, h, "cudaFree of an unrelated buffer", [] {},
            [&] { return std::string(cudaGetErrorString(cudaFree(other))); }))
        return 1;
    return 0;
}
