// SPDX-License-Identifier: Apache-2.0
// Fake DLPack producers for the DLPack tests: tensors with made-up device pointers whose deleters
// count their calls (and throw, when asked). Nothing here touches the pointers, so the tests run
// without a GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <gpumath/dlpack.hpp>
#include <gpumath/log.hpp>

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

/// What a fake producer's deleter throws once it has counted its call.
enum class DeleterThrows { nothing, std_exception, non_std };

/// The message of the std::runtime_error a deleter throws with DeleterThrows::std_exception.
inline constexpr const char* deleter_error = "the producer's pool is gone";

/// A producer handing out a managed tensor (`Managed` is DLManagedTensor or DLManagedTensorVersioned)
/// whose deleter counts its calls in `deletes`, then throws what `throws` says (as a C++ producer's
/// deleter might).
template <class Managed>
struct FakeProducer {
    FakeDLTensor fake;
    Managed managed{};
    int deletes = 0;
    DeleterThrows throws = DeleterThrows::nothing;

    FakeProducer() {
        managed.dl_tensor = fake.tensor;
        managed.manager_ctx = this;
        managed.deleter = [](Managed* self) {
            auto* producer = static_cast<FakeProducer*>(self->manager_ctx);
            ++producer->deletes;
            if (producer->throws == DeleterThrows::std_exception) throw std::runtime_error(deleter_error);
            if (producer->throws == DeleterThrows::non_std) throw 42;
        };
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

/// What gpumath logs to stderr while `f` runs, with the log level at `warn` (restored after).
template <class F>
std::string captured_log(F&& f) {
    const LogLevel before = log_level();
    set_log_level(LogLevel::warn);
    ::testing::internal::CaptureStderr();
    f();
    std::string written = ::testing::internal::GetCapturedStderr();
    set_log_level(before);
    return written;
}

}  // namespace gpumath::test
