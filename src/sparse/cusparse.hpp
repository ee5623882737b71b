// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: cuSPARSE handles (a per-device pool, one handle per concurrent caller),
// status checks, and cuSPARSE's descriptors of gpumath's sparse views and dense tensors.
#pragma once

#include <string_view>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>

namespace gpumath::detail {

/// Throws CusparseError naming cuSPARSE's status (its own name for it), `api` and `context`.
[[noreturn]] void throw_cusparse(int status, const char* api, std::string_view context);

/// Throws CusparseError unless `status` is CUSPARSE_STATUS_SUCCESS.
inline void check_cusparse(cusparseStatus_t status, const char* api, std::string_view context) {
    if (status != CUSPARSE_STATUS_SUCCESS) [[unlikely]]
        throw_cusparse(int(status), api, context);
}

/// cuSPARSE's index type of i32 or i64.
[[nodiscard]] cusparseIndexType_t index_type_of(DataType t) noexcept;

/// A cuSPARSE handle of `device` set to `stream`, taken from the device's pool for the lease and
/// given back afterwards (made on demand in relaxed capture mode, never destroyed). The device must
/// be current.
class SparseHandle {
public:
    SparseHandle(int device, cudaStream_t stream);
    ~SparseHandle();
    SparseHandle(const SparseHandle&) = delete;
    SparseHandle& operator=(const SparseHandle&) = delete;
    SparseHandle(SparseHandle&&) = delete;
    SparseHandle& operator=(SparseHandle&&) = delete;

    [[nodiscard]] cusparseHandle_t get() const noexcept { return handle_; }

private:
    int device_;
    cusparseHandle_t handle_ = nullptr;
    cudaStream_t stream_ = nullptr;  // the stream set on the handle
};

/// cuSPARSE's descriptor of a sparse view (CSR, CSC, COO or BSR), destroyed with it. Made on the
/// host only: no GPU work. A batch of value arrays over one pattern (CSR or COO) is a strided batch,
/// and cuSPARSE strides column indices (COO: row and column indices) by the values' stride: such a
/// view needs `batch_indices` (and for COO `batch_rows`), the pattern's index arrays repeated once
/// per matrix, back to back, which the descriptor reads instead of the view's own.
class SpMatDescriptor {
public:
    explicit SpMatDescriptor(const sparse::MatrixView& m, const void* batch_indices = nullptr,
                             const void* batch_rows = nullptr);
    ~SpMatDescriptor();
    SpMatDescriptor(const SpMatDescriptor&) = delete;
    SpMatDescriptor& operator=(const SpMatDescriptor&) = delete;
    SpMatDescriptor(SpMatDescriptor&&) = delete;
    SpMatDescriptor& operator=(SpMatDescriptor&&) = delete;

    [[nodiscard]] cusparseSpMatDescr_t get() const noexcept { return descr_; }

private:
    cusparseSpMatDescr_t descr_ = nullptr;
};

/// cuSPARSE's descriptor of a dense vector: a contiguous 1-D tensor (or unit-stride last dimension).
class DnVecDescriptor {
public:
    explicit DnVecDescriptor(const TensorView& v);
    ~DnVecDescriptor();
    DnVecDescriptor(const DnVecDescriptor&) = delete;
    DnVecDescriptor& operator=(const DnVecDescriptor&) = delete;
    DnVecDescriptor(DnVecDescriptor&&) = delete;
    DnVecDescriptor& operator=(DnVecDescriptor&&) = delete;

    [[nodiscard]] cusparseDnVecDescr_t get() const noexcept { return descr_; }
    /// Points the descriptor at `data`.
    void set_pointer(void* data) const;

private:
    cusparseDnVecDescr_t descr_ = nullptr;
};

/// cuSPARSE's descriptor of a dense matrix `(rows, cols)` or a strided batch `(batch, rows, cols)`:
/// row-major when its last dimension has unit stride, column-major when the one before has.
/// The caller has checked that one of the two holds.
class DnMatDescriptor {
public:
    explicit DnMatDescriptor(const TensorView& m);
    ~DnMatDescriptor();
    DnMatDescriptor(const DnMatDescriptor&) = delete;
    DnMatDescriptor& operator=(const DnMatDescriptor&) = delete;
    DnMatDescriptor(DnMatDescriptor&&) = delete;
    DnMatDescriptor& operator=(DnMatDescriptor&&) = delete;

    [[nodiscard]] cusparseDnMatDescr_t get() const noexcept { return descr_; }
    /// Points the descriptor at `data`.
    void set_pointer(void* data) const;

private:
    cusparseDnMatDescr_t descr_ = nullptr;
};

}  // namespace gpumath::detail
