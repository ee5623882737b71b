// SPDX-License-Identifier: Apache-2.0
// On a GPU: sparse::check finds each kind of bad content at its exact first position, for CSR,
// CSC, COO and BSR with i32 and i64 indices, and passes valid matrices (empty rows, one dense row).
#include <gpumath/core/graph.hpp>
#include <gpumath/sparse.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "sparse_test_util.hpp"

namespace gpumath::sparse {
namespace {

using namespace test_util;

// 6 × 8: row 0 cols {1, 3}; row 1 empty; row 2 {0, 2, 5, 6}; row 3 {4}; row 4 dense; row 5 {2}.
// CSR offsets 0 2 2 6 7 15 16.
Matrix sample(Format f, DataType index, core::StreamRef s, std::int64_t block = 1) {
    std::vector<std::int64_t> r, c;
    const std::vector<std::vector<std::int64_t>> pattern{{1, 3}, {}, {0, 2, 5, 6}, {4}, {0, 1, 2, 3, 4, 5, 6, 7}, {2}};
    for (std::size_t i = 0; i < pattern.size(); ++i)
        for (const std::int64_t j : pattern[i]) r.push_back(std::int64_t(i)), c.push_back(j);
    const std::vector<float> v(r.size(), 1.0F);
    Matrix m = from_triplets(6, 8, r, c, std::span<const float>(v), f, index, s, block);
    s.synchronize();
    return m;
}

/// check throws InvalidSparseData naming `array` and `position`.
void expect_bad(const MatrixView& m, const std::string& array, std::int64_t position, const std::string& words,
                bool sorted = true) {
    try {
        check(m, {.sorted = sorted}, {});
        ADD_FAILURE() << "check passed; expected " << array << "[" << position << "]";
    } catch (const InvalidSparseData& e) {
        EXPECT_EQ(e.array(), array) << e.what();
        EXPECT_EQ(e.position(), position) << e.what();
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("sparse::check"), std::string::npos) << e.what();
    }
}

class SparseCheckGpu : public ::testing::TestWithParam<DataType> {};
INSTANTIATE_TEST_SUITE_P(Index, SparseCheckGpu, ::testing::Values(DataType::i32, DataType::i64));

TEST_P(SparseCheckGpu, ValidMatricesPass) {
    GPUMATH_REQUIRE_GPU();
    for (const Format f : {Format::csr, Format::csc, Format::coo})
        EXPECT_NO_THROW(check(sample(f, GetParam(), {}), {}, {}));
    EXPECT_NO_THROW(check(sample(Format::bsr, GetParam(), {}, 2), {}, {}));
    const Matrix empty = from_triplets(5, 5, {}, {}, std::span<const float>(), Format::csr, GetParam(), {});
    EXPECT_NO_THROW(check(empty, {}, {}));
}

TEST_P(SparseCheckGpu, CsrOffsets) {
    GPUMATH_REQUIRE_GPU();
    {
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().offsets(), 0, 1);
        expect_bad(m, "row_offsets", 0, "row_offsets[0] is not 0");
    }
    {
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().offsets(), 3, 1);  // 0 2 2 1 7 ...: decreases at 3
        expect_bad(m, "row_offsets", 3, "never decrease");
    }
    {
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().offsets(), 6, 15);
        expect_bad(m, "row_offsets", 6, "not 16");
    }
    {
        // Two bad offsets: the first is reported; an index error after it waits its turn.
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().offsets(), 5, 3);
        poke(m.view().offsets(), 2, 1);
        poke(m.view().indices(), 0, 99);
        expect_bad(m, "row_offsets", 2, "never decrease");
    }
}

TEST_P(SparseCheckGpu, CsrIndices) {
    GPUMATH_REQUIRE_GPU();
    {
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().indices(), 9, 8);  // in the dense row
        poke(m.view().indices(), 12, -1);
        expect_bad(m, "col_indices", 9, "outside [0, 8)");
    }
    {
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().indices(), 5, 5);  // row 2 (entries 2..5) becomes 0 2 5 5: a duplicate at 5
        expect_bad(m, "col_indices", 5, "not greater than col_indices[4]");
        EXPECT_NO_THROW(check(m, {.sorted = false}, {}));
    }
    {
        const Matrix m = sample(Format::csr, GetParam(), {});
        poke(m.view().indices(), 2, 3);  // row 2: 3 2 5 6
        expect_bad(m, "col_indices", 3, "strictly increasing");
    }
    {
        // The first entry of a row may be smaller than the last of the row before (row 3 → row 4).
        const Matrix m = sample(Format::csr, GetParam(), {});
        EXPECT_NO_THROW(check(m, {}, {}));
    }
}

TEST_P(SparseCheckGpu, OtherFormats) {
    GPUMATH_REQUIRE_GPU();
    {
        const Matrix m = sample(Format::coo, GetParam(), {});
        poke(m.view().row_indices(), 4, 6);
        expect_bad(m, "row_indices", 4, "outside [0, 6)");
    }
    {
        const Matrix m = sample(Format::coo, GetParam(), {});
        poke(m.view().row_indices(), 7, 2);  // rows ... 3 then 2
        expect_bad(m, "row_indices", 7, "sorted by row");
        EXPECT_THROW(check(m, {.sorted = false}, {}), InvalidSparseData);  // row order is always checked
    }
    {
        const Matrix m = sample(Format::coo, GetParam(), {});
        poke(m.view().indices(), 8, 0);  // dense row: 0 0 2 ...
        expect_bad(m, "col_indices", 8, "not greater than");
    }
    {
        const Matrix m = sample(Format::csc, GetParam(), {});
        poke(m.view().indices(), 1, 7);
        expect_bad(m, "row_indices", 1, "outside [0, 6)");
    }
    {
        const Matrix m = sample(Format::csc, GetParam(), {});
        poke(m.view().offsets(), 8, 3);
        expect_bad(m, "col_offsets", 8, "never decrease");
    }
    {
        const Matrix m = sample(Format::bsr, GetParam(), {}, 2);  // 3 block rows × 4 block columns
        poke(m.view().indices(), 0, 4);
        expect_bad(m, "block_col_indices", 0, "outside [0, 4)");
    }
}

TEST(SparseCheckGpuCapture, RefusedWhileCapturing) {
    GPUMATH_REQUIRE_GPU();
    const core::Stream stream;
    const Matrix m = sample(Format::csr, DataType::i32, stream);
    test::expect_throw_with<InvalidArgument>(
        [&] { core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) { check(m, {}, s); }); },
        {"sparse::check", "captures"});
}

}  // namespace
}  // namespace gpumath::sparse
