// SPDX-License-Identifier: Apache-2.0
// The entry cuFFT calls for a fused callback, compiled to LTO-IR and attached to a plan with
// cufftXtSetJITCallback. It has C++ linkage and a fixed name whatever the user wrote (cuFFT's
// planning fails on C linkage), and calls the user's function, whose source comes in the in-memory
// header gpumath_fft_callback.cuh. One program per callback, whose macros come from its options
// (src/fft/sources.cpp):
//   GM_FFT_VALUE     cuFFT's callback value type (cufftComplex, cufftDoubleComplex, cufftReal,
//                    cufftDoubleReal)
//   GM_FFT_COMPLEX   1 when that type is complex
//   GM_FFT_LOAD      the entry loads (gpumath_fft_load_entry); otherwise it stores
//                    (gpumath_fft_store_entry)
//   GM_FFT_CALLBACK  the user's function; absent in a store that only scales
//   GM_FFT_SCALE     a store multiplies the element by this literal first (a fused normalization)
#include <cufftXt.h>

#ifdef GM_FFT_CALLBACK
#include "gpumath_fft_callback.cuh"
#endif

#ifdef GM_FFT_LOAD
__device__ GM_FFT_VALUE gpumath_fft_load_entry(void* data, unsigned long long offset, void* info, void* shared) {
    return GM_FFT_CALLBACK(data, offset, info, shared);
}
#else
__device__ void gpumath_fft_store_entry(void* data, unsigned long long offset, GM_FFT_VALUE element, void* info,
                                        void* shared) {
#ifdef GM_FFT_SCALE
#if GM_FFT_COMPLEX
    element.x *= GM_FFT_SCALE;
    element.y *= GM_FFT_SCALE;
#else
    element *= GM_FFT_SCALE;
#endif
#endif
#ifdef GM_FFT_CALLBACK
    GM_FFT_CALLBACK(data, offset, element, info, shared);
#else
    static_cast<GM_FFT_VALUE*>(data)[offset] = element;
#endif
}
#endif
