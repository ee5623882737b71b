// SPDX-License-Identifier: Apache-2.0
// A process whose GPUMATH_NCCL_LIBRARY names a file that does not exist: everything in gpumath::dist
// that needs NCCL throws NcclError naming the file, every time, and nothing else is affected.
// (Its own binary: NCCL is loaded once per process.)
#include <gtest/gtest.h>

#include <cstdlib>

#include <gpumath/dist/communicator.hpp>
#include <gpumath/error.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

TEST(NcclMissing, EveryUseThrowsNcclErrorNamingTheFile) {
    ASSERT_EQ(setenv("GPUMATH_NCCL_LIBRARY", "/nonexistent/gpumath-test/libnccl.so.2", 1), 0);
    for (int attempt = 0; attempt < 2; ++attempt) {
        test::expect_throw_with<NcclError>(
            [] { (void)dist::nccl_version(); },
            {"/nonexistent/gpumath-test/libnccl.so.2", "GPUMATH_NCCL_LIBRARY", "could not be loaded"});
        test::expect_throw_with<NcclError>([] { (void)dist::UniqueId::create(); }, {"libnccl.so.2"});
    }
    try {
        (void)dist::nccl_version();
    } catch (const NcclError& e) {
        EXPECT_EQ(e.status(), 0);
        EXPECT_EQ(e.api(), "dlopen");
    }
}
