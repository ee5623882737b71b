// SPDX-License-Identifier: Apache-2.0
#include "common/test_util.hpp"

TEST(FftGpu, Placeholder) { GPUMATH_REQUIRE_GPU(); }
