// SPDX-License-Identifier: Apache-2.0
// The Communicator's rules that need no GPU: NCCL's loading, unique ids, device lists, and every
// check a collective's arguments pass before anything is enqueued (with stand-in CUDA lookups:
// pointers and streams whose device is written in their address).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <gpumath/core/device.hpp>
#include <gpumath/dist/communicator.hpp>
#include <gpumath/error.hpp>

#include "common/test_util.hpp"
#include "dist/collective_checks.hpp"

using namespace gpumath;
using gpumath::dist::Communicator;
using gpumath::dist::ReduceOp;
using gpumath::dist::UniqueId;
using gpumath::test::expect_throw_with;
namespace d = gpumath::detail;

namespace {

// Stand-in memory: device memory of device `dev` at (dev + 1) << 40, managed memory with bit 39
// set as well, host memory below 1 << 40.
constexpr std::uintptr_t device_base = std::uintptr_t(1) << 40;
constexpr std::uintptr_t managed_bit = std::uintptr_t(1) << 39;

void* on_device(int dev, std::uintptr_t offset = 0) {
    return reinterpret_cast<void*>(device_base * std::uintptr_t(dev + 1) + offset);
}
void* managed(int dev) { return reinterpret_cast<void*>(device_base * std::uintptr_t(dev + 1) + managed_bit); }
void* host_memory() { return reinterpret_cast<void*>(std::uintptr_t(0x10000)); }

d::PointerPlace fake_pointer(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (a < device_base) return {-1, false};
    return {int(a / device_base) - 1, (a & managed_bit) != 0};
}
int fake_stream_device(core::StreamRef s) { return int(reinterpret_cast<std::uintptr_t>(s.handle()) - 0x100); }
// Devices 0 and 1 are Hopper (9.0), device 2 Ampere (8.0).
int fake_compute_major(int device) { return device == 2 ? 8 : 9; }
core::StreamRef stream_of(int dev) {
    return core::StreamRef(reinterpret_cast<cudaStream_t>(std::uintptr_t(0x100 + dev)));
}

constexpr d::CollectiveLookups fakes{&fake_pointer, &fake_stream_device, &fake_compute_major};

TensorView f32(void* p, std::int64_t n) { return TensorView(p, DataType::f32, {n}); }

// A call on `ranks` local ranks 0..n-1 (ranks r on device r) of a communicator of `size`.
struct Call {
    int size = 2;
    std::vector<d::LocalRank> ranks{{0, 0}, {1, 1}};
    std::vector<TensorView> send;
    std::vector<TensorView> recv;
    std::vector<core::StreamRef> streams{stream_of(0), stream_of(1)};
    d::Collective kind = d::Collective::all_reduce;
    ReduceOp op = ReduceOp::sum;
    int root = 0;
    int version = 22803;

    d::CheckedCollective check() const {
        return d::check_collective({kind, send, recv, streams, op, root}, size, ranks, version, fakes, "test");
    }
};

Call all_reduce_of(std::int64_t n) {
    Call c;
    c.send = {f32(on_device(0), n), f32(on_device(1), n)};
    c.recv = {f32(on_device(0, 1 << 20), n), f32(on_device(1, 1 << 20), n)};
    return c;
}

}  // namespace

TEST(NcclLoading, LoadsNcclAtRunTimeAndReportsItsVersion) {
    const int v = dist::nccl_version();
    // NCCL 2.x encodes its version as major * 10000 + minor * 100 + patch.
    EXPECT_GE(v, 21300);
    EXPECT_LT(v, 30000);
    EXPECT_EQ(v, dist::nccl_version());
}

TEST(NcclLoading, UniqueIdsAreFreshAndNotBlank) {
    const UniqueId a = UniqueId::create();
    const UniqueId b = UniqueId::create();
    EXPECT_NE(a, b);
    bool any = false;
    for (std::byte x : a.bytes) any = any || x != std::byte{0};
    EXPECT_TRUE(any);
}

TEST(CommunicatorDevices, ListsAreCheckedBeforeNccl) {
    const std::vector<int> empty;
    expect_throw_with<InvalidArgument>([&] { d::check_device_list(empty, 4, "t"); }, {"devices", "empty"});
    const std::vector<int> negative{0, -1};
    expect_throw_with<InvalidArgument>([&] { d::check_device_list(negative, 4, "t"); },
                                       {"devices[1]", "device -1 does not exist", "4 devices"});
    const std::vector<int> beyond{0, 1, 4};
    expect_throw_with<InvalidArgument>([&] { d::check_device_list(beyond, 4, "t"); },
                                       {"devices[2]", "device 4 does not exist", "0 to 3"});
    const std::vector<int> twice{2, 0, 2};
    expect_throw_with<InvalidArgument>([&] { d::check_device_list(twice, 4, "t"); },
                                       {"devices[2]", "listed twice", "devices[0]"});
    const std::vector<int> fine{3, 1, 0};
    EXPECT_NO_THROW(d::check_device_list(fine, 4, "t"));
}

TEST(CommunicatorDevices, ConstructorsRefuseDevicesThatDoNotExist) {
    // Device::count() is 0 without a driver, so this device never exists, on any machine.
    const int missing = core::Device::count();
    const UniqueId id = UniqueId::create();
    expect_throw_with<InvalidArgument>([&] { Communicator c{missing}; }, {"Communicator", "does not exist"});
    expect_throw_with<InvalidArgument>([&] { Communicator c(id, 2, 0, missing); }, {"does not exist"});
    expect_throw_with<InvalidArgument>([&] { Communicator c(id, 0, 0, 0); }, {"size: 0 ranks"});
    expect_throw_with<InvalidArgument>([&] { Communicator c(id, 2, 2, 0); }, {"rank: 2", "0 to 1"});
    expect_throw_with<InvalidArgument>([&] { Communicator c(id, 2, -1, 0); }, {"rank: -1"});
    // A blank id would send NCCL's bootstrap to address 0 and wait there.
    expect_throw_with<InvalidArgument>([&] { Communicator c(UniqueId{}, 2, 0, 0); }, {"id", "every byte is zero"});
}

TEST(CollectiveChecks, AValidAllReducePassesWithNcclsCountAndType) {
    const Call c = all_reduce_of(1000);
    const d::CheckedCollective k = c.check();
    EXPECT_EQ(k.count, 1000u);
    EXPECT_EQ(k.nccl_type, 7);  // ncclFloat32
    EXPECT_EQ(k.nccl_op, 0);    // ncclSum
}

TEST(CollectiveChecks, ACommunicatorWithoutLocalRanksIsRefusedBeforeAnyOperandIsRead) {
    Call c;
    c.ranks.clear();
    c.streams.clear();
    expect_throw_with<InvalidArgument>([&] { (void)c.check(); }, {"all_reduce", "no local rank"});
}

TEST(CollectiveChecks, OneOperandOfEachKindPerLocalRank) {
    Call c = all_reduce_of(8);
    c.streams.pop_back();
    expect_throw_with<InvalidArgument>([&] { (void)c.check(); }, {"2 send, 2 recv and 1 stream", "2 local ranks"});
}

TEST(CollectiveChecks, EnumValuesAndRootsOutsideTheirRangeAreRefused) {
    Call c = all_reduce_of(8);
    c.op = static_cast<ReduceOp>(9);
    expect_throw_with<InvalidArgument>([&] { (void)c.check(); }, {"op", "9", "sum, prod, min, max, avg"});
    Call b = all_reduce_of(8);
    b.kind = d::Collective::broadcast;
    b.root = 2;
    expect_throw_with<InvalidArgument>([&] { (void)b.check(); }, {"root 2", "0 to 1"});
    b.root = -1;
    expect_throw_with<InvalidArgument>([&] { (void)b.check(); }, {"root -1"});
    b.root = 1;
    EXPECT_EQ(b.check().count, 8u);
}

TEST(CollectiveChecks, OperandsShareOneDtypeAreContiguousAndAligned) {
    Call c = all_reduce_of(8);
    c.recv[1] = TensorView(on_device(1, 1 << 20), DataType::f16, {8});
    expect_throw_with<InvalidArgument>([&] { (void)c.check(); }, {"recv[1] is f16", "send[0] is f32"});
    Call s = all_reduce_of(8);
    s.send[0] = TensorView(on_device(0), DataType::f32, {4, 2}, {1, 4});
    expect_throw_with<InvalidArgument>([&] { (void)s.check(); }, {"send[0] is not contiguous"});
    Call a = all_reduce_of(8);
    a.recv[0] = f32(on_device(0, (1 << 20) + 2), 8);
    expect_throw_with<InvalidArgument>([&] { (void)a.check(); }, {"recv[0]", "not aligned", "4-byte"});
}

TEST(CollectiveChecks, CountsFollowEachCollectivesRule) {
    Call c = all_reduce_of(8);
    c.recv[0] = f32(on_device(0, 1 << 20), 9);
    expect_throw_with<InvalidArgument>([&] { (void)c.check(); }, {"sends 8 and receives 9", "recv has send's"});

    Call rs = all_reduce_of(8);
    rs.kind = d::Collective::reduce_scatter;
    rs.recv = {f32(on_device(0, 1 << 20), 4), f32(on_device(1, 1 << 20), 4)};
    EXPECT_EQ(rs.check().count, 4u);
    rs.recv[1] = f32(on_device(1, 1 << 20), 8);
    expect_throw_with<InvalidArgument>([&] { (void)rs.check(); }, {"rank 1", "size() times recv"});
    rs.send = {f32(on_device(0), 7), f32(on_device(1), 7)};
    rs.recv = {f32(on_device(0, 1 << 20), 3), f32(on_device(1, 1 << 20), 3)};
    expect_throw_with<InvalidArgument>([&] { (void)rs.check(); }, {"sends 7 and receives 3"});

    Call ag = all_reduce_of(8);
    ag.kind = d::Collective::all_gather;
    ag.recv = {f32(on_device(0, 1 << 20), 16), f32(on_device(1, 1 << 20), 16)};
    EXPECT_EQ(ag.check().count, 8u);
    ag.recv[0] = f32(on_device(0, 1 << 20), 8);
    expect_throw_with<InvalidArgument>([&] { (void)ag.check(); }, {"size() times send"});
}

TEST(CollectiveChecks, CountsThatOverflowAreRefusedNotWrapped) {
    Call ag;
    ag.size = 4;
    ag.ranks = {{0, 0}};
    ag.streams = {stream_of(0)};
    ag.kind = d::Collective::all_gather;
    const std::int64_t huge = std::int64_t(1) << 62;
    ag.send = {TensorView(on_device(0), DataType::i8, {huge})};
    ag.recv = {TensorView(on_device(0), DataType::i8, {4})};  // what 4 * 2^62 wraps to
    expect_throw_with<InvalidArgument>([&] { (void)ag.check(); }, {"all_gather", "size() times send"});
}

TEST(CollectiveChecks, EveryLocalRankPassesTheSameCount) {
    Call c = all_reduce_of(8);
    c.send[1] = f32(on_device(1), 6);
    c.recv[1] = f32(on_device(1, 1 << 20), 6);
    expect_throw_with<InvalidArgument>([&] { (void)c.check(); }, {"local rank 1 passes 6", "local rank 0 passes 8"});
}

TEST(CollectiveChecks, OnlyTheDocumentedInPlaceFormsMayOverlap) {
    Call same = all_reduce_of(8);
    same.recv = same.send;
    EXPECT_NO_THROW((void)same.check());
    Call shifted = all_reduce_of(8);
    shifted.recv = {f32(on_device(0, 4), 8), f32(on_device(1, 1 << 20), 8)};
    expect_throw_with<InvalidArgument>([&] { (void)shifted.check(); }, {"recv[0] overlaps send[0]"});

    // reduce_scatter in place: recv is block rank(i) of send.
    Call rs;
    rs.kind = d::Collective::reduce_scatter;
    rs.send = {f32(on_device(0), 8), f32(on_device(1), 8)};
    rs.recv = {f32(on_device(0), 4), f32(on_device(1, 16), 4)};
    EXPECT_NO_THROW((void)rs.check());
    rs.recv[1] = f32(on_device(1), 4);  // block 0 on rank 1: not its in-place form
    expect_throw_with<InvalidArgument>([&] { (void)rs.check(); }, {"recv[1] overlaps send[1]"});

    // all_gather in place: send is block rank(i) of recv.
    Call ag;
    ag.kind = d::Collective::all_gather;
    ag.recv = {f32(on_device(0), 8), f32(on_device(1), 8)};
    ag.send = {f32(on_device(0), 4), f32(on_device(1, 16), 4)};
    EXPECT_NO_THROW((void)ag.check());
    ag.send[0] = f32(on_device(0, 4), 4);
    expect_throw_with<InvalidArgument>([&] { (void)ag.check(); }, {"recv[0] overlaps send[0]"});
}

TEST(CollectiveChecks, ComplexDataIsReducedAsPairsOfRealsBySumAndAvgOnly) {
    Call c = all_reduce_of(8);
    for (auto* v : {&c.send, &c.recv})
        for (auto& x : *v) x = TensorView(x.data(), DataType::c64, {8});
    const d::CheckedCollective k = c.check();
    EXPECT_EQ(k.count, 16u);
    EXPECT_EQ(k.nccl_type, 8);  // ncclFloat64
    c.op = ReduceOp::avg;
    EXPECT_EQ(c.check().nccl_op, 4);  // ncclAvg
    c.op = ReduceOp::max;
    expect_throw_with<NotSupported>([&] { (void)c.check(); }, {"max of complex (c64)", "sum and avg"});
    c.kind = d::Collective::all_gather;  // no reduction: any complex data moves
    c.recv = {TensorView(on_device(0, 1 << 20), DataType::c64, {16}),
              TensorView(on_device(1, 1 << 20), DataType::c64, {16})};
    EXPECT_EQ(c.check().count, 16u);
}

TEST(CollectiveChecks, Fp8NeedsNccl224) {
    Call c = all_reduce_of(8);
    for (auto* v : {&c.send, &c.recv})
        for (auto& x : *v) x = TensorView(x.data(), DataType::e4m3, {8});
    c.version = 22304;
    expect_throw_with<NotSupported>([&] { (void)c.check(); }, {"e4m3", "NCCL 2.24", "22304"});
    c.version = 22400;
    EXPECT_EQ(c.check().nccl_type, 10);  // ncclFloat8e4m3
    // NCCL's fp8 needs compute capability 9.0: a rank on the Ampere device is refused.
    c.ranks = {{0, 0}, {1, 2}};
    c.send[1] = TensorView(on_device(2), DataType::e4m3, {8});
    c.recv[1] = TensorView(on_device(2, 1 << 20), DataType::e4m3, {8});
    c.streams[1] = stream_of(2);
    expect_throw_with<NotSupported>([&] { (void)c.check(); }, {"e4m3 data on device 2", "compute capability 9.0"});
}

TEST(CollectiveChecks, MemoryAndStreamsBelongToTheRanksDevices) {
    Call host = all_reduce_of(8);
    host.send[1] = f32(host_memory(), 8);
    expect_throw_with<InvalidArgument>([&] { (void)host.check(); }, {"send[1] is host memory", "device 1"});
    Call other = all_reduce_of(8);
    other.recv[0] = f32(on_device(1, 1 << 21), 8);
    expect_throw_with<InvalidArgument>([&] { (void)other.check(); },
                                       {"recv[0] is memory of device 1", "runs on device 0"});
    Call shared = all_reduce_of(8);
    shared.recv[0] = f32(managed(1), 8);  // managed memory serves any device
    EXPECT_NO_THROW((void)shared.check());
    Call stream = all_reduce_of(8);
    stream.streams[1] = stream_of(0);
    expect_throw_with<InvalidArgument>([&] { (void)stream.check(); },
                                       {"streams[1] belongs to device 0", "runs on device 1"});
    // The default streams name no device: they are the rank's when its work is enqueued.
    for (cudaStream_t s : {cudaStream_t{}, cudaStreamLegacy, cudaStreamPerThread}) {
        stream.streams[1] = core::StreamRef(s);
        EXPECT_NO_THROW((void)stream.check());
    }
}

TEST(CollectiveChecks, EmptyOperandsNeedNoMemory) {
    Call c;
    c.send = {f32(nullptr, 0), f32(nullptr, 0)};
    c.recv = {f32(nullptr, 0), f32(nullptr, 0)};
    EXPECT_EQ(c.check().count, 0u);
}
