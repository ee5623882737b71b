// SPDX-License-Identifier: Apache-2.0
// Module and Kernel without a GPU: adopting foreign handles refuses null handles and bad ownership
// values before any CUDA call, and a Kernel's launch information is reached only through
// detail::KernelAccess. Adopted handles on a GPU are tested in jit_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"

using namespace gpumath;
using core::Ownership;

namespace {

template <class K>
concept has_public_state = requires(const K& k) {
    k.state();
};

}  // namespace

TEST(Kernel, LaunchInformationIsPrivate) {
    static_assert(!has_public_state<core::Kernel>);
    static_assert(!std::is_constructible_v<core::Kernel, std::shared_ptr<detail::KernelState>>);
    auto state = std::make_shared<detail::KernelState>();
    state->name.push_back('k');  // (not = "k": GCC 12 -Wrestrict false positive)
    const core::Kernel k = detail::KernelAccess::make(state);
    EXPECT_TRUE(k);
    EXPECT_EQ(&detail::KernelAccess::state(k), state.get());
    EXPECT_EQ(k.name(), "k");
    test::expect_throw_with<InvalidArgument>([] { (void)detail::KernelAccess::state(core::Kernel{}); },
                                             {"Kernel", "empty"});
}

// On a machine without a driver every driver call throws CudaError ("no CUDA driver/device"), so an
// InvalidArgument here also shows that the check came first.
TEST(Adopt, NullLibraryIsRejectedBeforeAnyCudaCall) {
    for (Ownership o : {Ownership::borrowed, Ownership::owned})
        test::expect_throw_with<InvalidArgument>([&] { (void)core::Module::adopt(nullptr, o); },
                                                 {"Module::adopt", "library: a null CUlibrary", "cuLibraryLoadData"});
    test::expect_throw_with<InvalidArgument>([] { (void)core::Module::adopt(nullptr); }, {"null CUlibrary"});
}

TEST(Adopt, NullKernelIsRejectedBeforeAnyCudaCall) {
    test::expect_throw_with<InvalidArgument>([] { (void)core::Kernel::adopt(nullptr); },
                                             {"Kernel::adopt", "kernel: a null CUkernel", "cuLibraryGetKernel"});
    test::expect_throw_with<InvalidArgument>([] { (void)core::Kernel::adopt(nullptr, 0); }, {"null CUkernel"});
}

TEST(Adopt, DevicesBelowMinusOneAreRejectedBeforeAnyCudaCall) {
    // -1 means the current device; -7 meant it too, silently. The handle is never used.
    const auto fake = reinterpret_cast<CUkernel>(std::uintptr_t(0x1000));
    test::expect_throw_with<InvalidArgument>([&] { (void)core::Kernel::adopt(fake, -7); },
                                             {"Kernel::adopt", "device: -7", "-1 for the current device"});
}

TEST(Adopt, OwnershipOutsideTheEnumIsRejected) {
    // A handle that is never used: the value is refused before anything looks at it.
    const auto fake = reinterpret_cast<CUlibrary>(std::uintptr_t(0x1000));
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)core::Module::adopt(fake, static_cast<Ownership>(2)); },
        {"Module::adopt", "ownership: 2 is not an Ownership; allowed: borrowed, owned"});
    EXPECT_EQ(core::to_string(Ownership::borrowed), "borrowed");
    EXPECT_EQ(core::to_string(Ownership::owned), "owned");
}

TEST(Adopt, BorrowedLibraryNeedsNoDriverUntilUsed) {
    // Adopting only records the handle; a borrowed one is never unloaded, so a handle that was never
    // loaded can be wrapped and dropped on any machine.
    const auto fake = reinterpret_cast<CUlibrary>(std::uintptr_t(0x1000));
    {
        core::Module m = core::Module::adopt(fake);
        EXPECT_TRUE(m);
        EXPECT_EQ(m.handle(), fake);
        const core::Module moved = std::move(m);
        EXPECT_EQ(moved.handle(), fake);
        EXPECT_FALSE(m);  // NOLINT(bugprone-use-after-move): checking the moved-from state
    }
    if (!test::has_gpu()) {
        // Looking kernels up needs the driver, and says it is missing.
        const core::Module m = core::Module::adopt(fake);
        try {
            (void)m.kernel("k");
            ADD_FAILURE() << "expected CudaError";
        } catch (const CudaError& e) {
            EXPECT_NE(std::string(e.what()).find("no CUDA driver/device"), std::string::npos) << e.what();
        }
    }
}
