// SPDX-License-Identifier: Apache-2.0
#include <gpumath/core/memory.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"

#include "detail/device_registry.hpp"

namespace gpumath::core {

void MemoryResource::throw_bad_alignment(std::size_t alignment) {
    gpumath::detail::throw_invalid(fmt::format("alignment: {} is not a power of two", alignment),
                                   "MemoryResource::allocate");
}

void MemoryResource::throw_null_block(std::size_t bytes) {
    throw CudaError(fmt::format("MemoryResource::allocate: the memory resource returned no memory (a null pointer) "
                                "for {} bytes; out of memory, or the resource failed",
                                bytes),
                    int(cudaErrorMemoryAllocation), "MemoryResource::allocate");
}

void MemoryResource::reject_misaligned(void* ptr, std::size_t bytes, StreamRef stream, std::size_t alignment) {
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    deallocate(ptr, bytes, stream, alignment);
    gpumath::detail::throw_not_supported(
        fmt::format("alignment: {} bytes were requested, the memory resource returned a block aligned to {} bytes; "
                    "it does not honour alignments this large",
                    alignment, address & (~address + 1)),
        "MemoryResource::allocate");
}

namespace {

// CUDA's allocators (pools, cudaMallocHost, cudaMallocManaged) return 256-byte aligned blocks. A
// larger alignment is served by allocating `alignment - 256` bytes more and handing out the aligned
// address inside; the block's start is remembered here, keyed by the address handed out, so that
// it can be freed. Only such requests touch this table (never destroyed: frees may come at exit).
struct OverAlignedBlocks {
    std::mutex mutex;
    std::unordered_map<void*, void*> base;
};

OverAlignedBlocks& over_aligned_blocks() {
    static auto& blocks = *new OverAlignedBlocks();
    return blocks;
}

// `raw(bytes)` allocates, `release(base)` frees a block `raw` returned.
template <class Raw, class Release>
void* allocate_aligned(std::size_t bytes, std::size_t alignment, Raw&& raw, Release&& release) {
    constexpr std::size_t natural = MemoryResource::default_alignment;
    if (alignment <= natural) [[likely]]
        return raw(bytes);
    const std::size_t extra = alignment - natural;
    if (bytes > SIZE_MAX - extra)
        gpumath::detail::throw_invalid(
            fmt::format("bytes: {} bytes aligned to {} exceed the address space", bytes, alignment),
            "MemoryResource::allocate");
    void* base = raw(bytes + extra);
    // The first address in the block that is a multiple of `alignment` (a power of two).
    const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(base) & (alignment - 1);
    void* aligned = static_cast<std::byte*>(base) + (misalignment == 0 ? 0 : alignment - misalignment);
    try {
        OverAlignedBlocks& blocks = over_aligned_blocks();
        std::lock_guard lock(blocks.mutex);
        blocks.base.emplace(aligned, base);
    } catch (...) {
        release(base);
        throw;
    }
    return aligned;
}

// The block to free for `ptr`, handed out by allocate_aligned with `alignment`.
void* block_of(void* ptr, std::size_t alignment) noexcept {
    if (alignment <= MemoryResource::default_alignment) [[likely]]
        return ptr;
    OverAlignedBlocks& blocks = over_aligned_blocks();
    std::lock_guard lock(blocks.mutex);
    const auto it = blocks.base.find(ptr);
    if (it == blocks.base.end()) return ptr;  // not ours: a caller error; free what was given
    void* base = it->second;
    blocks.base.erase(it);
    return base;
}

}  // namespace

DeviceMemoryResource::DeviceMemoryResource(int device, const DeviceMemoryResourceOptions& options) {
    device_ = gpumath::detail::resolve_device(device, "DeviceMemoryResource").ordinal();
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device_;
    gpumath::detail::check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate",
                           [&] { return fmt::format("creating a memory pool on device {}", device_); });
    std::uint64_t threshold = options.release_threshold;
    const cudaError_t s = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
    if (s != cudaSuccess) {
        (void)cudaMemPoolDestroy(pool_);
        gpumath::detail::check(s, "cudaMemPoolSetAttribute", "setting the pool's release threshold");
    }
}

DeviceMemoryResource::~DeviceMemoryResource() {
    if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
}

const std::shared_ptr<DeviceMemoryResource>& DeviceMemoryResource::default_resource(int device) {
    // Never destroyed: workspaces and buffers freed at exit may still return memory to the pools.
    static auto& pools = *new gpumath::detail::DeviceRegistry<std::shared_ptr<DeviceMemoryResource>>();
    const int d = gpumath::detail::resolve_device(device, "DeviceMemoryResource::default_resource").ordinal();
    return pools.get(d, "DeviceMemoryResource::default_resource", [](int o) {
        return new std::shared_ptr<DeviceMemoryResource>(std::make_shared<DeviceMemoryResource>(o));
    });
}

void* DeviceMemoryResource::do_allocate(std::size_t bytes, StreamRef stream, std::size_t alignment) {
    return allocate_aligned(
        bytes, alignment,
        [&](std::size_t n) {
            void* p = nullptr;
            gpumath::detail::check(cudaMallocFromPoolAsync(&p, n, pool_, stream.handle()), "cudaMallocFromPoolAsync",
                                   [&] { return fmt::format("allocating {} bytes on device {}", n, device_); });
            return p;
        },
        [&](void* p) { (void)cudaFreeAsync(p, stream.handle()); });
}

void DeviceMemoryResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream,
                                         std::size_t alignment) noexcept {
    (void)cudaFreeAsync(block_of(ptr, alignment), stream.handle());
}

void DeviceMemoryResource::trim(std::size_t keep_bytes) {
    gpumath::detail::check(cudaMemPoolTrimTo(pool_, keep_bytes), "cudaMemPoolTrimTo");
}

std::uint64_t DeviceMemoryResource::reserved_bytes() const {
    std::uint64_t v = 0;
    gpumath::detail::check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &v),
                           "cudaMemPoolGetAttribute");
    return v;
}

std::uint64_t DeviceMemoryResource::used_bytes() const {
    std::uint64_t v = 0;
    gpumath::detail::check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &v),
                           "cudaMemPoolGetAttribute");
    return v;
}

const std::shared_ptr<PinnedMemoryResource>& PinnedMemoryResource::default_resource() {
    static const auto instance = std::make_shared<PinnedMemoryResource>();
    return instance;
}

void* PinnedMemoryResource::do_allocate(std::size_t bytes, StreamRef /*stream*/, std::size_t alignment) {
    return allocate_aligned(
        bytes, alignment,
        [](std::size_t n) {
            void* p = nullptr;
            gpumath::detail::check(cudaMallocHost(&p, n), "cudaMallocHost",
                                   [&] { return fmt::format("allocating {} bytes of pinned host memory", n); });
            return p;
        },
        [](void* p) { (void)cudaFreeHost(p); });
}

void PinnedMemoryResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream,
                                         std::size_t alignment) noexcept {
    // Work on `stream` may still read the memory; cudaFreeHost alone does not wait for it.
    (void)cudaStreamSynchronize(stream.handle());
    (void)cudaFreeHost(block_of(ptr, alignment));
}

const std::shared_ptr<ManagedMemoryResource>& ManagedMemoryResource::default_resource() {
    static const auto instance = std::make_shared<ManagedMemoryResource>();
    return instance;
}

void* ManagedMemoryResource::do_allocate(std::size_t bytes, StreamRef /*stream*/, std::size_t alignment) {
    return allocate_aligned(
        bytes, alignment,
        [](std::size_t n) {
            void* p = nullptr;
            gpumath::detail::check(cudaMallocManaged(&p, n, cudaMemAttachGlobal), "cudaMallocManaged",
                                   [&] { return fmt::format("allocating {} bytes of managed memory", n); });
            return p;
        },
        [](void* p) { (void)cudaFree(p); });
}

void ManagedMemoryResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream,
                                          std::size_t alignment) noexcept {
    (void)cudaStreamSynchronize(stream.handle());
    (void)cudaFree(block_of(ptr, alignment));
}

}  // namespace gpumath::core
namespace gpumath::detail {

void copy_async(void* dst, const void* src, std::size_t bytes, core::StreamRef stream) {
    gpumath::detail::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream.handle()), "cudaMemcpyAsync",
                           [&] { return fmt::format("copying {} bytes", bytes); });
}

void check_copy_sizes(std::size_t dst_bytes, std::size_t src_bytes, const char* api) {
    if (dst_bytes != src_bytes)
        gpumath::detail::throw_invalid(
            fmt::format("sizes differ: destination holds {} bytes, source {} bytes; copies move whole buffers",
                        dst_bytes, src_bytes),
            api);
}

void reject_blocking_copy_in_capture(core::StreamRef stream, const char* api) {
    reject_capture(stream, api,
                   "to_host copies into pageable memory and waits for the stream, which ends the capture with "
                   "an error; call it after cudaStreamEndCapture, or capture Buffer::copy_to into memory from "
                   "PinnedMemoryResource and read it once the graph has run");
}

}  // namespace gpumath::detail
namespace gpumath::core {

Buffer::Buffer(std::size_t bytes, StreamRef stream, std::shared_ptr<MemoryResource> resource, std::size_t alignment)
    : alignment_(alignment), stream_(stream), resource_(std::move(resource)) {
    MemoryResource::check_alignment(alignment);  // before the default pool needs a device
    if (!resource_) resource_ = DeviceMemoryResource::default_resource();
    data_ = resource_->allocate(bytes, stream, alignment);
    bytes_ = bytes;
}

void Buffer::check_multiple(std::size_t element, const char* api) const {
    if (bytes_ % element != 0)
        gpumath::detail::throw_invalid(
            fmt::format("T: the buffer holds {} bytes, not a multiple of sizeof(T) = {}", bytes_, element), api);
}

void Buffer::check_fits(std::int64_t bytes, const char* api) const {
    if (std::size_t(bytes) > bytes_)
        gpumath::detail::throw_invalid(
            fmt::format("shape: the view spans {} bytes, the buffer holds {}", bytes, bytes_), api);
}

}  // namespace gpumath::core
