// SPDX-License-Identifier: Apache-2.0
/// @file
/// Stream-ordered memory: the MemoryResource interface and its device-pool, pinned and managed
/// resources, the owning Buffer, and release_workspaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::core {

/// Stream-ordered allocator interface. gpumath allocates results and workspaces through one;
/// callers can pass their own.
///
/// `allocate` returns memory usable by work enqueued on `stream` after the call, aligned to
/// `alignment` bytes; `deallocate` frees it once the work enqueued on `stream` before the call has
/// finished. Zero-byte requests return nullptr. Implementations must be thread-safe.
///
/// The alignment is part of the contract for every resource, gpumath's and the caller's: it must
/// be a power of two (InvalidArgument otherwise, before the resource is asked), and a block the
/// resource returns less aligned is given back and reported as NotSupported, so a pointer from
/// `allocate` is always as aligned as requested.
class MemoryResource {
public:
    /// The alignment of every allocation unless asked otherwise: 256 bytes, what CUDA's allocators
    /// guarantee and more than any cuBLASLt or cuFFT operand needs.
    static constexpr std::size_t default_alignment = 256;

    virtual ~MemoryResource() = default;

    /// Allocates `bytes` aligned to `alignment` (a power of two) ordered on `stream`.
    /// InvalidArgument for an alignment that is not a power of two; NotSupported when the resource
    /// returned a less aligned block; CudaError when the allocation fails, also when the resource
    /// returns null for a non-zero size (status cudaErrorMemoryAllocation).
    [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream = core::current_stream(),
                                 std::size_t alignment = default_alignment) {
        check_alignment(alignment);
        if (bytes == 0) return nullptr;
        void* p = do_allocate(bytes, stream, alignment);
        if (p == nullptr) [[unlikely]]
            throw_null_block(bytes);
        if ((reinterpret_cast<std::uintptr_t>(p) & (alignment - 1)) != 0) [[unlikely]]
            reject_misaligned(p, bytes, stream, alignment);
        return p;
    }
    /// Frees `ptr` (from `allocate` with the same `bytes` and `alignment`) ordered on `stream`.
    /// Never throws.
    void deallocate(void* ptr, std::size_t bytes, StreamRef stream = core::current_stream(),
                    std::size_t alignment = default_alignment) noexcept {
        if (ptr != nullptr) do_deallocate(ptr, bytes, stream, alignment);
    }
    /// True when kernels can access the memory.
    [[nodiscard]] virtual bool device_accessible() const noexcept = 0;
    /// True when the host can access the memory.
    [[nodiscard]] virtual bool host_accessible() const noexcept = 0;

    /// InvalidArgument unless `alignment` is a power of two.
    static void check_alignment(std::size_t alignment) {
        if (alignment == 0 || (alignment & (alignment - 1)) != 0) [[unlikely]]
            throw_bad_alignment(alignment);
    }

protected:
    /// For derived resources. Copies and moves are protected so that no resource is sliced through
    /// this type; each derived resource decides whether it can be copied or moved.
    MemoryResource() = default;
    /// Copies nothing (the interface has no state); protected against slicing.
    MemoryResource(const MemoryResource&) = default;
    /// Copies nothing (the interface has no state); protected against slicing.
    MemoryResource& operator=(const MemoryResource&) = default;
    /// Moves nothing (the interface has no state); protected against slicing.
    MemoryResource(MemoryResource&&) = default;
    /// Moves nothing (the interface has no state); protected against slicing.
    MemoryResource& operator=(MemoryResource&&) = default;

    /// Allocates `bytes` (> 0) aligned to `alignment` (a power of two) ordered on `stream`.
    virtual void* do_allocate(std::size_t bytes, StreamRef stream, std::size_t alignment) = 0;
    /// Frees a block from `do_allocate` with the same `bytes` and `alignment`. Must not throw.
    virtual void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream, std::size_t alignment) noexcept = 0;

private:
    [[noreturn]] static void throw_bad_alignment(std::size_t alignment);
    [[noreturn]] static void throw_null_block(std::size_t bytes);
    [[noreturn]] void reject_misaligned(void* ptr, std::size_t bytes, StreamRef stream, std::size_t alignment);
};

/// Options for a DeviceMemoryResource.
struct DeviceMemoryResourceOptions {
    /// Bytes the pool keeps reserved across synchronizations instead of returning them to the
    /// driver. The default keeps everything (fastest); call `trim()` to give memory back.
    std::uint64_t release_threshold = UINT64_MAX;
};

/// Stream-ordered pool of device memory (cudaMemPool) on one device. The default resource
/// everywhere gpumath allocates. Blocks are 256-byte aligned; a larger alignment is served by
/// allocating `alignment - 256` bytes more and handing out the aligned address inside the block.
class DeviceMemoryResource final : public MemoryResource {
public:
    /// Creates a pool on device `device` (-1: the current device). Throws CudaError; InvalidArgument
    /// for a device below -1 or past the last one.
    explicit DeviceMemoryResource(int device = -1, const DeviceMemoryResourceOptions& options = {});
    ~DeviceMemoryResource() override;
    DeviceMemoryResource(const DeviceMemoryResource&) = delete;
    DeviceMemoryResource& operator=(const DeviceMemoryResource&) = delete;
    DeviceMemoryResource(DeviceMemoryResource&&) = delete;
    DeviceMemoryResource& operator=(DeviceMemoryResource&&) = delete;

    /// gpumath's shared default pool for `device` (-1: current), created on first use and alive
    /// until the process exits. Throws CudaError when there is no device; InvalidArgument for a
    /// device below -1 or past the last one.
    [[nodiscard]] static const std::shared_ptr<DeviceMemoryResource>& default_resource(int device = -1);

    [[nodiscard]] bool device_accessible() const noexcept override { return true; }
    [[nodiscard]] bool host_accessible() const noexcept override { return false; }
    /// The device the pool allocates on.
    [[nodiscard]] int device() const noexcept { return device_; }
    /// The native pool handle.
    [[nodiscard]] cudaMemPool_t handle() const noexcept { return pool_; }
    /// Releases unused reserved memory until at most `keep_bytes` stay reserved.
    void trim(std::size_t keep_bytes = 0);
    /// Bytes currently reserved by the pool (in use or cached).
    [[nodiscard]] std::uint64_t reserved_bytes() const;
    /// Bytes currently handed out.
    [[nodiscard]] std::uint64_t used_bytes() const;

protected:
    void* do_allocate(std::size_t bytes, StreamRef stream, std::size_t alignment) override;
    void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream, std::size_t alignment) noexcept override;

private:
    cudaMemPool_t pool_ = nullptr;
    int device_ = 0;
};

/// Page-locked host memory (cudaMallocHost): host- and device-accessible, fast to copy.
/// Allocation and release are synchronous; release waits for work on the stream given to
/// `deallocate` before freeing. Alignments above 256 bytes are served as DeviceMemoryResource's.
class PinnedMemoryResource final : public MemoryResource {
public:
    /// A process-wide instance.
    [[nodiscard]] static const std::shared_ptr<PinnedMemoryResource>& default_resource();
    [[nodiscard]] bool device_accessible() const noexcept override { return true; }
    [[nodiscard]] bool host_accessible() const noexcept override { return true; }

protected:
    void* do_allocate(std::size_t bytes, StreamRef stream, std::size_t alignment) override;
    void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream, std::size_t alignment) noexcept override;
};

/// Managed (unified) memory (cudaMallocManaged): host- and device-accessible, migrated on demand.
/// Alignments above 256 bytes are served as DeviceMemoryResource's.
class ManagedMemoryResource final : public MemoryResource {
public:
    /// A process-wide instance.
    [[nodiscard]] static const std::shared_ptr<ManagedMemoryResource>& default_resource();
    [[nodiscard]] bool device_accessible() const noexcept override { return true; }
    [[nodiscard]] bool host_accessible() const noexcept override { return true; }

protected:
    void* do_allocate(std::size_t bytes, StreamRef stream, std::size_t alignment) override;
    void do_deallocate(void* ptr, std::size_t bytes, StreamRef stream, std::size_t alignment) noexcept override;
};

/// Frees the scratch areas gpumath keeps per stream for the matmul and FFT plans (stateful and
/// cached) that allocate from the default pools, and the areas of captured CUDA graphs that have
/// been destroyed; they grow again on demand. Areas from a caller's memory resource are freed with
/// the last plan that uses them instead. Blocking: synchronizes every device that has such areas
/// first; no other thread may be issuing gpumath work meanwhile. Throws CudaError.
void release_workspaces();

}  // namespace gpumath::core

namespace gpumath::detail {
// Blocking-free copy of `bytes` on `stream` (cudaMemcpyAsync, cudaMemcpyDefault).
void copy_async(void* dst, const void* src, std::size_t bytes, core::StreamRef stream);
void check_copy_sizes(std::size_t dst_bytes, std::size_t src_bytes, const char* api);
// InvalidArgument when `stream` is capturing a CUDA graph: a copy into pageable host memory that
// then synchronizes the stream would invalidate the caller's capture. CudaError as
// cudaStreamIsCapturing's.
void reject_blocking_copy_in_capture(core::StreamRef stream, const char* api);
}  // namespace gpumath::detail

namespace gpumath::core {

/// Owning, move-only block of memory from a MemoryResource, freed in stream order on the stream it
/// was allocated on (or the one given to `reset`).
///
/// The allocation stream must outlive the Buffer, or the Buffer must be `reset` on a live stream.
class Buffer {
public:
    /// An empty buffer (no memory).
    Buffer() noexcept = default;
    /// Allocates `bytes` aligned to `alignment` (a power of two; InvalidArgument otherwise) from
    /// `resource` (default: the current device's pool) ordered on `stream`.
    explicit Buffer(std::size_t bytes, StreamRef stream = core::current_stream(),
                    std::shared_ptr<MemoryResource> resource = nullptr,
                    std::size_t alignment = MemoryResource::default_alignment);

    /// Copies `data` from the host into a new device buffer ordered on `stream`. The host data may be
    /// reused as soon as this returns.
    template <class T>
    [[nodiscard]] static Buffer from_host(std::span<const T> data, StreamRef stream = core::current_stream(),
                                          std::shared_ptr<MemoryResource> resource = nullptr) {
        static_assert(std::is_trivially_copyable_v<T>, "Buffer::from_host needs trivially copyable elements");
        Buffer b(data.size_bytes(), stream, std::move(resource));
        if (!data.empty()) detail::copy_async(b.data(), data.data(), data.size_bytes(), stream);
        return b;
    }
    /// Copies a vector's elements into a new device buffer, as the span overload does.
    template <class T>
    [[nodiscard]] static Buffer from_host(const std::vector<T>& data, StreamRef stream = core::current_stream(),
                                          std::shared_ptr<MemoryResource> resource = nullptr) {
        return from_host(std::span<const T>(data), stream, std::move(resource));
    }

    /// Takes over `other`'s memory, stream and resource; `other` becomes empty.
    Buffer(Buffer&& other) noexcept
        : data_(other.data_),
          bytes_(other.bytes_),
          alignment_(other.alignment_),
          stream_(other.stream_),
          resource_(std::move(other.resource_)) {
        other.data_ = nullptr;
        other.bytes_ = 0;
    }
    /// Frees this buffer's memory (`reset()`) and takes over `other`'s; `other` becomes empty.
    Buffer& operator=(Buffer&& other) noexcept {
        if (this != &other) {
            reset();
            data_ = other.data_;
            bytes_ = other.bytes_;
            alignment_ = other.alignment_;
            stream_ = other.stream_;
            resource_ = std::move(other.resource_);
            other.data_ = nullptr;
            other.bytes_ = 0;
        }
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { reset(); }

    /// Frees the memory ordered on the allocation stream; the buffer becomes empty.
    void reset() noexcept { reset(stream_); }
    /// Frees the memory ordered on `stream`; the buffer becomes empty.
    void reset(StreamRef stream) noexcept {
        if (resource_ && data_ != nullptr) resource_->deallocate(data_, bytes_, stream, alignment_);
        data_ = nullptr;
        bytes_ = 0;
    }

    /// The memory (null when empty); the buffer keeps ownership.
    [[nodiscard]] void* data() const noexcept { return data_; }
    /// Size in bytes.
    [[nodiscard]] std::size_t size_bytes() const noexcept { return bytes_; }
    /// True when the buffer holds no bytes.
    [[nodiscard]] bool empty() const noexcept { return bytes_ == 0; }
    /// The alignment the memory was allocated with (`data()` is a multiple of it).
    [[nodiscard]] std::size_t alignment() const noexcept { return alignment_; }
    /// The stream the memory will be freed on.
    [[nodiscard]] StreamRef stream() const noexcept { return stream_; }
    /// Changes the stream the memory will be freed on.
    void set_stream(StreamRef stream) noexcept { stream_ = stream; }
    /// The resource the memory came from and goes back to (null for a default-constructed or
    /// moved-from buffer).
    [[nodiscard]] const std::shared_ptr<MemoryResource>& memory_resource() const noexcept { return resource_; }

    /// Copies all of `src` into this buffer on `stream`; sizes must match (InvalidArgument).
    void copy_from(const Buffer& src, StreamRef stream = core::current_stream()) {
        detail::check_copy_sizes(bytes_, src.bytes_, "Buffer::copy_from");
        if (bytes_ != 0) detail::copy_async(data_, src.data_, bytes_, stream);
    }
    /// Copies host data into this buffer on `stream`; sizes must match. `src` may be reused on return.
    template <class T>
    void copy_from(std::span<const T> src, StreamRef stream = core::current_stream()) {
        static_assert(std::is_trivially_copyable_v<T>, "Buffer::copy_from needs trivially copyable elements");
        detail::check_copy_sizes(bytes_, src.size_bytes(), "Buffer::copy_from");
        if (bytes_ != 0) detail::copy_async(data_, src.data(), bytes_, stream);
    }
    /// Copies this buffer into `dst` on `stream`; sizes must match.
    void copy_to(Buffer& dst, StreamRef stream = core::current_stream()) const { dst.copy_from(*this, stream); }
    /// Enqueues a copy of this buffer into host memory `dst` on `stream` (does not wait: the host
    /// data is valid after the stream is synchronized; use pinned memory for real asynchrony).
    template <class T>
    void copy_to(std::span<T> dst, StreamRef stream = core::current_stream()) const {
        static_assert(std::is_trivially_copyable_v<T>, "Buffer::copy_to needs trivially copyable elements");
        detail::check_copy_sizes(dst.size_bytes(), bytes_, "Buffer::copy_to");
        if (bytes_ != 0) detail::copy_async(dst.data(), data_, bytes_, stream);
    }
    /// Copies the buffer to a new host vector. Blocking: synchronizes `stream`. The size must be a
    /// multiple of sizeof(T) (InvalidArgument). InvalidArgument, with nothing enqueued, when
    /// `stream` is capturing a CUDA graph (a capture cannot hold the wait); CudaError.
    template <class T>
    [[nodiscard]] std::vector<T> to_host(StreamRef stream = core::current_stream()) const {
        static_assert(std::is_trivially_copyable_v<T>, "Buffer::to_host needs trivially copyable elements");
        check_multiple(sizeof(T), "Buffer::to_host");
        std::vector<T> out(bytes_ / sizeof(T));
        if (bytes_ != 0) {
            detail::reject_blocking_copy_in_capture(stream, "Buffer::to_host");
            detail::copy_async(out.data(), data_, bytes_, stream);
            stream.synchronize();
        }
        return out;
    }
    /// A typed view of the buffer as a tensor of `shape` (row-major). The shape must fit in the
    /// buffer (InvalidArgument).
    template <class T>
    [[nodiscard]] TensorView view(std::initializer_list<std::int64_t> shape) const {
        TensorView v(static_cast<T*>(data_), shape);
        check_fits(v.span_bytes(), "Buffer::view");
        return v;
    }
    /// A view of the buffer with an explicit layout, which must fit in the buffer.
    [[nodiscard]] TensorView view(const TensorLayout& layout) const {
        TensorView v(data_, layout);
        check_fits(v.span_bytes(), "Buffer::view");
        return v;
    }
    /// The data as `T*`.
    template <class T>
    [[nodiscard]] T* data_as() const noexcept {
        return static_cast<T*>(data_);
    }

private:
    void check_multiple(std::size_t element, const char* api) const;
    void check_fits(std::int64_t bytes, const char* api) const;

    void* data_ = nullptr;
    std::size_t bytes_ = 0;
    std::size_t alignment_ = MemoryResource::default_alignment;
    StreamRef stream_{};
    std::shared_ptr<MemoryResource> resource_;
};

}  // namespace gpumath::core
