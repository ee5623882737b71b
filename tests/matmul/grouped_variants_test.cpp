// SPDX-License-Identifier: Apache-2.0
// Every program of the grouped kernels that the host can choose compiles with NVRTC (no device
// needed): each macro combination of kernels/grouped_gemm.cu, through the options the kernel loader
// is given. Separate from grouped_validation so that its compiles run beside the other tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gpumath/core/program.hpp>
#include <gpumath/matmul.hpp>

#include "matmul/grouped_kernel_source.hpp"

namespace gpumath {
namespace {

using detail::GroupedKernelVariant;
using detail::GroupedWgmmaLayout;

/// Every variant a grouped call can make: the input and result types of the matmul rules (f32
/// accumulation), each activation with and without a bias, sizes in device memory or in the launch.
std::vector<GroupedKernelVariant> all_variants() {
    const std::pair<DataType, DataType> types[] = {{DataType::bf16, DataType::bf16},
                                                   {DataType::bf16, DataType::f32},
                                                   {DataType::f16, DataType::f16},
                                                   {DataType::f16, DataType::f32},
                                                   {DataType::f32, DataType::f32}};
    const Epilog epilogs[] = {Epilog::none, Epilog::relu,      Epilog::gelu,      Epilog::silu,
                              Epilog::bias, Epilog::relu_bias, Epilog::gelu_bias, Epilog::silu_bias};
    std::vector<GroupedKernelVariant> out;
    for (auto [input, result] : types)
        for (Epilog e : epilogs)
            for (bool inline_sizes : {false, true})
                out.push_back({.input = input, .result = result, .epilog = e, .inline_sizes = inline_sizes});
    return out;
}

/// A program to compile: its options (arch filled in), what it is called in a failure, and the
/// kernel it must hold.
struct Job {
    core::ProgramOptions options;
    core::CodeType target;
    const char* kernel;
};

/// Compiles every job on a few threads (NVRTC compiles are independent); the failures, each
/// naming its program.
std::vector<std::string> compile_all(const std::vector<Job>& jobs) {
    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::vector<std::string> failures;
    auto work = [&] {
        for (std::size_t i = next++; i < jobs.size(); i = next++) {
            const Job& j = jobs[i];
            std::string failure;
            try {
                const core::ObjectCode code =
                    core::Program(std::string(detail::grouped_gemm_source()), j.options).compile(j.target);
                const std::vector<std::string> names = code.kernel_names();
                if (std::find(names.begin(), names.end(), j.kernel) == names.end())
                    failure = j.options.name + ": no kernel " + j.kernel;
            } catch (const Error& e) {
                failure = j.options.name + ": " + e.what();
            }
            if (!failure.empty()) {
                const std::lock_guard lock(mutex);
                failures.push_back(std::move(failure));
            }
        }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1U, 8U);
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    for (std::thread& t : pool) t.join();
    return failures;
}

core::ProgramOptions uncached(core::ProgramOptions o, const char* arch) {
    o.cache = false;  // hundreds of programs: none kept in memory
    if (o.arch.empty()) o.arch = arch;
    return o;
}

TEST(GroupedKernelVariants, EveryPortableProgramCompiles) {
    // To a cubin for the tests' architecture, as the loader compiles them for a device.
    std::vector<Job> jobs;
    for (const GroupedKernelVariant& v : all_variants())
        jobs.push_back({.options = uncached(detail::grouped_kernel_options(v), GPUMATH_TEST_ARCH),
                        .target = core::CodeType::cubin,
                        .kernel = detail::grouped_kernel_name});
    ASSERT_EQ(jobs.size(), 80U);
    const std::vector<std::string> failures = compile_all(jobs);
    EXPECT_TRUE(failures.empty()) << failures.size() << " failed, the first: " << failures.front();
}

TEST(GroupedKernelVariants, EveryHopperProgramCompiles) {
    // Each f16 and bf16 variant with each weight layout, block width and cluster, for sm_90a: to PTX
    // (NVRTC's whole front end and optimizer; HopperKernelCompilesWithNvrtc in grouped_validation
    // takes every combination that changes the inline PTX on through ptxas).
    std::vector<Job> jobs;
    for (const GroupedKernelVariant& v : all_variants()) {
        if (!detail::uses_tensor_cores(v)) continue;
        for (GroupedWgmmaLayout layout : {GroupedWgmmaLayout::b_rows, GroupedWgmmaLayout::b_cols})
            for (int block_n : {128, 256})
                for (int cluster : {1, 2}) {
                    core::ProgramOptions o = detail::grouped_wgmma_options(v, layout, block_n, cluster);
                    EXPECT_EQ(o.arch, "sm_90a") << o.name;
                    jobs.push_back({.options = uncached(std::move(o), "sm_90a"),
                                    .target = core::CodeType::ptx,
                                    .kernel = detail::grouped_wgmma_kernel_name});
                }
    }
    ASSERT_EQ(jobs.size(), 512U);
    const std::vector<std::string> failures = compile_all(jobs);
    EXPECT_TRUE(failures.empty()) << failures.size() << " failed, the first: " << failures.front();
}

}  // namespace
}  // namespace gpumath
