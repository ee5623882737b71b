// SPDX-License-Identifier: Apache-2.0
// FP8 quantization: fp8_scale_layout, quantize_fp8 (allocating and into the caller's memory) and
// dequantize_fp8. Every check runs before any CUDA call (quantize_checks.cpp); the kernels are
// compiled at run time and cached per device (quantize_kernels.cpp, quantize_source.cpp).
#include <gpumath/matmul/quantize.hpp>

#include "core/stream_workspace.hpp"
#include "matmul/quantize_checks.hpp"
#include "matmul/quantize_kernels.hpp"

namespace gpumath {

TensorLayout fp8_scale_layout(ScaleMode mode, const TensorLayout& x) {
    constexpr const char* api = "fp8_scale_layout";
    detail::check_scale_mode(mode, api);
    return detail::quantize_scale_layout(mode, x, "x", api);
}

QuantizedFP8 quantize_fp8(const TensorView& x, ScaleMode mode, const QuantizeOptions& options, core::StreamRef stream) {
    constexpr const char* api = "quantize_fp8";
    detail::QuantizeCall call = detail::quantize_call(x, mode, options.dtype, api);
    detail::reject_capture(stream, api,
                           "gpumath allocates no results during a capture: pass data and scales (the form with "
                           "outputs)");
    QuantizedFP8 q;
    q.mode = mode;
    q.data = Tensor::empty(TensorLayout(options.dtype, x.shape()), stream, options.memory_resource);
    q.scales = Tensor::empty(detail::scale_storage_layout(mode, x), stream, options.memory_resource);
    q.scales_view = TensorView(q.scales.data(), fp8_scale_layout(mode, x));
    if (options.amax) q.amax = Tensor::empty(TensorLayout(), stream, options.memory_resource);
    call.out = q.data.data();
    call.scales = static_cast<float*>(q.scales.data());
    call.amax = options.amax ? static_cast<float*>(q.amax.data()) : nullptr;
    detail::run_quantize(call, stream);
    return q;
}

void quantize_fp8(const TensorView& x, ScaleMode mode, const TensorView& data, const TensorView& scales, float* amax,
                  core::StreamRef stream) {
    detail::run_quantize(detail::quantize_call(x, mode, data, scales, amax, "quantize_fp8"), stream);
}

Tensor dequantize_fp8(const TensorView& data, const TensorView& scales, ScaleMode mode, DataType result_type,
                      core::StreamRef stream) {
    constexpr const char* api = "dequantize_fp8";
    detail::QuantizeCall call = detail::dequantize_call(data, scales, mode, result_type, api);
    detail::reject_capture(stream, api, "gpumath allocates no results during a capture; dequantize before capturing");
    Tensor result = Tensor::empty(TensorLayout(result_type, data.shape()), stream);
    call.out = result.data();
    detail::run_dequantize(call, stream);
    return result;
}

}  // namespace gpumath
