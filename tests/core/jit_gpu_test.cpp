// SPDX-License-Identifier: Apache-2.0
// The JIT runtime on a real GPU: loading (cubin, PTX, LTO-linked), launching with results checked
// against a CPU reference, kernel attributes, parameter info and occupancy against what the device's
// properties imply, dynamic shared memory above 48 KiB, a cluster launch, a cooperative launch with
// grid-wide synchronisation, argument and configuration rejections, launches from another thread,
// graph replay against direct launches, and libraries and kernels loaded with the raw driver API and
// adopted. Outputs are poisoned (0xFF bytes = NaN) before each run.
//
// The first test compiles every source used here for sm_90 and runs on any machine, so a source
// that does not compile is caught without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"
#include "core/driver_api.hpp"
#include "jit_test_util.hpp"

using namespace gpumath;
using core::CodeType;
using core::Dim3;
using core::Kernel;
using core::LaunchConfig;
using core::Module;
using core::ObjectCode;
using core::Ownership;
using core::Program;

namespace {

constexpr const char* k_kernels = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void add_one(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

// Parameters of every size class, for the parameter-info and argument-packing checks.
extern "C" __global__ void axpby(float* out, const float* x, float a, int n, double bias, char flag, long long offset) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + float(bias) + float(flag) + float(offset);
}

template <class T>
__global__ void scale(T* x, T a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

extern "C" __global__ void reverse_static(float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = float(threadIdx.x) + 0.25f;
    __syncthreads();
    out[threadIdx.x] = tile[255 - threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(128) bounded(float* x) { x[threadIdx.x] = 1.0f; }

extern "C" __global__ void reverse_dynamic(float* out, int n) {
    extern __shared__ float s[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = float(i) * 0.5f;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];
}

extern "C" __global__ void neighbours(int* a, int* b, int n) {
    cg::grid_group grid = cg::this_grid();
    for (int i = int(grid.thread_rank()); i < n; i += int(grid.size())) a[i] = 3 * i + 1;
    grid.sync();
    for (int i = int(grid.thread_rank()); i < n; i += int(grid.size())) b[i] = a[(i + 1) % n] + a[(i + n - 1) % n];
}
)";

// Cluster special registers exist from sm_90 on.
constexpr const char* k_cluster = R"(
extern "C" __global__ void cluster_info(unsigned* out) {
    unsigned rank, size, id;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(id));
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = rank;
        out[3 * blockIdx.x + 1] = size;
        out[3 * blockIdx.x + 2] = id;
    }
}
)";

constexpr const char* k_lto_caller = R"(
__device__ float twice(float v);
extern "C" __global__ void apply_twice(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]);
}
)";
constexpr const char* k_lto_callee = "__device__ float twice(float v) { return 2.0f * v + 0.5f; }\n";

Program kernels_program(std::string arch) {
    Program p(k_kernels, {.name = "gpu_kernels", .arch = std::move(arch)});
    p.add_name_expression("scale<float>").add_name_expression("scale<double>");
    return p;
}

// One module for the whole program, never unloaded (the driver may be gone at static destruction).
const Module& kernels() {
    static const Module* m = new Module(kernels_program({}).compile(CodeType::cubin).load());
    return *m;
}

void poison(core::Buffer& b) { ASSERT_EQ(cudaMemset(b.data(), 0xFF, b.size_bytes()), cudaSuccess); }

std::vector<float> random_floats(std::size_t n) {
    auto rng = test::rng_for_test();
    return test::random_vector<float>(n, rng);
}

LaunchConfig cover(int n, int block = 256) { return {.grid = (n + block - 1) / block, .block = block}; }

}  // namespace

TEST(JitSources, CompileForSm90OnAnyMachine) {
    const ObjectCode cubin = kernels_program("sm_90").compile(CodeType::cubin);
    EXPECT_EQ(cubin.kernel_names().size(), 8u);
    EXPECT_NO_THROW((void)Program(k_cluster, {.arch = "sm_90"}).compile(CodeType::cubin));
    const ObjectCode a = Program(k_lto_caller, {.arch = "sm_90"}).compile(CodeType::ltoir);
    const ObjectCode b = Program(k_lto_callee, {.arch = "sm_90"}).compile(CodeType::ltoir);
    EXPECT_NO_THROW((void)core::Linker().add(a).add(b).link());
}

TEST(JitGpu, LoadAndLaunch) {
    GPUMATH_REQUIRE_GPU();
    const Kernel add_one = kernels().kernel("add_one");
    EXPECT_EQ(add_one.name(), "add_one");
    EXPECT_EQ(add_one.device(), core::Device::current().ordinal());
    const int n = 4099;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Stream stream;
    core::Buffer x = core::Buffer::from_host(host, stream);
    core::launch(stream, cover(n), add_one, x, n);
    const std::vector<float> got = x.to_host<float>(stream);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], host[std::size_t(i)] + 1.0f) << "i=" << i;
}

TEST(JitGpu, ArgumentsOfEverySizeArePackedRight) {
    GPUMATH_REQUIRE_GPU();
    const Kernel k = kernels().kernel("axpby");
    const int n = 1000;
    const std::vector<float> x = random_floats(std::size_t(n));
    core::Stream stream;
    core::Buffer dx = core::Buffer::from_host(x, stream);
    core::Buffer out(std::size_t(n) * sizeof(float), stream);
    poison(out);
    const float a = -1.75f;
    const double bias = 0.125;
    const char flag = 3;
    const long long offset = 1000;
    // out as a TensorView, x as a raw pointer: both are pointers to the kernel.
    const TensorView out_view = out.view<float>({n});
    core::launch(stream, cover(n, 128), k, out_view, dx.data_as<const float>(), a, n, bias, flag, offset);
    const std::vector<float> got = out.to_host<float>(stream);
    for (int i = 0; i < n; ++i) {
        const double ref = double(a) * double(x[std::size_t(i)]) + bias + flag + double(offset);
        ASSERT_NEAR(got[std::size_t(i)], ref, 1e-4 * std::abs(ref)) << "i=" << i;
    }
}

TEST(JitGpu, ParameterInfoFromTheDriver) {
    GPUMATH_REQUIRE_GPU();
    const Kernel k = kernels().kernel("axpby");
    ASSERT_TRUE(k.has_param_info()) << "driver older than CUDA 12.4?";
    // (float*, const float*, float, int, double, char, long long)
    const std::vector<std::pair<std::size_t, std::size_t>> expected = {{0, 8},  {8, 8},  {16, 4}, {20, 4},
                                                                       {24, 8}, {32, 1}, {40, 8}};
    ASSERT_EQ(k.params().size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(k.params()[i].offset, expected[i].first) << "parameter " << i;
        EXPECT_EQ(k.params()[i].size, expected[i].second) << "parameter " << i;
    }
    EXPECT_TRUE(kernels().kernel("reverse_static").params().size() == 1);
}

TEST(JitGpu, TemplatedKernelsThroughNameExpressions) {
    GPUMATH_REQUIRE_GPU();
    const int n = 777;
    const std::vector<float> xf = random_floats(std::size_t(n));
    std::vector<double> xd(xf.begin(), xf.end());
    core::Stream stream;
    core::Buffer bf = core::Buffer::from_host(xf, stream);
    core::Buffer bd = core::Buffer::from_host(xd, stream);
    core::launch(stream, cover(n), kernels().kernel("scale<float>"), bf, 3.0f, n);
    core::launch(stream, cover(n), kernels().kernel("scale<double>"), bd, -0.5, n);
    const std::vector<float> gf = bf.to_host<float>(stream);
    const std::vector<double> gd = bd.to_host<double>(stream);
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(gf[std::size_t(i)], xf[std::size_t(i)] * 3.0f) << i;
        ASSERT_EQ(gd[std::size_t(i)], xd[std::size_t(i)] * -0.5) << i;
    }
    // The mangled name works too, and gives the same kernel.
    EXPECT_EQ(kernels().kernel("_Z5scaleIfEvPT_S0_i").handle(), kernels().kernel("scale<float>").handle());
}

TEST(JitGpu, UnknownKernelListsTheModulesKernels) {
    GPUMATH_REQUIRE_GPU();
    test::expect_throw_with<InvalidArgument>(
        [] { (void)kernels().kernel("add_two"); },
        {"add_two", "add_one", "axpby", "reverse_dynamic", "_Z5scaleIfEvPT_S0_i", "scale<float>"});
    const std::vector<std::string> names = kernels().kernel_names();
    EXPECT_EQ(names.size(), 8u);  // add_one, axpby, 2 x scale, reverse_static, bounded, reverse_dynamic, neighbours
    // The driver takes a C string: "add_one" followed by a NUL and more would find add_one.
    test::expect_throw_with<InvalidArgument>([] { (void)kernels().kernel(std::string("add_one\0x", 9)); },
                                             {"Module::kernel", "NUL byte"});
    test::expect_throw_with<InvalidArgument>([] { (void)kernels().kernel("add_one", -7); },
                                             {"Module::kernel", "device: -7"});
    EXPECT_EQ(kernels().kernel("add_one", -1).name(), "add_one");
}

TEST(JitGpu, PtxAndLtoLinkedCodeLoad) {
    GPUMATH_REQUIRE_GPU();
    const int n = 300;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Stream stream;
    // PTX is compiled by the driver at load time.
    const Module from_ptx = kernels_program({}).compile(CodeType::ptx).load();
    core::Buffer x = core::Buffer::from_host(host, stream);
    core::launch(stream, cover(n), from_ptx.kernel("add_one"), x, n);
    // LTO of two programs.
    const ObjectCode a = Program(k_lto_caller, {}).compile(CodeType::ltoir);
    const ObjectCode b = Program(k_lto_callee, {}).compile(CodeType::ltoir);
    const Module linked = core::Linker().add(a).add(b).link().load();
    core::launch(stream, cover(n), linked.kernel("apply_twice"), x, n);
    const std::vector<float> got = x.to_host<float>(stream);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], 2.0f * (host[std::size_t(i)] + 1.0f) + 0.5f) << i;
}

TEST(JitGpu, KernelKeepsItsModuleLoaded) {
    GPUMATH_REQUIRE_GPU();
    Kernel k;
    {
        const Module m = kernels_program({}).compile(CodeType::cubin).load();
        k = m.kernel("add_one");
    }
    const int n = 64;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Buffer x = core::Buffer::from_host(host);
    core::launch({}, cover(n), k, x, n);
    const std::vector<float> got = x.to_host<float>();
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], host[std::size_t(i)] + 1.0f);
}

TEST(JitGpu, AttributesAndOccupancyMatchTheDevice) {
    GPUMATH_REQUIRE_GPU();
    const core::Device dev = core::Device::current();
    const cudaDeviceProp& p = dev.properties();
    const int cc = dev.compute_capability().value();

    const core::KernelAttributes s = kernels().kernel("reverse_static").attributes();
    EXPECT_EQ(s.static_shared_memory, 256u * sizeof(float));
    EXPECT_GT(s.num_registers, 0);
    EXPECT_EQ(s.max_threads_per_block, 1024);
    EXPECT_EQ(s.binary_version, cc);
    EXPECT_EQ(s.ptx_version, cc);
    EXPECT_GT(s.max_dynamic_shared_memory, 0u);
    EXPECT_LE(s.max_dynamic_shared_memory + s.static_shared_memory, 48u * 1024u);

    const Kernel bounded = kernels().kernel("bounded");
    EXPECT_EQ(bounded.attributes().max_threads_per_block, 128);

    // A small kernel without shared memory is limited by threads and blocks per multiprocessor.
    const Kernel add_one = kernels().kernel("add_one");
    const core::KernelAttributes a = add_one.attributes();
    for (int block : {128, 256, 1024}) {
        const int blocks = add_one.max_active_blocks_per_multiprocessor(block);
        const int by_threads = std::min(p.maxThreadsPerMultiProcessor / block, p.maxBlocksPerMultiProcessor);
        if (a.num_registers <= 32) {
            EXPECT_EQ(blocks, by_threads) << "block " << block << ", registers " << a.num_registers;
        } else {
            EXPECT_GE(blocks, 1);
            EXPECT_LE(blocks, by_threads);
        }
    }
    test::expect_throw_with<InvalidArgument>([&] { (void)add_one.max_active_blocks_per_multiprocessor(2048); },
                                             {"block_size", "2048"});
    test::expect_throw_with<InvalidArgument>([&] { (void)bounded.max_active_blocks_per_multiprocessor(256); },
                                             {"block_size", "256", "1..128"});
}

TEST(JitGpu, DynamicSharedMemoryAbove48KiB) {
    GPUMATH_REQUIRE_GPU();
    const core::Device dev = core::Device::current();
    const cudaDeviceProp& p = dev.properties();
    if (p.sharedMemPerBlockOptin < 100 * 1024)
        GTEST_SKIP() << "device allows only " << p.sharedMemPerBlockOptin << " bytes";
    const Kernel k = kernels().kernel("reverse_dynamic");
    const std::size_t bytes = 100 * 1024;
    const int n = int(bytes / sizeof(float));
    core::Stream stream;
    core::Buffer out(bytes, stream);
    poison(out);
    const LaunchConfig config{.grid = 1, .block = 256, .shared_memory = bytes};
    // Not raised yet: refused before the launch, saying what to call.
    test::expect_throw_with<InvalidArgument>([&] { core::launch(stream, config, k, out, n); },
                                             {"shared_memory", "102400", "set_max_dynamic_shared_memory"});
    test::expect_throw_with<InvalidArgument>(
        [&] { k.set_max_dynamic_shared_memory(std::size_t(p.sharedMemPerBlockOptin) + 1); },
        {"bytes", std::to_string(p.sharedMemPerBlockOptin)});
    k.set_max_dynamic_shared_memory(bytes);
    EXPECT_EQ(k.attributes().max_dynamic_shared_memory, bytes);
    // Another handle to the same kernel sees the raised limit.
    EXPECT_NO_THROW(detail::check_config(detail::KernelAccess::state(kernels().kernel("reverse_dynamic")), config));
    core::launch(stream, config, k, out, n);
    const std::vector<float> got = out.to_host<float>(stream);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], float(n - 1 - i) * 0.5f) << i;
    // Occupancy is now bounded by shared memory.
    const int blocks = k.max_active_blocks_per_multiprocessor(256, bytes);
    const int expected = std::min<int>({int(p.sharedMemPerMultiprocessor / (bytes + p.reservedSharedMemPerBlock)),
                                        p.maxThreadsPerMultiProcessor / 256, p.maxBlocksPerMultiProcessor});
    EXPECT_EQ(blocks, expected) << "shared memory per SM " << p.sharedMemPerMultiprocessor << ", reserved per block "
                                << p.reservedSharedMemPerBlock;
}

TEST(JitGpu, ClusterLaunch) {
    GPUMATH_REQUIRE_GPU();
    if (core::Device::current().compute_capability().major < 9) GTEST_SKIP() << "clusters need compute capability 9.0";
    const Module m = Program(k_cluster, {}).compile(CodeType::cubin).load();
    const Kernel k = m.kernel("cluster_info");
    const int grid = 8, cluster = 2;
    core::Stream stream;
    core::Buffer out(std::size_t(3 * grid) * sizeof(unsigned), stream);
    poison(out);
    const LaunchConfig config{.grid = grid, .block = 32, .cluster = cluster};
    EXPECT_GT(k.max_active_clusters(config), 0);
    core::launch(stream, config, k, out);
    const std::vector<unsigned> got = out.to_host<unsigned>(stream);
    for (int b = 0; b < grid; ++b) {
        EXPECT_EQ(got[std::size_t(3 * b)], unsigned(b % cluster)) << "block " << b << ": %cluster_ctarank";
        EXPECT_EQ(got[std::size_t(3 * b + 1)], unsigned(cluster)) << "block " << b << ": %cluster_nctarank";
        EXPECT_EQ(got[std::size_t(3 * b + 2)], unsigned(b / cluster)) << "block " << b << ": %clusterid.x";
    }
    test::expect_throw_with<InvalidArgument>(
        [&] { core::launch(stream, {.grid = 6, .block = 32, .cluster = 4}, k, out); }, {"cluster", "multiple"});
}

TEST(JitGpu, CooperativeLaunchWithGridSync) {
    GPUMATH_REQUIRE_GPU();
    int supported = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, core::Device::current().ordinal()),
              cudaSuccess);
    if (supported == 0) GTEST_SKIP() << "device does not support cooperative launches";
    const Kernel k = kernels().kernel("neighbours");
    const int block = 256;
    const int per_sm = k.max_active_blocks_per_multiprocessor(block);
    ASSERT_GT(per_sm, 0);
    const int grid = per_sm * core::Device::current().multiprocessor_count();
    const int n = 1 << 20;  // more elements than threads: grid-stride loops on both sides of the sync
    core::Stream stream;
    core::Buffer a(std::size_t(n) * sizeof(int), stream), b(std::size_t(n) * sizeof(int), stream);
    poison(a);
    poison(b);
    core::launch(stream, {.grid = grid, .block = block, .cooperative = true}, k, a, b, n);
    const std::vector<int> got = b.to_host<int>(stream);
    for (int i = 0; i < n; ++i) {
        const int ref = (3 * ((i + 1) % n) + 1) + (3 * ((i + n - 1) % n) + 1);
        ASSERT_EQ(got[std::size_t(i)], ref) << "i=" << i;
    }
    test::expect_throw_with<InvalidArgument>(
        [&] { core::launch(stream, {.grid = grid + 1, .block = block, .cooperative = true}, k, a, b, n); },
        {"cooperative", std::to_string(grid + 1), "cannot be resident"});
}

TEST(JitGpu, ArgumentAndConfigRejections) {
    GPUMATH_REQUIRE_GPU();
    const Kernel add_one = kernels().kernel("add_one");
    core::Buffer x(64 * sizeof(float));
    const std::size_t wrong_n = 64;
    test::expect_throw_with<InvalidArgument>([&] { core::launch({}, cover(64), add_one, x, wrong_n); },
                                             {"argument 1", "add_one", "4 bytes", "(8 bytes)"});
    test::expect_throw_with<InvalidArgument>([&] { core::launch({}, cover(64), add_one, x); },
                                             {"takes 2 parameters", "1 argument was given"});
    test::expect_throw_with<InvalidArgument>([&] { core::launch({}, {.grid = 1, .block = 2048}, add_one, x, 64); },
                                             {"LaunchConfig::block", "1024"});
    test::expect_throw_with<InvalidArgument>(
        [&] { core::launch({}, {.grid = 1, .block = 256}, kernels().kernel("bounded"), x); }, {"at most 128"});
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // nothing was launched, nothing failed
}

TEST(JitGpu, LaunchFromAnotherThreadOnTheDefaultStream) {
    GPUMATH_REQUIRE_GPU();
    const Kernel add_one = kernels().kernel("add_one");
    const int n = 512;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Buffer x = core::Buffer::from_host(host);
    core::StreamRef{}.synchronize();
    std::string error;
    std::thread t([&] {
        try {
            core::launch({}, cover(n), add_one, x, n);
            core::StreamRef{}.synchronize();
        } catch (const std::exception& e) {
            error = e.what();
        }
    });
    t.join();
    ASSERT_TRUE(error.empty()) << error;
    const std::vector<float> got = x.to_host<float>();
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], host[std::size_t(i)] + 1.0f) << i;
}

TEST(JitGpu, TensorArguments) {
    GPUMATH_REQUIRE_GPU();
    const int n = 100;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Stream stream;
    Tensor t = Tensor::from_host(host, {n}, stream);
    core::launch(stream, cover(n), kernels().kernel("add_one"), t, n);
    const std::vector<float> got = t.to_host<float>(stream);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(i)], host[std::size_t(i)] + 1.0f) << i;
}

TEST(JitGpu, GraphReplayEqualsDirectLaunches) {
    GPUMATH_REQUIRE_GPU();
    const Kernel add_one = kernels().kernel("add_one");
    const Kernel scale = kernels().kernel("scale<float>");
    const int n = 10000;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Stream stream;
    core::Buffer graphed = core::Buffer::from_host(host, stream);
    core::Buffer direct = core::Buffer::from_host(host, stream);
    const auto work = [&](core::StreamRef s, core::Buffer& x) {
        for (int r = 0; r < 3; ++r) {
            core::launch(s, cover(n), add_one, x, n);
            core::launch(s, cover(n), scale, x, 0.75f, n);
        }
    };
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) { work(s, graphed); });
    ASSERT_TRUE(g);
    EXPECT_EQ(g.node_count(), 6u);
    // Capturing ran nothing.
    EXPECT_EQ(graphed.to_host<float>(stream), host);
    g.upload(stream);
    for (int replay = 0; replay < 2; ++replay) {
        g.launch(stream);
        work(stream, direct);
    }
    const std::vector<float> from_graph = graphed.to_host<float>(stream);
    const std::vector<float> from_direct = direct.to_host<float>(stream);
    ASSERT_EQ(from_graph.size(), from_direct.size());
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(from_graph[std::size_t(i)], from_direct[std::size_t(i)]) << "i=" << i;
        float ref = host[std::size_t(i)];
        for (int k = 0; k < 6; ++k) ref = (ref + 1.0f) * 0.75f;
        ASSERT_EQ(from_graph[std::size_t(i)], ref) << "i=" << i;
    }
    // A capture whose work throws is discarded and leaves the stream usable.
    EXPECT_THROW((void)core::Graph::capture(stream,
                                            [&](core::StreamRef s) {
                                                core::launch(s, cover(n), add_one, graphed, n);
                                                throw std::runtime_error("abandon");
                                            }),
                 std::runtime_error);
    core::launch(stream, cover(n), add_one, direct, n);
    stream.synchronize();
    // Moving transfers ownership.
    core::Graph moved = std::move(g);
    EXPECT_FALSE(g);  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_TRUE(moved);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    test::expect_throw_with<InvalidArgument>([&] { g.launch(stream); }, {"Graph::launch", "moved from"});
    test::expect_throw_with<InvalidArgument>([&] { (void)g.node_count(); }, {"Graph::node_count", "moved from"});
    // NOLINTEND(bugprone-use-after-move)
    EXPECT_EQ(moved.node_count(), 6u);
}

TEST(JitGpu, MovedFromLoadedModuleAndKernel) {
    GPUMATH_REQUIRE_GPU();
    core::Module a =
        core::Program("extern \"C\" __global__ void k(int* p) { *p = 7; }", {}).compile(CodeType::cubin).load();
    Kernel k = a.kernel("k");
    const core::Module b = std::move(a);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_FALSE(a);
    EXPECT_EQ(a.handle(), nullptr);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.kernel("k"); }, {"Module::kernel", "moved from"});
    const Kernel k2 = std::move(k);
    test::expect_throw_with<InvalidArgument>([&] { core::launch({}, {.grid = 1, .block = 1}, k, nullptr); },
                                             {"Kernel", "moved from"});
    // NOLINTEND(bugprone-use-after-move)
    core::Stream stream;
    core::Buffer out(sizeof(int), stream);
    core::launch(stream, {.grid = 1, .block = 1}, k2, out);
    EXPECT_EQ(out.to_host<int>(stream), std::vector<int>{7});
    EXPECT_EQ(b.kernel("k").handle(), k2.handle());
}

// A library loaded with the raw driver API, as another CUDA library would load it, adopted without
// ownership: its kernels launch through core::launch with the argument and limit checks, and the
// library stays loaded after the gpumath objects are gone. Then one adopted with ownership.
TEST(JitGpu, AdoptedLibraryAndKernels) {
    GPUMATH_REQUIRE_GPU();
    const ObjectCode cubin = kernels_program({}).compile(CodeType::cubin);
    const detail::DriverApi& d = detail::driver();
    ASSERT_NE(d.cuLibraryLoadData, nullptr);
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the runtime's primary context, current on this thread
    const auto load = [&] {
        CUlibrary library = nullptr;
        EXPECT_EQ(d.cuLibraryLoadData(&library, cubin.bytes().data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
                  CUDA_SUCCESS);
        return library;
    };
    const CUlibrary raw = load();
    ASSERT_NE(raw, nullptr);

    const int n = 1000;
    const std::vector<float> host = random_floats(std::size_t(n));
    core::Stream stream;
    core::Buffer x = core::Buffer::from_host(host, stream);
    {
        const Module borrowed = Module::adopt(raw);
        EXPECT_TRUE(borrowed);
        EXPECT_EQ(borrowed.handle(), raw);
        const Kernel add_one = borrowed.kernel("add_one");
        EXPECT_EQ(add_one.name(), "add_one");
        core::launch(stream, cover(n), add_one, x, n);  // x = host + 1
        if (add_one.has_param_info())
            test::expect_throw_with<InvalidArgument>(
                [&] { core::launch(stream, cover(n), add_one, x, std::size_t(n)); },
                {"argument 1", "add_one", "4 bytes", "(8 bytes)"});
        // No name expressions come with a foreign library; the mangled name finds the kernel.
        test::expect_throw_with<InvalidArgument>([&] { (void)borrowed.kernel("scale<float>"); },
                                                 {"Module::kernel", "no kernel \"scale<float>\"", "mangled names"});
        const Kernel scale = borrowed.kernel(cubin.lowered_name("scale<float>"));
        core::launch(stream, cover(n), scale, x, 2.0f, n);  // x = (host + 1) * 2
        if (d.cuLibraryGetKernelCount != nullptr && d.cuLibraryEnumerateKernels != nullptr &&
            d.cuKernelGetName != nullptr) {
            std::vector<std::string> names = borrowed.kernel_names();
            std::vector<std::string> expected = cubin.kernel_names();
            std::sort(names.begin(), names.end());
            std::sort(expected.begin(), expected.end());
            EXPECT_EQ(names, expected);
        }
    }

    // The borrowed library outlived its Module and Kernels: the raw handle still finds and launches
    // the kernel.
    CUkernel raw_add_one = nullptr;
    ASSERT_EQ(d.cuLibraryGetKernel(&raw_add_one, raw, "add_one"), CUDA_SUCCESS);
    ASSERT_NE(raw_add_one, nullptr);
    {
        void* data = x.data();
        int count = n;
        void* args[] = {&data, &count};
        const LaunchConfig c = cover(n);
        ASSERT_EQ(
            d.cuLaunchKernel(reinterpret_cast<CUfunction>(raw_add_one), unsigned(c.grid.x), 1, 1, unsigned(c.block.x),
                             1, 1, 0, reinterpret_cast<CUstream>(stream.handle()), args, nullptr),
            CUDA_SUCCESS);  // x = (host + 1) * 2 + 1
    }

    // Kernel::adopt on the raw CUkernel: name, parameters and limits come from the driver.
    {
        const Kernel adopted = Kernel::adopt(raw_add_one);
        EXPECT_TRUE(adopted);
        EXPECT_EQ(adopted.handle(), raw_add_one);
        EXPECT_EQ(adopted.device(), core::Device::current().ordinal());
        if (d.cuKernelGetName != nullptr) {
            EXPECT_EQ(adopted.name(), "add_one");
        }
        if (adopted.has_param_info()) {
            ASSERT_EQ(adopted.params().size(), 2u);  // (float*, int)
            EXPECT_EQ(adopted.params()[0].size, 8u);
            EXPECT_EQ(adopted.params()[1].offset, 8u);
            EXPECT_EQ(adopted.params()[1].size, 4u);
            test::expect_throw_with<InvalidArgument>([&] { core::launch(stream, cover(n), adopted, x); },
                                                     {"takes 2 parameters", "1 argument was given"});
        }
        core::launch(stream, cover(n), adopted, x, n);  // x = (host + 1) * 2 + 2
        CUkernel raw_bounded = nullptr;
        ASSERT_EQ(d.cuLibraryGetKernel(&raw_bounded, raw, "bounded"), CUDA_SUCCESS);
        const Kernel bounded = Kernel::adopt(raw_bounded, core::Device::current().ordinal());
        EXPECT_EQ(bounded.attributes().max_threads_per_block, 128);
        test::expect_throw_with<InvalidArgument>([&] { core::launch(stream, {.grid = 1, .block = 256}, bounded, x); },
                                                 {"at most 128"});
    }

    // Owned: the library is gpumath's to unload, once the Module and every Kernel from it are gone;
    // until then a Kernel keeps it loaded.
    Kernel from_owned;
    {
        const CUlibrary raw_owned = load();
        ASSERT_NE(raw_owned, nullptr);
        const Module owned = Module::adopt(raw_owned, Ownership::owned);
        from_owned = owned.kernel("add_one");
    }
    core::launch(stream, cover(n), from_owned, x, n);  // x = (host + 1) * 2 + 3

    const std::vector<float> got = x.to_host<float>(stream);
    for (int i = 0; i < n; ++i) {
        float ref = host[std::size_t(i)];
        ref += 1.0f;
        ref *= 2.0f;
        for (int k = 0; k < 3; ++k) ref += 1.0f;
        ASSERT_EQ(got[std::size_t(i)], ref) << "i=" << i;
    }
    from_owned = Kernel();  // unloads the owned library (its work has finished: to_host synchronised)
    // The borrowed library is still the caller's to unload, and unloads once.
    EXPECT_EQ(d.cuLibraryUnload(raw), CUDA_SUCCESS);
}

TEST(JitGpu, AdoptingAKernelOfAModuleSharesItsDescription) {
    GPUMATH_REQUIRE_GPU();
    const Kernel k = kernels().kernel("axpby");
    const Kernel adopted = Kernel::adopt(k.handle());
    EXPECT_EQ(adopted.handle(), k.handle());
    if (detail::driver().cuKernelGetName != nullptr) {
        EXPECT_EQ(adopted.name(), k.name());
    }
    ASSERT_EQ(adopted.has_param_info(), k.has_param_info());
    ASSERT_EQ(adopted.params().size(), k.params().size());
    for (std::size_t i = 0; i < k.params().size(); ++i) {
        EXPECT_EQ(adopted.params()[i].offset, k.params()[i].offset) << "parameter " << i;
        EXPECT_EQ(adopted.params()[i].size, k.params()[i].size) << "parameter " << i;
    }
    EXPECT_EQ(adopted.attributes().num_registers, k.attributes().num_registers);
}
