// SPDX-License-Identifier: Apache-2.0
/// @file
/// The stateful Matmul plan and the stateless matmul() call, on cuBLASLt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath {

namespace detail {
class MatmulState;
}  // namespace detail

/// A planned matrix multiplication `D = epilog(alpha * A @ B + beta * C)`.
///
/// A is (..., M, K), B (..., K, N), C and D (..., M, N); every matrix needs one unit-stride
/// dimension among its last two (row- or column-major, transposed views included); leading batch
/// dimensions broadcast as in NumPy and must be expressible as one strided batch. The constructor
/// only validates (it runs on machines without a GPU); plan() asks cuBLASLt's heuristics and is
/// implicit on the first execute().
///
/// Execution is thread-safe: several threads may call execute() on one Matmul with different
/// streams. plan(), select_algorithm(), autotune() and load_tuning() change the plan and must not
/// run concurrently with anything else on the same object.
///
/// Throws InvalidArgument or NotSupported (naming the operand, the value given and what is
/// allowed) for bad problems, CudaError without a device, CublasError when cuBLASLt fails.
class Matmul {
public:
    /// A product of operands laid out like `a` and `b` (pointers are not needed yet).
    Matmul(const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options = {});
    /// The same with a C operand laid out like `c` (D then shares C's unit-stride dimension: see
    /// result_layout()).
    Matmul(const TensorLayout& a, const TensorLayout& b, const TensorLayout& c, const MatmulOptions& options = {});
    /// Moves the plan; the moved-from Matmul is empty: its methods throw InvalidArgument
    /// ("moved-from Matmul") and its noexcept accessors return 0, an empty layout or defaults.
    Matmul(Matmul&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from Matmul is empty, as above.
    Matmul& operator=(Matmul&&) noexcept;
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;
    ~Matmul();

    /// Asks cuBLASLt's heuristics for up to `preferences.max_algorithms` algorithms for the
    /// default operands (D as result_layout(); bias per column; aux and bias gradients
    /// allocated; 256-byte aligned pointers) and selects the first. Returns the candidates.
    /// Throws NotSupported when cuBLASLt has no algorithm for the problem. The returned candidates
    /// (like the references algorithms(), algorithm() and autotune() return) stay valid until the
    /// next plan() or autotune().
    const std::vector<AlgorithmInfo>& plan(const PlanPreferences& preferences = {});

    /// The candidate algorithms of the current plan, in heuristic order (or fastest first after
    /// autotune); empty before planning.
    [[nodiscard]] const std::vector<AlgorithmInfo>& algorithms() const;
    /// The selected algorithm. InvalidArgument before planning.
    [[nodiscard]] const AlgorithmInfo& algorithm() const;
    /// Selects candidate `index` of algorithms(). InvalidArgument when out of range.
    void select_algorithm(std::size_t index);

    /// Plans for these operands (as execute() would), adds the first candidate's kernel with each
    /// other split-K factor cuBLASLt accepts (the heuristic offers one factor per kernel), runs
    /// every candidate `iterations` times (median, with the L2 cache flushed before each run,
    /// candidates interleaved) and selects the fastest; the heuristic's first choice is kept unless another is more
    /// than 1% faster. Blocking: synchronizes `stream`. D (and aux / bias-gradient outputs) hold a valid result
    /// afterwards; a C aliasing D is restored between runs. Returns the candidates, fastest first.
    /// `iterations` is 1 to 10000 (InvalidArgument otherwise: each run of each candidate takes two events).
    const std::vector<AlgorithmInfo>& autotune(const TensorView& a, const TensorView& b, const TensorView& d,
                                               const MatmulArgs& args = {},
                                               core::StreamRef stream = core::current_stream(), int iterations = 10);

    /// Writes the selected algorithm of the current plan to `path` (a text file gpumath owns;
    /// other problems' entries are kept), keyed by GPU name, compute capability, cuBLASLt version
    /// and problem. Throws InvalidArgument before planning or when the file would grow past 64 MiB
    /// (load_tuning's limit), Error when the file cannot be written.
    void save_tuning(const std::string& path) const;
    /// Reads `path` and remembers the entries saved for this problem on this GPU with this
    /// cuBLASLt version; entries for another GPU or library version are ignored, and a remembered
    /// algorithm that cuBLASLt rejects for the problem is dropped (logged). The current plan and
    /// later plans of matching operands use them. Returns true when an entry matched the current
    /// plan (or, before planning, when any entry matched this problem). A missing file returns false;
    /// lines that are not entries as save_tuning writes them (a key or algorithm with a sign, space
    /// or "0x", too few fields) are skipped; of several lines for one problem and layout the last
    /// counts. InvalidArgument when `path` is not a regular file or is larger than 64 MiB.
    bool load_tuning(const std::string& path);

    /// Enqueues the product on `stream`. Operands must match the planned layouts: a, b (and c)
    /// exactly as constructed; D, bias, aux and bias-gradient layouts or pointers that differ from
    /// the current plan (a pointer less aligned than planned included) get a plan of their own
    /// (cached in this object), never one that needs more. Returns the outputs gpumath allocated.
    MatmulOutputs execute(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args = {},
                          core::StreamRef stream = core::current_stream());
    /// The same, allocating D (result_layout(), row-major) from the memory resource. InvalidArgument
    /// when result_layout() is column-major (a column-major c): pass a d view then.
    MatmulResult execute(const TensorView& a, const TensorView& b, const MatmulArgs& args = {},
                         core::StreamRef stream = core::current_stream());

    /// M, the rows of A and D (0 when moved from).
    [[nodiscard]] std::int64_t m() const noexcept;
    /// N, the columns of B and D (0 when moved from).
    [[nodiscard]] std::int64_t n() const noexcept;
    /// K, the columns of A and rows of B that the product sums over (0 when moved from).
    [[nodiscard]] std::int64_t k() const noexcept;
    /// Number of products in the batch (1 when unbatched, 0 when moved from).
    [[nodiscard]] std::int64_t batch_count() const noexcept;
    /// The layout of D this object plans for by default, and the D that execute(a, b, args)
    /// allocates: dense (..., M, N) of the result type, row-major, or column-major when c can only be
    /// read with a column-major D (cuBLASLt reads C and writes D along one unit-stride dimension).
    [[nodiscard]] const TensorLayout& result_layout() const noexcept;
    /// The compute type in use (`automatic` resolved).
    [[nodiscard]] ComputeType compute_type() const noexcept;
    /// The options given at construction.
    [[nodiscard]] const MatmulOptions& options() const noexcept;

private:
    detail::MatmulState& state(const char* api) const;
    std::unique_ptr<detail::MatmulState> state_;
};

/// `D = epilog(alpha * A @ B + beta * C)` into `d`, enqueued on `stream`, in one call: the plan
/// comes from a thread-safe LRU cache (MatmulPlanCache) keyed by device, layouts, dtypes, pointer
/// alignment classes, options and epilog. Returns the outputs gpumath allocated. Throws as Matmul.
MatmulOutputs matmul(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args = {},
                     const MatmulOptions& options = {}, core::StreamRef stream = core::current_stream());

/// The same, allocating D (row-major (..., M, N), of `options.result_type` or the default).
/// InvalidArgument for a c that only a column-major D fits: pass a d view then.
MatmulResult matmul(const TensorView& a, const TensorView& b, const MatmulArgs& args = {},
                    const MatmulOptions& options = {}, core::StreamRef stream = core::current_stream());

}  // namespace gpumath
