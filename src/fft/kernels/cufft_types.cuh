// SPDX-License-Identifier: Apache-2.0
// What FFT callback sources see as <cufft.h> and <cufftXt.h> under NVRTC: cuFFT's callback types
// and typedefs without its host API, which NVRTC cannot compile. One text serves both names, so
// the guard (not #pragma once, which goes by file) keeps a source that includes both well formed.
#ifndef GPUMATH_FFT_CALLBACK_TYPES
#define GPUMATH_FFT_CALLBACK_TYPES

#include <cuComplex.h>

typedef float cufftReal;
typedef double cufftDoubleReal;
typedef cuComplex cufftComplex;
typedef cuDoubleComplex cufftDoubleComplex;

#define CUFFT_FORWARD -1
#define CUFFT_INVERSE 1

typedef enum cufftXtCallbackType_t {
    CUFFT_CB_LD_COMPLEX = 0x0,
    CUFFT_CB_LD_COMPLEX_DOUBLE = 0x1,
    CUFFT_CB_LD_REAL = 0x2,
    CUFFT_CB_LD_REAL_DOUBLE = 0x3,
    CUFFT_CB_ST_COMPLEX = 0x4,
    CUFFT_CB_ST_COMPLEX_DOUBLE = 0x5,
    CUFFT_CB_ST_REAL = 0x6,
    CUFFT_CB_ST_REAL_DOUBLE = 0x7,
    CUFFT_CB_UNDEFINED = 0x8
} cufftXtCallbackType;

typedef cufftComplex (*cufftJITCallbackLoadC)(void*, unsigned long long, void*, void*);
typedef cufftDoubleComplex (*cufftJITCallbackLoadZ)(void*, unsigned long long, void*, void*);
typedef cufftReal (*cufftJITCallbackLoadR)(void*, unsigned long long, void*, void*);
typedef cufftDoubleReal (*cufftJITCallbackLoadD)(void*, unsigned long long, void*, void*);
typedef void (*cufftJITCallbackStoreC)(void*, unsigned long long, cufftComplex, void*, void*);
typedef void (*cufftJITCallbackStoreZ)(void*, unsigned long long, cufftDoubleComplex, void*, void*);
typedef void (*cufftJITCallbackStoreR)(void*, unsigned long long, cufftReal, void*, void*);
typedef void (*cufftJITCallbackStoreD)(void*, unsigned long long, cufftDoubleReal, void*, void*);

#endif  // GPUMATH_FFT_CALLBACK_TYPES
