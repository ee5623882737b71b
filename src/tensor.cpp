// SPDX-License-Identifier: Apache-2.0
// Tensor: owning device tensors (a Buffer plus a dense layout, or adopted memory: src/dlpack.cpp).
#include <gpumath/tensor.hpp>

#include <cstdint>

#include <fmt/format.h>
#include <unistd.h>

#include "detail/status.hpp"

namespace gpumath {

Tensor Tensor::empty(const TensorLayout& layout, core::StreamRef stream, std::shared_ptr<core::MemoryResource> resource,
                     std::size_t alignment) {
    TensorLayout dense(layout.dtype(), layout.shape());
    Tensor t;
    t.buffer_ =
        core::Buffer(std::size_t(dense.size()) * size_of(dense.dtype()), stream, std::move(resource), alignment);
    t.view_ = TensorView(t.buffer_.data(), dense);
    return t;
}

void Tensor::check_count(const TensorLayout& layout, std::size_t count) {
    if (std::int64_t(count) != layout.size())
        detail::throw_invalid(fmt::format("data: {} host elements given for shape {}, which holds {}", count,
                                          to_string(layout.shape()), layout.size()),
                              "Tensor::from_host");
}

void Tensor::check_type(DataType requested) const {
    if (requested != dtype())
        detail::throw_invalid(fmt::format("T: the tensor holds {} elements, to_host was asked for {}",
                                          to_string(dtype()), to_string(requested)),
                              "Tensor::to_host");
}

void Tensor::check_contiguous() const {
    if (!view_.is_contiguous())
        detail::throw_invalid(fmt::format("layout: {} is not row-major; to_host copies row-major tensors "
                                          "(copy it into one first, or read its memory through data())",
                                          to_string(layout())),
                              "Tensor::to_host");
}

void Tensor::check_host_memory(std::size_t element_size) const {
    // An adopted tensor may claim any size its strides can address: a host vector that large would
    // fail to allocate (or be refused by the allocator) after the checks, so it is refused here.
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return;
    const std::uint64_t memory = std::uint64_t(pages) * std::uint64_t(page_size);
    const auto count = std::uint64_t(size());
    if (count > memory / element_size)
        detail::throw_not_supported(fmt::format("size: {} elements of {} bytes are more than this host's memory ({} "
                                                "bytes) holds; copy the tensor to the host in parts",
                                                count, element_size, memory),
                                    "Tensor::to_host");
}

}  // namespace gpumath
