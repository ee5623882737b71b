// SPDX-License-Identifier: Apache-2.0
// Random hostile DLTensors for DLPack import: TensorView::from_dlpack, Tensor::from_dlpack of a
// DLManagedTensor and (with a DLPack 1.x header) of a DLManagedTensorVersioned. Null data of a
// non-empty tensor, null shapes, negative and huge ndim, null (compact), negative and overflowing
// strides, negative and overflowing extents, huge byte offsets, dtype codes, bits and lanes of every
// kind, unknown device types and ids, versions other than 1.x and read-only flags. Shapes and
// strides live in heap arrays of exactly ndim values, so that reading past them is an ASan report.
// Accepted outcomes as in validation_fuzz_test.cpp; besides, an accepted tensor must be viewed as
// described (data + byte_offset, its shape and strides), and a managed tensor's deleter must run
// exactly once: before from_dlpack throws, or when the last Tensor owning it goes.
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <gpumath/dlpack.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"
#include "fuzz/fuzz_util.hpp"

#if defined(GPUMATH_HAS_DLPACK)

using namespace gpumath;
using namespace gpumath::test::fuzz;

namespace {

/// A random DLTensor and the heap arrays its shape and strides point into.
struct RandomDLTensor {
    std::unique_ptr<std::int64_t[]> shape;
    std::unique_ptr<std::int64_t[]> strides;
    DLTensor tensor{};
};

void fill(Fuzzer& fz, RandomDLTensor& r) {
    DLTensor& t = r.tensor;
    // Device: CUDA memory of three kinds mostly; host, other and unknown types, negative ids.
    static constexpr std::array<int, 4> devices{kDLCUDAManaged, kDLCUDAHost, kDLCUDA, kDLCUDAManaged};
    static constexpr std::array<int, 8> odd_devices{kDLCPU, kDLOpenCL, kDLVulkan, kDLROCM, 0, -1, 1000, INT_MIN};
    // Written as a C producer writes it: DLDeviceType of DLPack 0.6 cannot hold 1000 or -1 in C++.
    const std::int32_t type = fz.hostile(20) ? fz.pick(odd_devices) : fz.pick(devices);
    std::memcpy(&t.device.device_type, &type, sizeof type);
    static constexpr std::array<int, 4> odd_ids{-1, INT_MIN, INT_MAX, 1};
    t.device.device_id = fz.hostile(10) ? fz.pick(odd_ids) : 0;
    // dtype: the ten gpumath types, then bool, unsigned, other widths, lanes and unknown codes.
    static constexpr std::array<DLDataType, 14> dtypes{{{kDLFloat, 16, 1},
                                                        {kDLBfloat, 16, 1},
                                                        {kDLFloat, 32, 1},
                                                        {kDLFloat, 64, 1},
                                                        {kDLComplex, 64, 1},
                                                        {kDLComplex, 128, 1},
                                                        {10, 8, 1},
                                                        {12, 8, 1},
                                                        {kDLInt, 8, 1},
                                                        {kDLInt, 32, 1},
                                                        {kDLFloat, 32, 1},
                                                        {kDLFloat, 16, 1},
                                                        {kDLBfloat, 16, 1},
                                                        {kDLInt, 32, 1}}};
    t.dtype = fz.pick(dtypes);
    if (fz.hostile(25)) {
        switch (fz.below(5)) {
            case 0:
                t.dtype = {6, 8, 1};  // kDLBool
                break;
            case 1:
                t.dtype.lanes = static_cast<std::uint16_t>(fz.chance(50) ? 0 : 2 + fz.below(65534));
                break;
            case 2:
                t.dtype.bits = static_cast<std::uint8_t>(fz.chance(50) ? 0 : fz.below(256));
                break;
            case 3:
                t.dtype.code = static_cast<std::uint8_t>(fz.below(256));
                break;
            default:
                t.dtype = {kDLUInt, static_cast<std::uint8_t>(8 << fz.below(4)), 1};
        }
    }
    // ndim 0 to 4, or negative, past max_rank or huge.
    static constexpr std::array<int, 6> odd_ndim{-1, INT_MIN, 9, 33, INT_MAX, -7};
    t.ndim = fz.hostile(10) ? fz.pick(odd_ndim) : fz.below(5);
    // Shape and strides: exactly ndim values each (at most 16 for a huge ndim, which must be
    // refused before they are read).
    const int n = std::clamp(t.ndim, 0, 16);
    r.shape = std::make_unique<std::int64_t[]>(std::size_t(n));
    std::vector<std::int64_t> big = fz.big_shape(n, 40 + fz.below(24));
    static constexpr std::array<std::int64_t, 8> odd_extents{-1,
                                                             std::numeric_limits<std::int64_t>::min(),
                                                             std::numeric_limits<std::int64_t>::max(),
                                                             std::int64_t(1) << 62,
                                                             0,
                                                             -2,
                                                             std::int64_t(1) << 32,
                                                             3};
    const bool use_big = fz.hostile(20);
    for (int i = 0; i < n; ++i) {
        static constexpr std::array<std::int64_t, 8> extents{1, 2, 3, 4, 7, 16, 0, 5};
        r.shape[std::size_t(i)] = use_big         ? big[std::size_t(i)]
                                  : fz.hostile(5) ? fz.pick(odd_extents)
                                                  : fz.pick(extents);
    }
    t.shape = (n == 0 && fz.chance(50)) || fz.hostile(3) ? nullptr : r.shape.get();  // null: legal for ndim 0
    // Strides: NULL (compact) often; row-major, column-major, broadcast, negative or overflowing.
    if (n > 0 && !fz.chance(40)) {
        r.strides = std::make_unique<std::int64_t[]>(std::size_t(n));
        const int kind = fz.hostile_call() ? fz.below(5) : fz.below(3);
        std::int64_t s = 1;
        for (int j = 0; j < n; ++j) {
            const int i = kind == 1 ? j : n - 1 - j;  // kind 1: column-major
            std::int64_t& stride = r.strides[std::size_t(i)];
            if (kind == 2) stride = fz.chance(30) ? 0 : s;  // broadcast dimensions
            else if (kind == 3) stride = fz.chance(30) ? -1 - fz.below(4) : s;
            else if (kind == 4) stride = std::int64_t(1) << (30 + fz.below(33));
            else stride = s;
            std::int64_t next = 0;
            if (__builtin_mul_overflow(s, std::max<std::int64_t>(r.shape[std::size_t(i)], 1), &next)) next = s;
            s = next;
        }
        t.strides = r.strides.get();
    }
    // Data: a fake aligned address, null, misaligned, or near the top of the address space.
    static constexpr std::array<std::uintptr_t, 5> addresses{0x7f0000100000, 0x7f0000100000, 0x7f0000200000,
                                                             UINTPTR_MAX - 255, 0x7f0000100003};
    t.data = reinterpret_cast<void*>(fz.hostile(10)    ? std::uintptr_t{0}
                                     : !fz.hostile(20) ? addresses[0]
                                                       : fz.pick(addresses));
    static constexpr std::array<std::uint64_t, 6> offsets{UINT64_MAX, UINT64_MAX - 7, std::uint64_t(1) << 63, 1,
                                                          2,          0x100000000000};
    t.byte_offset = fz.hostile(20) ? fz.pick(offsets) : fz.chance(20) ? std::uint64_t(fz.below(8)) * 16 : 0;
}

/// The checks of an accepted tensor: data + byte_offset, ndim, shape and strides (row-major when
/// NULL) as given, dtype as to_data_type maps it.
void expect_view(const TensorView& v, const DLTensor& t, int iteration) {
    ASSERT_EQ(v.rank(), t.ndim) << "dlpack #" << iteration;
    const std::size_t rank = std::size_t(t.ndim);
    if (t.data != nullptr) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()),
                  reinterpret_cast<std::uintptr_t>(t.data) + std::uintptr_t(t.byte_offset))
            << "dlpack #" << iteration;
    }
    EXPECT_EQ(v.dtype(), to_data_type(t.dtype)) << "dlpack #" << iteration;
    std::vector<std::int64_t> row_major(rank);
    if (rank > 0) TensorLayout::row_major_strides(std::span<const std::int64_t>(t.shape, rank), row_major);
    for (std::size_t i = 0; i < rank; ++i) {
        EXPECT_EQ(v.shape(int(i)), t.shape[i]) << "dlpack #" << iteration << " dimension " << i;
        EXPECT_EQ(v.stride(int(i)), t.strides != nullptr ? t.strides[i] : row_major[i])
            << "dlpack #" << iteration << " dimension " << i;
    }
}

/// A producer's managed tensor whose deleter counts its calls (or has no deleter).
template <class Managed>
struct Producer {
    Managed managed{};
    int deletes = 0;

    explicit Producer(const DLTensor& t, bool with_deleter) {
        managed.dl_tensor = t;
        managed.manager_ctx = this;
        if (with_deleter) managed.deleter = [](Managed* self) { ++static_cast<Producer*>(self->manager_ctx)->deletes; };
    }
};

/// Adopts `p`'s tensor, checks the deleter count while and after the Tensor lives (moved, and
/// sometimes exported again and re-adopted), and classifies the outcome.
template <class Managed>
void adopt(Fuzzer& fz, Producer<Managed>& p, bool with_deleter, int iteration, Tally& tally, const char* target) {
    const int expected = with_deleter ? 1 : 0;
    bool threw = true;
    classify(target, iteration, tally, [&] {
        Tensor t = Tensor::from_dlpack(&p.managed);
        threw = false;
        EXPECT_EQ(p.deletes, 0) << target << " #" << iteration << ": the deleter ran while the Tensor owns the memory";
        expect_view(t.view(), p.managed.dl_tensor, iteration);
        Tensor moved = std::move(t);
        if (fz.chance(30)) {
            // Export and adopt the export: the producer's deleter still runs once, at the end.
            DLManagedTensor* exported = std::move(moved).to_dlpack();
            EXPECT_EQ(p.deletes, 0) << target << " #" << iteration;
            Tensor again = Tensor::from_dlpack(exported);
            EXPECT_EQ(p.deletes, 0) << target << " #" << iteration;
        }
    });
    EXPECT_EQ(p.deletes, expected) << target << " #" << iteration << (threw ? " (validation threw)" : " (adopted)")
                                   << ": the deleter must run exactly once";
}

}  // namespace

TEST(ValidationFuzz, DLPack) {
    const std::uint64_t seed = fuzz_seed() + 8;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        RandomDLTensor r;
        fill(fz, r);
        switch (fz.below(3)) {
            case 0:
                classify("TensorView::from_dlpack", i, t, [&] {
                    const TensorView v = TensorView::from_dlpack(r.tensor);
                    expect_view(v, r.tensor, i);
                });
                break;
            case 1: {
                if (fz.hostile(5)) {
                    classify("Tensor::from_dlpack", i, t,
                             [&] { (void)Tensor::from_dlpack(static_cast<DLManagedTensor*>(nullptr)); });
                    break;
                }
                const bool with_deleter = !fz.hostile(10);
                Producer<DLManagedTensor> p(r.tensor, with_deleter);
                adopt(fz, p, with_deleter, i, t, "Tensor::from_dlpack");
                break;
            }
            default: {
#if defined(GPUMATH_HAS_DLPACK_VERSIONED)
                if (fz.hostile(5)) {
                    classify("Tensor::from_dlpack (versioned)", i, t,
                             [&] { (void)Tensor::from_dlpack(static_cast<DLManagedTensorVersioned*>(nullptr)); });
                    break;
                }
                const bool with_deleter = !fz.hostile(10);
                Producer<DLManagedTensorVersioned> p(r.tensor, with_deleter);
                static constexpr std::array<std::uint32_t, 5> majors{0, 2, 255, UINT32_MAX, 1};
                p.managed.version.major = fz.hostile(20) ? fz.pick(majors) : DLPACK_MAJOR_VERSION;
                p.managed.version.minor = std::uint32_t(fz.below(8));
                if (p.managed.version.major != DLPACK_MAJOR_VERSION) {
                    // Another major version's tensor may be laid out otherwise: gpumath must not read it.
                    p.managed.dl_tensor.ndim = INT_MAX;
                    p.managed.dl_tensor.shape = reinterpret_cast<std::int64_t*>(std::uintptr_t{8});
                    p.managed.dl_tensor.strides = reinterpret_cast<std::int64_t*>(std::uintptr_t{8});
                }
                // Flags: read-only (bit 0, refused), is-copied and others (accepted).
                p.managed.flags = fz.hostile(30) ? std::uint64_t(fz.below(16)) << (fz.chance(80) ? 0 : 60) : 0;
                adopt(fz, p, with_deleter, i, t, "Tensor::from_dlpack (versioned)");
#else
                classify("TensorView::from_dlpack", i, t, [&] { (void)TensorView::from_dlpack(r.tensor); });
#endif
            }
        }
    }
    report("DLPack import", seed, n, t);
    EXPECT_GT(t.passed, n / 100) << "too few tensors passed validation: the generator reaches no deep checks";
    EXPECT_GT(t.rejected, n / 10);
}

#else

TEST(ValidationFuzz, DLPack) { GTEST_SKIP() << "gpumath was built without DLPack (no dlpack/dlpack.h)"; }

#endif  // GPUMATH_HAS_DLPACK
