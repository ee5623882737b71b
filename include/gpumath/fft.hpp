// SPDX-License-Identifier: Apache-2.0
/// @file
/// FFTs on cuFFT: the FFT plan, fft/ifft/rfft/irfft with a plan cache, callbacks.
#pragma once

#include <gpumath/fft/callback.hpp>
#include <gpumath/fft/fft.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/fft/plan_cache.hpp>
