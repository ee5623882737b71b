// SPDX-License-Identifier: Apache-2.0
// Fake DLPack producers for the DLPack tests: tensors with made-up device pointers whose deleters
// count their calls. Nothing here touches the pointers, so the tests run without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include <gpumath/dlpack.hpp>

namespace gpumath::test {

/// A device address that is never dereferenced (256-byte aligned, like CUDA's allocations).
inline void* fake_device_pointer() {
    return reinterpret_cast<void*>(std::uintptr_t{0x7f0000100000});  // NOLINT: a made-up address
}

/// A DLTensor over a fake pointer: f32 (2, 3) row-major (strides NULL) on managed memory, which
/// needs no device to be present; tests change the fields they exercise.
struct FakeDLTensor {
    std::vector<std::int64_t> shape{2, 3};
    std::vector<std::int64_t> strides;
    DLTensor tensor{};

    FakeDLTensor() { reset(); }
    FakeDLTensor(const FakeDLTensor&) = delete;
    FakeDLTensor& operator=(const FakeDLTensor&) = delete;

    /// Points the DLTensor at this object's shape (and strides, when not empty).
    DLTensor& reset() {
        tensor.data = fake_device_pointer();
        tensor.device.device_type = kDLCUDAManaged;
        tensor.device.device_id = 0;
        tensor.ndim = static_cast<int>(shape.size());
        tensor.dtype.code = kDLFloat;
        tensor.dtype.bits = 32;
        tensor.dtype.lanes = 1;
        return sync();
    }
    /// Re-points shape and strides after the vectors changed.
    DLTensor& sync() {
        tensor.shape = shape.empty() ? nullptr : shape.data();
        tensor.strides = strides.empty() ? nullptr : strides.data();
        return tensor;
    }
};

/// A producer handing out a managed tensor (`Managed` is DLManagedTensor or DLManagedTensorVersioned)
/// whose deleter counts its calls in `deletes`.
template <class Managed>
struct FakeProducer {
    FakeDLTensor fake;
    Managed managed{};
    int deletes = 0;

    FakeProducer() {
        managed.dl_tensor = fake.tensor;
        managed.manager_ctx = this;
        managed.deleter = [](Managed* self) { ++static_cast<FakeProducer*>(self->manager_ctx)->deletes; };
    }
    FakeProducer(const FakeProducer&) = delete;
    FakeProducer& operator=(const FakeProducer&) = delete;

    /// The DLTensor the managed tensor carries (re-synced with `fake` by `refresh`).
    DLTensor& tensor() { return managed.dl_tensor; }
    /// Copies `fake`'s current DLTensor into the managed tensor.
    Managed* refresh() {
        managed.dl_tensor = fake.sync();
        return &managed;
    }
};

}  // namespace gpumath::test
