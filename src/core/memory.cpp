// SPDX-License-Identifier: Apache-2.0
#include <gpumath/core/memory.hpp>

#include <array>
#include <mutex>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/detail/status.hpp>

namespace gpumath::core {

DeviceMemoryResource::DeviceMemoryResource(int device, const DeviceMemoryResourceOptions& options) {
    device_ = device < 0 ? gpumath::detail::current_device() : Device(device).ordinal();
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
    constexpr int capacity = 64;
    static std::array<std::once_flag, capacity> once;
    static std::array<std::shared_ptr<DeviceMemoryResource>, capacity> pools;
    const int d = device < 0 ? gpumath::detail::current_device() : Device(device).ordinal();
    if (d >= capacity)
        gpumath::detail::throw_not_supported(fmt::format("device ordinal {} exceeds {}", d, capacity),
                                             "DeviceMemoryResource::default_resource");
    std::call_once(once[std::size_t(d)], [&] { pools[std::size_t(d)] = std::make_shared<DeviceMemoryResource>(d); });
    return pools[std::size_t(d)];
}

void* DeviceMemoryResource::do_allocate(std::size_t bytes, StreamRef stream) {
    void* p = nullptr;
    gpumath::detail::check(cudaMallocFromPoolAsync(&p, bytes, pool_, stream.handle()), "cudaMallocFromPoolAsync",
                           [&] { return fmt::format("allocating {} bytes on device {}", bytes, device_); });
    return p;
}

void DeviceMemoryResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream) noexcept {
    (void)cudaFreeAsync(ptr, stream.handle());
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
    gpumath::detail::check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &v), "cudaMemPoolGetAttribute");
    return v;
}

const std::shared_ptr<PinnedMemoryResource>& PinnedMemoryResource::default_resource() {
    static const auto instance = std::make_shared<PinnedMemoryResource>();
    return instance;
}

void* PinnedMemoryResource::do_allocate(std::size_t bytes, StreamRef /*stream*/) {
    void* p = nullptr;
    gpumath::detail::check(cudaMallocHost(&p, bytes), "cudaMallocHost",
                           [&] { return fmt::format("allocating {} bytes of pinned host memory", bytes); });
    return p;
}

void PinnedMemoryResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream) noexcept {
    // Work on `stream` may still read the memory; cudaFreeHost alone does not wait for it.
    (void)cudaStreamSynchronize(stream.handle());
    (void)cudaFreeHost(ptr);
}

const std::shared_ptr<ManagedMemoryResource>& ManagedMemoryResource::default_resource() {
    static const auto instance = std::make_shared<ManagedMemoryResource>();
    return instance;
}

void* ManagedMemoryResource::do_allocate(std::size_t bytes, StreamRef /*stream*/) {
    void* p = nullptr;
    gpumath::detail::check(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal), "cudaMallocManaged",
                           [&] { return fmt::format("allocating {} bytes of managed memory", bytes); });
    return p;
}

void ManagedMemoryResource::do_deallocate(void* ptr, std::size_t /*bytes*/, StreamRef stream) noexcept {
    (void)cudaStreamSynchronize(stream.handle());
    (void)cudaFree(ptr);
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

}  // namespace gpumath::detail
namespace gpumath::core {

Buffer::Buffer(std::size_t bytes, StreamRef stream, std::shared_ptr<MemoryResource> resource)
    : stream_(stream), resource_(std::move(resource)) {
    if (!resource_) resource_ = DeviceMemoryResource::default_resource();
    data_ = resource_->allocate(bytes, stream);
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
