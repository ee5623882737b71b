// SPDX-License-Identifier: Apache-2.0
// Moved-from JIT objects (no GPU needed): ObjectCode, Module, Kernel and Graph throw InvalidArgument
// saying they are empty or moved from, before any CUDA call; noexcept accessors return null.
// Program and Linker are covered in program_test.cpp and linker_test.cpp; loaded modules and
// captured graphs in gpu_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"

using namespace gpumath;
using core::CodeType;

TEST(MovedFrom, ObjectCode) {
    core::ObjectCode a = core::ObjectCode::from_bytes(std::string_view(".version 8.0\n.target sm_90\n"), CodeType::ptx);
    const core::ObjectCode b = std::move(a);
    EXPECT_EQ(b.type(), CodeType::ptx);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.shared_data(), nullptr);
    const std::initializer_list<std::string> moved = {"ObjectCode", "empty (default-constructed or moved from)"};
    test::expect_throw_with<InvalidArgument>([&] { (void)a.type(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.bytes(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.kernel_names(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.lowered_name("k"); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.load(); }, {"Module", "empty ObjectCode"});
    test::expect_throw_with<InvalidArgument>([&] { core::Linker().add(a); }, {"Linker::add", "empty ObjectCode"});
    // NOLINTEND(bugprone-use-after-move)
}

TEST(MovedFrom, Module) {
    core::Module a;
    core::Module b = std::move(a);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_FALSE(a);
    EXPECT_EQ(a.handle(), nullptr);
    const std::initializer_list<std::string> moved = {"this Module is empty (default-constructed or moved from)"};
    test::expect_throw_with<InvalidArgument>([&] { (void)a.kernel("k"); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.kernel_names(); }, moved);
    // NOLINTEND(bugprone-use-after-move)
    EXPECT_FALSE(b);
}

TEST(MovedFrom, Kernel) {
    auto state = std::make_shared<detail::KernelState>();
    state->name.push_back('k');  // (not = "k": GCC 12 -Wrestrict false positive)
    state->params_known = true;
    core::Kernel a = detail::KernelAccess::make(state);
    const core::Kernel b = std::move(a);
    EXPECT_EQ(b.name(), "k");
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_FALSE(a);
    const std::initializer_list<std::string> moved = {"this Kernel is empty (default-constructed or moved from)"};
    test::expect_throw_with<InvalidArgument>([&] { (void)a.name(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.handle(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.params(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.attributes(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.max_active_blocks_per_multiprocessor(32); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { a.set_max_dynamic_shared_memory(1024); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { core::launch({}, {}, a); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { core::launch_raw({}, {}, a, nullptr); }, moved);
    // NOLINTEND(bugprone-use-after-move)
}

TEST(MovedFrom, Graph) {
    core::Graph a;
    core::Graph b = std::move(a);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_FALSE(a);
    EXPECT_EQ(a.graph(), nullptr);
    EXPECT_EQ(a.handle(), nullptr);
    const std::initializer_list<std::string> moved = {"this Graph is empty (default-constructed or moved from)"};
    test::expect_throw_with<InvalidArgument>([&] { a.launch(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { a.upload(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.node_count(); }, moved);
    // NOLINTEND(bugprone-use-after-move)
    EXPECT_FALSE(b);
}
