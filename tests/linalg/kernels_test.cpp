// SPDX-License-Identifier: Apache-2.0
// linalg's own kernels (src/linalg/kernels/linalg_util.cu) compile with NVRTC for every name
// expression the host looks them up by (no GPU needed).
#include "linalg/kernels.hpp"

#include <string>

#include <gpumath/core/program.hpp>

#include "common/test_util.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

namespace gpumath::detail {
namespace {

TEST(LinalgKernels, EveryKernelCompilesAndIsFoundByItsName) {
    core::ProgramOptions options = linalg_kernel_options();
    options.arch = GPUMATH_TEST_ARCH;
    core::Program program(std::string(linalg_kernel_source()), options);
    const auto names = linalg_kernel_names();
    // batch_pointers, zero_triangle for 3 sizes, add_diagonal, determinant, identity,
    // first_zero_diagonal and column_norms for 4 types, conjugate for 2, the two pivot conversions
    ASSERT_EQ(names.size(), 28U);
    for (const std::string& name : names) program.add_name_expression(name);
    const core::ObjectCode code = program.compile(core::CodeType::cubin);
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        EXPECT_FALSE(code.lowered_name(name).empty());
    }
}

}  // namespace
}  // namespace gpumath::detail
