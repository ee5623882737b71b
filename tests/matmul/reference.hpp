// SPDX-License-Identifier: Apache-2.0
// GPU matmul tests: host tensors of exactly representable values, device copies with any strides,
// poisoned outputs, and a reference in double precision with cuBLASLt's epilog definitions.
#pragma once

#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

namespace gpumath::test::mm {

using cd = std::complex<double>;

/// Logical values of a tensor in row-major order (complex so that every dtype fits), each
/// exactly representable in `dtype`.
struct Host {
    DataType dtype = DataType::f32;
    std::vector<std::int64_t> shape;
    std::vector<cd> v;

    Host() = default;
    Host(DataType t, std::vector<std::int64_t> s);
    [[nodiscard]] std::int64_t size() const { return std::int64_t(v.size()); }
    [[nodiscard]] int rank() const { return int(shape.size()); }
    /// Element at a full index.
    [[nodiscard]] cd& at(const std::vector<std::int64_t>& idx);
    [[nodiscard]] const cd& at(const std::vector<std::int64_t>& idx) const;
    /// Element at an index of a (possibly larger) broadcast shape, NumPy rules (right-aligned,
    /// extent-1 dimensions repeat).
    [[nodiscard]] const cd& broadcast_at(const std::vector<std::int64_t>& idx) const;
};

/// `x` after a round trip through `t` (the value the GPU sees or stores).
[[nodiscard]] cd round_to(DataType t, cd x);

/// Random values in [lo, hi) rounded to the dtype, never zero (integers in [-8, 8] for i8/i32).
[[nodiscard]] Host random_host(DataType t, std::vector<std::int64_t> shape, std::mt19937_64& rng, double lo = -1.0,
                               double hi = 1.0);

/// A device copy: the buffer and a view with the requested strides, starting `offset_bytes`
/// past a 256-byte boundary. Bytes outside the view are 0xFF.
struct Dev {
    core::Buffer buffer;
    TensorView view;
};
[[nodiscard]] Dev upload(const Host& h, std::vector<std::int64_t> strides = {}, std::size_t offset_bytes = 0,
                         core::StreamRef stream = {});
/// A device tensor whose every byte is 0xFF (NaN for floating point, -1 for integers).
[[nodiscard]] Dev poisoned(DataType t, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides = {},
                           std::size_t offset_bytes = 0, core::StreamRef stream = {});
/// The logical values of a device view. Blocking (synchronizes `stream`).
[[nodiscard]] Host download(const TensorView& v, core::StreamRef stream = {});
/// Raw bytes of a device view's span. Blocking.
[[nodiscard]] std::vector<unsigned char> download_bytes(const TensorView& v, core::StreamRef stream = {});

/// cuBLASLt's GELU (tanh approximation) and its derivative.
[[nodiscard]] double gelu(double x);
[[nodiscard]] double gelu_grad(double x);
/// Exact GELU (erf), only to tell the two apart in messages.
[[nodiscard]] double gelu_erf(double x);

struct RefArgs {
    cd alpha = 1.0;
    cd beta = 0.0;
    const Host* c = nullptr;
    const Host* bias = nullptr;  // any NumPy-broadcastable shape
    Epilog epilog = Epilog::none;
    /// d* epilogs: the forward's pre-activation, D's logical shape.
    const Host* grad_pre = nullptr;
    /// d*_bgrad: sum over D's rows (one value per column) when true, over columns when false.
    bool bias_grad_per_column = true;
    /// FP8: product of the a and b scales, the c scale and the d scale.
    double scale_ab = 1.0, scale_c = 1.0, scale_d = 1.0;
};

struct RefResult {
    Host d;           // D in double (not rounded to D's dtype)
    Host pre;         // epilog input (alpha AB + beta C + bias), D's shape
    Host bias_grad;   // (..., L) with D's batch shape, when the epilog computes one
    double amax = 0;  // max |D| before the d scale
};

/// The reference of `epilog(alpha * a @ b + beta * c)` with D of dtype `d_type`.
[[nodiscard]] RefResult reference(const Host& a, const Host& b, DataType d_type, const RefArgs& args);

/// Random A (M, K) and B (K, N) of one dtype, their device copies, and their plain product (D of
/// that dtype): the setup of tests that need nothing more.
struct Product {
    Host a, b;
    Dev da, db;
    RefResult want;
};
[[nodiscard]] Product random_product(DataType t, std::int64_t m, std::int64_t n, std::int64_t k, std::mt19937_64& rng);

/// Norm-wise relative error ||got - want|| / ||want||, NaN if `got` holds a NaN.
[[nodiscard]] double relative_error(const Host& got, const Host& want);

/// A short description of the worst elements, for failure messages.
[[nodiscard]] std::string worst_elements(const Host& got, const Host& want, int count = 5);

/// The tolerance for results of dtype `d` (relative, norm-wise) with inputs of dtype `in`.
[[nodiscard]] double tolerance(DataType in, DataType d, ComputeType compute = ComputeType::automatic);

/// Row-major strides of `shape`, or column-major in the last two dimensions when `col_major`.
[[nodiscard]] std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& shape, bool col_major,
                                                    std::int64_t pad = 0);

/// True when the current device has compute capability >= major.minor.
[[nodiscard]] bool device_at_least(int major, int minor);

}  // namespace gpumath::test::mm
