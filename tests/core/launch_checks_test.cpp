// SPDX-License-Identifier: Apache-2.0
// Launch argument and configuration checks, which run before any GPU work: exercised here on a
// kernel description made by hand, so they run on machines without a GPU too.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <gpumath/core.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

using namespace gpumath;
using core::Dim3;
using core::LaunchConfig;

namespace {

// As the driver would describe `__global__ void saxpy(float* y, int n, double a)`.
std::unique_ptr<detail::KernelState> fake_kernel() {
    auto k = std::make_unique<detail::KernelState>();
    k->name = "_Z5saxpyPfid";
    k->display_name = "saxpy";
    k->device = 0;
    k->cc_major = 9;
    k->multiprocessor_count = 132;
    k->shared_memory_optin = 232448;
    k->params_known = true;
    k->params = {{0, 8}, {8, 4}, {16, 8}};
    k->max_threads_per_block = 256;
    k->max_dynamic_shared.store(48 * 1024);
    return k;
}

template <class... Args>
void check(const detail::KernelState& k) {
    detail::check_args<Args...>(k);
}

}  // namespace

TEST(TypeName, SpellsTypes) {
    EXPECT_EQ(detail::type_name<float>(), "float");
    EXPECT_EQ(detail::type_name<const int*>(), "const int*");
    EXPECT_EQ(detail::type_name<core::Buffer>(), "gpumath::core::Buffer");
    EXPECT_EQ(detail::type_name<double>(), "double");
}

TEST(Dim3, FromIntegers) {
    constexpr Dim3 a = 5;
    static_assert(a.x == 5 && a.y == 1 && a.z == 1);
    const std::size_t n = 1000;
    const int m = -2;
    const Dim3 b{n, m};
    EXPECT_EQ(b.x, 1000);
    EXPECT_EQ(b.y, -2);
    EXPECT_EQ((Dim3{2, 3, 4}.volume()), 24);
    // Saturating instead of overflowing (a product past int64 is a signed overflow).
    constexpr std::int64_t big = std::int64_t(1) << 40;
    EXPECT_EQ((Dim3{big, big, 1 << 20}.volume()), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ((Dim3{-big, big, 1 << 20}.volume()), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ((Dim3{big, big, 0}.volume()), 0);
    const LaunchConfig c{.grid = (n + 255) / 256, .block = 256};
    EXPECT_EQ(c.grid.x, 4);
    EXPECT_EQ(c.block, Dim3(256));
    EXPECT_FALSE(c.cluster);
}

TEST(LaunchArgs, MatchingArgumentsPass) {
    const auto k = fake_kernel();
    EXPECT_NO_THROW((check<float*, int, double>(*k)));
    EXPECT_NO_THROW((check<const float*, unsigned, std::int64_t>(*k)));  // sizes match
    EXPECT_NO_THROW((check<core::Buffer, int, double>(*k)));             // a Buffer is its pointer
    EXPECT_NO_THROW((check<TensorView, int, double>(*k)));
    EXPECT_NO_THROW((check<Tensor, int, double>(*k)));
    EXPECT_NO_THROW((check<std::nullptr_t, int, double>(*k)));
}

TEST(LaunchArgs, WrongCount) {
    const auto k = fake_kernel();
    test::expect_throw_with<InvalidArgument>(
        [&] { check<float*, int>(*k); }, {"launch", "saxpy", "takes 3 parameters", "8, 4, 8", "2 arguments were given",
                                          "float* (8 bytes)", "int (4 bytes)"});
    test::expect_throw_with<InvalidArgument>([&] { check<>(*k); }, {"takes 3 parameters", "0 arguments"});
    test::expect_throw_with<InvalidArgument>([&] { check<float*, int, double, char>(*k); },
                                             {"4 arguments", "char (1 bytes)"});
}

TEST(LaunchArgs, WrongSizeNamesIndexExpectedSizeAndType) {
    const auto k = fake_kernel();
    test::expect_throw_with<InvalidArgument>(
        [&] { check<float*, std::size_t, double>(*k); },
        {"argument 1", "saxpy", "parameter 1 to be 4 bytes", "long unsigned int", "(8 bytes)"});
    test::expect_throw_with<InvalidArgument>([&] { check<float*, int, float>(*k); },
                                             {"argument 2", "8 bytes", "float (4 bytes)"});
    test::expect_throw_with<InvalidArgument>([&] { check<int, int, double>(*k); },
                                             {"argument 0", "8 bytes", "int (4 bytes)"});
}

TEST(LaunchArgs, UnknownParametersAreNotChecked) {
    auto k = fake_kernel();
    k->params_known = false;
    k->params.clear();
    EXPECT_NO_THROW((check<char, char>(*k)));
}

TEST(LaunchConfig, WithinLimitsPasses) {
    const auto k = fake_kernel();
    EXPECT_NO_THROW(detail::check_config(*k, {.grid = 1000, .block = 256, .shared_memory = 48 * 1024}));
    EXPECT_NO_THROW(detail::check_config(*k, {.grid = {8, 4}, .block = {16, 16}}));
    EXPECT_NO_THROW(detail::check_config(*k, {.grid = {8, 2}, .block = 128, .cluster = Dim3{2, 2}}));
    EXPECT_NO_THROW(detail::check_config(*k, {.grid = {2147483647, 65535, 65535}, .block = 1}));
}

TEST(LaunchConfig, RejectionsBeforeAnyGpuWork) {
    const auto k = fake_kernel();
    const auto bad = [&](const LaunchConfig& c, std::initializer_list<std::string> needles) {
        test::expect_throw_with<InvalidArgument>([&] { detail::check_config(*k, c); }, needles);
    };
    bad({.grid = 1, .block = 1025}, {"LaunchConfig::block", "(1025, 1, 1)", "1024"});
    bad({.grid = 1, .block = {64, 32}}, {"LaunchConfig::block", "2048 threads", "at most 1024"});
    bad({.grid = 1, .block = 512}, {"LaunchConfig::block", "512 threads", "saxpy", "at most 256"});
    bad({.grid = 1, .block = {1, 1, 65}}, {"LaunchConfig::block", "(1, 1, 65)", "64"});
    bad({.grid = 1, .block = 0}, {"LaunchConfig::block", "below 1"});
    bad({.grid = 1, .block = -32}, {"LaunchConfig::block", "-32"});
    bad({.grid = 0, .block = 32}, {"LaunchConfig::grid", "below 1"});
    bad({.grid = {1, 70000}, .block = 32}, {"LaunchConfig::grid", "70000", "65535"});
    bad({.grid = std::int64_t(1) << 31, .block = 32}, {"LaunchConfig::grid", "2147483648"});
    bad({.grid = 1, .block = 32, .shared_memory = 64 * 1024},
        {"LaunchConfig::shared_memory", "65536", "49152", "set_max_dynamic_shared_memory(65536)"});
    bad({.grid = 1, .block = 32, .shared_memory = 300 * 1024}, {"LaunchConfig::shared_memory", "232448", "cannot fit"});
    bad({.grid = 6, .block = 32, .cluster = 4}, {"LaunchConfig::cluster", "(6, 1, 1)", "(4, 1, 1)", "multiple"});
    bad({.grid = 8, .block = 32, .cluster = 0}, {"LaunchConfig::cluster", "below 1"});
    auto old = fake_kernel();
    old->cc_major = 8;
    test::expect_throw_with<NotSupported>([&] { detail::check_config(*old, {.grid = 8, .block = 32, .cluster = 2}); },
                                          {"LaunchConfig::cluster", "9.0", "8.x"});
}

TEST(Launch, EmptyKernelAndGraph) {
    test::expect_throw_with<InvalidArgument>([] { core::launch({}, {}, core::Kernel{}, 1.0f); }, {"Kernel", "empty"});
    test::expect_throw_with<InvalidArgument>([] { (void)core::Kernel{}.attributes(); }, {"Kernel", "empty"});
    test::expect_throw_with<InvalidArgument>([] { core::Graph{}.launch(); }, {"Graph", "empty"});
    test::expect_throw_with<InvalidArgument>([] { (void)core::Graph::capture({}, [](core::StreamRef) {}); },
                                             {"default stream", "cannot be captured"});
    test::expect_throw_with<InvalidArgument>([] { (void)core::Module{}.kernel("k"); }, {"Module", "empty"});
}

TEST(LaunchConfig, EveryDimensionIsCheckedAndNamed) {
    const auto k = fake_kernel();
    const auto bad = [&](const LaunchConfig& c, std::initializer_list<std::string> needles) {
        test::expect_throw_with<InvalidArgument>([&] { detail::check_config(*k, c); }, needles);
    };
    // Zero and negative values in y and z, for grid, block and cluster.
    bad({.grid = {4, 0}, .block = 32}, {"launch: LaunchConfig::grid", "(4, 0, 1)", "below 1"});
    bad({.grid = {4, 1, -3}, .block = 32}, {"LaunchConfig::grid", "(4, 1, -3)", "below 1"});
    bad({.grid = -1, .block = 32}, {"LaunchConfig::grid", "(-1, 1, 1)", "below 1"});
    bad({.grid = 1, .block = {32, 0}}, {"LaunchConfig::block", "(32, 0, 1)", "below 1"});
    bad({.grid = 1, .block = {32, 1, -1}}, {"LaunchConfig::block", "(32, 1, -1)", "below 1"});
    bad({.grid = 8, .block = 32, .cluster = Dim3{2, -1}}, {"LaunchConfig::cluster", "(2, -1, 1)", "below 1"});
    bad({.grid = 8, .block = 32, .cluster = Dim3{2, 1, 0}}, {"LaunchConfig::cluster", "(2, 1, 0)", "below 1"});
    // Oversized in y and z.
    bad({.grid = {1, 1, 65536}, .block = 32}, {"LaunchConfig::grid", "(1, 1, 65536)", "65535"});
    bad({.grid = 1, .block = {1, 1025}}, {"LaunchConfig::block", "(1, 1025, 1)", "(1024, 1024, 64)"});
    bad({.grid = 1, .block = std::int64_t(1) << 40}, {"LaunchConfig::block", "1099511627776"});  // no overflow
    // A cluster must divide the grid in every dimension; a cluster larger than the grid cannot.
    bad({.grid = {8, 3}, .block = 32, .cluster = Dim3{2, 2}}, {"LaunchConfig::cluster", "(8, 3, 1)", "(2, 2, 1)"});
    bad({.grid = {8, 4, 5}, .block = 32, .cluster = Dim3{1, 1, 2}}, {"LaunchConfig::cluster", "(8, 4, 5)"});
    bad({.grid = 2, .block = 32, .cluster = 4}, {"LaunchConfig::cluster", "(2, 1, 1)", "(4, 1, 1)", "multiple"});
    // At most 16 blocks per cluster, whatever the grid.
    bad({.grid = 64, .block = 32, .cluster = 32}, {"LaunchConfig::cluster", "over 16", "(32, 1, 1)"});
    bad({.grid = {8, 4}, .block = 32, .cluster = Dim3{8, 4}},
        {"LaunchConfig::cluster", "32", "(8, 4, 1)", "at most 16"});
    bad({.grid = 0x7ffffffe, .block = 1, .cluster = 0x7ffffffe}, {"LaunchConfig::cluster", "over 16"});
    // The grid is checked before the cluster, so a bad grid is named as such.
    bad({.grid = 0, .block = 32, .cluster = 2}, {"LaunchConfig::grid"});
    // The same checks guard launch_raw and launch: an empty argument list reaches no driver call.
    auto state = std::shared_ptr<detail::KernelState>(fake_kernel().release());
    state->params.clear();
    const core::Kernel kernel = detail::KernelAccess::make(state);
    EXPECT_EQ(&detail::KernelAccess::state(kernel), state.get());
    test::expect_throw_with<InvalidArgument>(
        [&] {
            core::launch({}, {.grid = {1, 0}, .block = 1}, kernel);
        },
        {"LaunchConfig::grid", "(1, 0, 1)"});
    test::expect_throw_with<InvalidArgument>(
        [&] { core::launch_raw({}, {.grid = 1, .block = 1, .cluster = Dim3{0}}, kernel, nullptr); },
        {"LaunchConfig::cluster", "below 1"});
    // A null parameter array for a kernel that takes parameters would have the driver read
    // through it; refused before the launch, and before the configuration is looked at.
    const auto saxpy = std::shared_ptr<detail::KernelState>(fake_kernel().release());
    const core::Kernel with_params = detail::KernelAccess::make(saxpy);
    for (const LaunchConfig& c : {LaunchConfig{.grid = 1, .block = 1}, LaunchConfig{.grid = 0, .block = 1}})
        test::expect_throw_with<InvalidArgument>([&] { core::launch_raw({}, c, with_params, nullptr); },
                                                 {"launch", "args: null", "'saxpy'", "3 parameters", "8, 4, 8"});
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)kernel.max_active_clusters({.grid = 6, .block = 32, .cluster = 4}); },
        {"LaunchConfig::cluster", "multiple"});
    test::expect_throw_with<InvalidArgument>([&] { (void)kernel.max_active_clusters({.grid = 6, .block = 32}); },
                                             {"config.cluster", "not set"});
}
