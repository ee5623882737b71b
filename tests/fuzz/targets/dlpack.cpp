// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the DLPack structs a producer hands gpumath: any DLTensor (see DLPackInput for
// how the input describes one), borrowed as a TensorView and adopted as a Tensor, whose producer's
// deleter must run exactly once either way.
#include <cstdint>
#include <span>

#include <dlpack/dlpack.h>

#include <gpumath/tensor.hpp>

#include "fuzz/targets/fuzz_inputs.hpp"
#include "fuzz/targets/target.hpp"

namespace {

struct Managed {
    DLManagedTensor tensor{};
    int deleted = 0;
};

}  // namespace

GPUMATH_FUZZ_TARGET(dlpack) {
    gpumath::fuzz::DLPackInput in = gpumath::fuzz::read_dlpack_input(data);
    DLTensor t{};
    t.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(in.data));  // never dereferenced
    t.device = {static_cast<DLDeviceType>(in.device_type), in.device_id};
    t.ndim = in.ndim;
    t.dtype = {in.code, in.bits, in.lanes};
    t.shape = in.shape.empty() ? nullptr : in.shape.data();
    t.strides = in.has_strides && !in.strides.empty() ? in.strides.data() : nullptr;
    t.byte_offset = in.byte_offset;
    // Extents beyond those held would be read past the arrays: ndim above 64 is only given with
    // null arrays, which gpumath must refuse before reading.
    if (in.ndim > 64) t.shape = t.strides = nullptr;
    gpumath::fuzz::answered([&] {
        const gpumath::TensorView view = gpumath::TensorView::from_dlpack(t);
        GPUMATH_FUZZ_CHECK(view.rank() == in.ndim, "a view of another rank");
    });
    Managed managed;
    managed.tensor.dl_tensor = t;
    managed.tensor.manager_ctx = &managed;
    managed.tensor.deleter = [](DLManagedTensor* self) { ++static_cast<Managed*>(self->manager_ctx)->deleted; };
    gpumath::fuzz::answered([&] { const gpumath::Tensor adopted = gpumath::Tensor::from_dlpack(&managed.tensor); });
    GPUMATH_FUZZ_CHECK(managed.deleted == 1, "the producer's deleter ran other than once");
}
