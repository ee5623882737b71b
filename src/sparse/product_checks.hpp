// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: the host checks and small pieces that SpGEMM, SDDMM and the triangular
// solves share: operand rules (format, dtype, batch), dense operand layouts, overlap, the
// operation's cuSPARSE enumerator, scalars in the compute type, and the plan's device. In a
// namespace of their own: linalg has helpers of the same names in gpumath::detail.
#pragma once

#include <complex>
#include <cstdint>
#include <initializer_list>

#include <cusparse.h>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/operation.hpp>

namespace gpumath::detail::products {

/// InvalidArgument unless `v` is f32, f64, c32 or c64 ("<name>: dtype ...; <api> takes ..."):
/// the value types the products and solves run in one precision.
void check_product_dtype(DataType t, const char* name, const char* api);

/// InvalidArgument for an empty view, a format outside `formats` (naming sparse::to_csr), a batch
/// of matrices (NotSupported), or a value dtype check_product_dtype refuses.
void check_sparse_operand(const sparse::MatrixView& m, const char* name, std::initializer_list<sparse::Format> formats,
                          const char* api);

/// InvalidArgument unless `op` is one of Operation's enumerators.
void check_operation(sparse::Operation op, const char* field, const char* api);

/// SDDMM's operand rules (the plan's and the stateless call's): op_a and op_b none or transpose,
/// C a CSR matrix, A and B dense of C's value dtype with op(A)·op(B) of C's shape and an inner
/// extent of at least 1 where C stores entries, neither overlapping C.
void check_sddmm(const TensorView& a, const TensorView& b, const sparse::MatrixView& c, sparse::Operation op_a,
                 sparse::Operation op_b, const char* api);

/// A dense operand's storage as cuSPARSE reads it.
struct DenseStorage {
    std::int64_t rows = 0, cols = 0;
    bool row_major = true;
};

/// Checks a dense matrix operand `(rows, cols)` of `dtype`: rank 2, unit stride along its rows
/// (row-major) or its columns (column-major) with the other stride at least the extent, aligned to
/// its element size. InvalidArgument naming `name` otherwise.
DenseStorage check_dense_matrix(const TensorView& m, DataType dtype, const char* name, const char* api);
/// The same for a layout (no address, so no alignment check).
DenseStorage check_dense_matrix(const TensorLayout& m, DataType dtype, const char* name, const char* api);

/// Checks a dense vector operand of `length` entries of `dtype`: 1-D, unit stride, aligned.
void check_dense_vector(const TensorView& v, std::int64_t length, DataType dtype, const char* name, const char* api);
/// The same for a layout (no address, so no alignment check).
void check_dense_vector(const TensorLayout& v, std::int64_t length, DataType dtype, const char* name, const char* api);

/// True when the byte ranges of `a` and `b` overlap (empty ranges never do).
[[nodiscard]] bool overlaps(const TensorView& a, const TensorView& b) noexcept;

/// InvalidArgument when `out` overlaps `in`: "<out> and <in> overlap ...".
void check_apart(const TensorView& out, const char* out_name, const TensorView& in, const char* in_name,
                 const char* api);

/// InvalidArgument when `out` overlaps any array of the sparse matrix `m`.
void check_apart(const TensorView& out, const char* out_name, const sparse::MatrixView& m, const char* m_name,
                 const char* api);

/// cuSPARSE's enumerator of `op`.
[[nodiscard]] cusparseOperation_t cusparse_operation(sparse::Operation op) noexcept;

/// A host scalar in a compute type (f32, f64, c32 or c64), for cuSPARSE's host pointer mode.
class Scalar {
public:
    /// `value` in `dtype`; InvalidArgument naming `name` when `dtype` is real and `value` has an
    /// imaginary part.
    Scalar(std::complex<double> value, DataType dtype, const char* name, const char* api);
    /// The value's address, as cuSPARSE's `const void*` scalar arguments take it.
    [[nodiscard]] const void* get() const noexcept { return &storage_; }

private:
    union {
        float f;
        double d;
        std::complex<float> c;
        std::complex<double> z;
    } storage_{};
};

/// At least `bytes` (and never 0) of device memory from `resource` (null: the current device's pool) that work on any
/// stream may use: allocated in order on the legacy default stream, which is then synchronized, and
/// freed on it. For the buffers a plan keeps, made while planning (which blocks anyway), so that
/// they never depend on a caller's stream staying alive.
[[nodiscard]] core::Buffer plan_buffer(std::size_t bytes, const std::shared_ptr<core::MemoryResource>& resource);

/// Synchronizes the legacy default stream (after allocating on it while planning).
void sync_default_stream();

/// InvalidArgument naming `api` unless the current device is `planned`, the plan's.
void check_plan_device(int planned, const char* api);

/// InvalidArgument when `stream` captures a CUDA graph and the plan is not planned yet: planning
/// allocates and runs cuSPARSE's analysis, which a capture cannot hold.
void reject_planning_in_capture(core::StreamRef stream, const char* api);

}  // namespace gpumath::detail::products
