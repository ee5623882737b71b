// SPDX-License-Identifier: Apache-2.0
/// @file
/// How launch() passes a C++ argument to a kernel: the KernelArgument customization point, with
/// its specializations for the runtime layer's and the vocabulary's types (Tensor's is in
/// <gpumath/tensor.hpp>, which sits above this layer).
#pragma once

#include <cstddef>
#include <type_traits>

#include <gpumath/core/memory.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::core {

/// How `launch` passes an argument of type `T` to a kernel: the kernel receives a `type`, made by
/// `get(const T&)`. Trivially copyable values pass as themselves; nullptr, Buffer, TensorView and
/// Tensor have specializations (a null pointer, the device pointer). Specialize it for a type of
/// your own (a handle that owns a device pointer, say) before calling `launch` with it; `type`
/// must be trivially copyable.
template <class T>
struct KernelArgument {
    static_assert(std::is_trivially_copyable_v<T>,
                  "gpumath::core::launch: kernel arguments must be trivially copyable (or a Buffer, "
                  "TensorView or Tensor, passed as its device pointer, or a type with a "
                  "gpumath::core::KernelArgument specialization)");
    static_assert(!std::is_array_v<T>, "gpumath::core::launch: pass a pointer, not an array");
    /// What the kernel receives: the value itself.
    using type = T;
    /// The value passed.
    static constexpr const T& get(const T& v) noexcept { return v; }
};

/// nullptr passes as a null `void*` (a null pointer with a defined object representation).
template <>
struct KernelArgument<std::nullptr_t> {
    /// A pointer.
    using type = void*;
    /// Null.
    static void* get(std::nullptr_t) noexcept { return nullptr; }
};

/// A Buffer passes as its device pointer.
template <>
struct KernelArgument<Buffer> {
    /// A pointer.
    using type = void*;
    /// `b.data()`.
    static void* get(const Buffer& b) noexcept { return b.data(); }
};

/// A TensorView passes as its data pointer (not as the layout: TensorView is trivially copyable,
/// so without this specialization it would be copied whole).
template <>
struct KernelArgument<TensorView> {
    /// A pointer.
    using type = void*;
    /// `v.data()`.
    static void* get(const TensorView& v) noexcept { return v.data(); }
};

}  // namespace gpumath::core
