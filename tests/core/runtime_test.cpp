// SPDX-License-Identifier: Apache-2.0
// Device, Stream, Event, memory resources and Buffer on a real GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <latch>
#include <memory>
#include <numeric>
#include <span>
#include <thread>
#include <vector>

#include <gpumath/core.hpp>
#include "core/stream_workspace.hpp"
#include <gpumath/tensor.hpp>

#include "common/recording_resource.hpp"
#include "common/test_util.hpp"

using namespace gpumath;

TEST(Device, Properties) {
    GPUMATH_REQUIRE_GPU();
    const int n = core::Device::count();
    ASSERT_GT(n, 0);
    core::Device d(0);
    int sms = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    EXPECT_EQ(d.multiprocessor_count(), sms);
    int major = 0, minor = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
    EXPECT_EQ(d.compute_capability(), (core::ComputeCapability{major, minor}));
    EXPECT_EQ(d.arch(), "sm_" + std::to_string(major) + std::to_string(minor));
    std::size_t free_b = 0, total_b = 0;
    ASSERT_EQ(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    EXPECT_EQ(d.total_memory(), total_b);
    EXPECT_FALSE(d.name().empty());
    EXPECT_EQ(core::Device::current().ordinal(), 0);
    d.set_current();
    d.synchronize();
    test::expect_throw_with<InvalidArgument>([&] { core::Device bad(n); }, {"ordinal", std::to_string(n)});
    test::expect_throw_with<InvalidArgument>([] { core::Device bad(-1); }, {"ordinal", "-1"});
}

TEST(Stream, OrderingAcrossStreamsThroughEvents) {
    GPUMATH_REQUIRE_GPU();
    core::Device d(0);
    core::Stream a = d.create_stream();
    core::Stream b = d.create_stream({.non_blocking = true, .priority = -1});
    constexpr std::size_t n = 1 << 20;
    std::vector<int> host(n);
    std::iota(host.begin(), host.end(), 7);
    core::Buffer src = core::Buffer::from_host(std::span<const int>(host), a);
    core::Buffer dst(n * sizeof(int), a);
    // Delay stream a on the host side so b would race ahead without the event wait.
    ASSERT_EQ(cudaLaunchHostFunc(
                  a.handle(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }, nullptr),
              cudaSuccess);
    core::Buffer staged(n * sizeof(int), a);
    staged.copy_from(src, a);
    core::Event done = a.record();
    b.wait(done);
    dst.copy_from(staged, b);
    EXPECT_EQ(dst.to_host<int>(b), host);
    EXPECT_TRUE(a.ready());
    EXPECT_TRUE(b.ready());
    EXPECT_LE(b.priority(), 0);
    b.wait(a);  // stream-on-stream wait
    b.synchronize();
}

TEST(Event, TimingAndQueries) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    core::Event start({.timing = true}), end({.timing = true});
    start.record(s);
    ASSERT_EQ(cudaLaunchHostFunc(
                  s.handle(), [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr),
              cudaSuccess);
    end.record(s);
    end.synchronize();
    EXPECT_TRUE(end.ready());
    const float ms = core::Event::elapsed_ms(start, end);
    EXPECT_GE(ms, 15.0f);
    EXPECT_LT(ms, 2000.0f);
    core::Event untimed;
    untimed.record(s);
    untimed.synchronize();
    test::expect_throw_with<InvalidArgument>([&] { (void)core::Event::elapsed_ms(start, untimed); }, {"end", "timing"});
}

TEST(EventRef, AStreamWaitsOnAForeignEventThatStaysAlive) {
    GPUMATH_REQUIRE_GPU();
    cudaEvent_t raw = nullptr;
    ASSERT_EQ(cudaEventCreateWithFlags(&raw, cudaEventDisableTiming), cudaSuccess);
    core::Stream producer, consumer;
    std::vector<int> host(1 << 20, 7);
    core::Buffer a = core::Buffer::from_host(host, producer);
    core::Buffer b(a.size_bytes(), producer);
    {
        const core::EventRef ref(raw);  // adopted, not owned
        producer.record(ref);
        consumer.wait(ref);  // the copy below must see the upload finished on `producer`
        b.copy_from(a, consumer);
        ref.synchronize();
        EXPECT_TRUE(ref.ready());
    }
    EXPECT_EQ(cudaEventQuery(raw), cudaSuccess);  // still alive: the EventRef did not destroy it
    EXPECT_EQ(b.to_host<int>(consumer), host);
    EXPECT_EQ(cudaEventDestroy(raw), cudaSuccess);
}

TEST(Event, MovedFromEventsAndStreamsThrowBeforeAnyCudaCall) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    core::Event a({.timing = true});
    core::Event b = std::move(a);
    b.record(s);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_FALSE(a);
    EXPECT_EQ(a.handle(), nullptr);
    // Before: cudaEventRecord(nullptr, ...) and friends, whose CudaError named no object.
    test::expect_throw_with<InvalidArgument>([&] { a.record(s); },
                                             {"Event::record", "this Event is empty (moved from)"});
    test::expect_throw_with<InvalidArgument>([&] { a.synchronize(); }, {"Event::synchronize", "moved from"});
    test::expect_throw_with<InvalidArgument>([&] { (void)a.ready(); }, {"Event::ready", "moved from"});
    test::expect_throw_with<InvalidArgument>([&] { (void)core::Event::elapsed_ms(a, b); },
                                             {"Event::elapsed_ms", "start: this Event is empty"});
    test::expect_throw_with<InvalidArgument>([&] { s.wait(a); }, {"StreamRef::wait", "event: this Event is empty"});
    test::expect_throw_with<InvalidArgument>([&] { core::StreamRef(s).record(a); },
                                             {"StreamRef::record", "moved from"});
    // A moved-from Stream does not fall back to the default stream.
    core::Stream t = std::move(s);
    test::expect_throw_with<InvalidArgument>([&] { s.synchronize(); }, {"Stream::synchronize", "moved from"});
    test::expect_throw_with<InvalidArgument>([&] { s.wait(b); }, {"Stream::wait", "moved from"});
    test::expect_throw_with<InvalidArgument>([&] { (void)s.record(); }, {"Stream::record", "moved from"});
    // NOLINTEND(bugprone-use-after-move)
    t.wait(b);
    b.synchronize();
    t.synchronize();
    EXPECT_TRUE(b.ready());
}

TEST(Errors, ARaisedCudaErrorLeavesNoLastErrorBehind) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    auto pool = std::make_shared<core::DeviceMemoryResource>();
    (void)cudaGetLastError();
    // An allocation no device can satisfy: cudaErrorMemoryAllocation, which is not sticky.
    EXPECT_THROW((void)pool->allocate(std::size_t(1) << 60, s), CudaError);
    // The caller's own error check after gpumath threw must not see the same error again.
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Memory, EveryResourceHonoursLargerAlignmentsAndFreesTheWholeBlock) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    auto pool = std::make_shared<core::DeviceMemoryResource>();
    const std::uint64_t used0 = pool->used_bytes();
    std::vector<std::pair<void*, std::size_t>> blocks;
    for (std::size_t a : {std::size_t(256), std::size_t(512), std::size_t(4096), std::size_t(1) << 16}) {
        for (int i = 0; i < 4; ++i) {
            void* p = pool->allocate(1000, s, a);
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % a, 0u) << a;
            blocks.emplace_back(p, a);
        }
    }
    for (auto [p, a] : blocks) pool->deallocate(p, 1000, s, a);
    s.synchronize();
    EXPECT_EQ(pool->used_bytes(), used0);  // the over-allocated blocks were freed from their start
    // A Buffer keeps its alignment for the free, and its data round-trips.
    std::vector<int> host(4096);
    std::iota(host.begin(), host.end(), 0);
    for (const std::shared_ptr<core::MemoryResource>& r :
         {std::shared_ptr<core::MemoryResource>(pool),
          std::shared_ptr<core::MemoryResource>(core::PinnedMemoryResource::default_resource()),
          std::shared_ptr<core::MemoryResource>(core::ManagedMemoryResource::default_resource())}) {
        core::Buffer b(host.size() * sizeof(int), s, r, 8192);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 8192, 0u);
        b.copy_from(std::span<const int>(host), s);
        EXPECT_EQ(b.to_host<int>(s), host);
    }
    s.synchronize();
    EXPECT_EQ(pool->used_bytes(), used0);
    core::Buffer d = core::Device::current().allocate(64, s, 1024);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d.data()) % 1024, 0u);
    EXPECT_THROW((void)pool->allocate(64, s, 96), InvalidArgument);
}

TEST(Memory, PoolAllocatesAndFreesInStreamOrder) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    auto pool = std::make_shared<core::DeviceMemoryResource>();
    const std::uint64_t used0 = pool->used_bytes();
    std::vector<void*> ptrs;
    for (int i = 0; i < 16; ++i) ptrs.push_back(pool->allocate(std::size_t(1) << 20, s));
    for (void* p : ptrs) {
        EXPECT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
    }
    EXPECT_GE(pool->used_bytes(), used0 + (16u << 20));
    for (void* p : ptrs) pool->deallocate(p, std::size_t(1) << 20, s);
    s.synchronize();
    EXPECT_EQ(pool->used_bytes(), used0);
    EXPECT_GE(pool->reserved_bytes(), 16u << 20);  // kept for reuse (release threshold)
    // Freed memory is reused in stream order: allocate-after-free on the same stream.
    void* again = pool->allocate(std::size_t(1) << 20, s);
    EXPECT_NE(again, nullptr);
    pool->deallocate(again, std::size_t(1) << 20, s);
    s.synchronize();
    pool->trim(0);
    EXPECT_EQ(pool->reserved_bytes(), 0u);
    EXPECT_EQ(pool->allocate(0, s), nullptr);
}

TEST(Buffer, RoundTripsOfManySizes) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    auto rng = test::rng_for_test();
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(1001), std::size_t(1) << 20}) {
        std::vector<std::uint8_t> host(n);
        for (auto& b : host) b = static_cast<std::uint8_t>(rng());
        core::Buffer b = core::Buffer::from_host(std::span<const std::uint8_t>(host), s);
        EXPECT_EQ(b.size_bytes(), n);
        core::Buffer c(n, s);
        c.copy_from(b, s);
        EXPECT_EQ(c.to_host<std::uint8_t>(s), host) << "size " << n;
    }
}

TEST(Buffer, OneGibibyteRoundTrip) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    const std::size_t n = std::size_t(1) << 28;  // 2^28 floats = 1 GiB
    std::vector<std::uint32_t> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<std::uint32_t>(i * 2654435761u);
    core::Buffer b = core::Buffer::from_host(std::span<const std::uint32_t>(host), s);
    core::Buffer c(b.size_bytes(), s);
    b.copy_to(c, s);
    const auto back = c.to_host<std::uint32_t>(s);
    ASSERT_EQ(back.size(), n);
    EXPECT_TRUE(back == host);
}

TEST(Buffer, PinnedAndManagedResources) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    auto pinned = core::PinnedMemoryResource::default_resource();
    core::Buffer h(4096 * sizeof(float), s, pinned);
    auto* hp = h.data_as<float>();
    for (int i = 0; i < 4096; ++i) hp[i] = float(i) * 0.5f + 1.0f;  // host-accessible
    core::Buffer d(4096 * sizeof(float), s);
    d.copy_from(h, s);
    core::Buffer h2(4096 * sizeof(float), s, pinned);
    h2.copy_from(d, s);
    s.synchronize();
    EXPECT_EQ(std::memcmp(h.data(), h2.data(), h.size_bytes()), 0);
    EXPECT_TRUE(pinned->host_accessible());

    auto managed = core::ManagedMemoryResource::default_resource();
    core::Buffer m(64 * sizeof(int), s, managed);
    for (int i = 0; i < 64; ++i) m.data_as<int>()[i] = i * i;
    core::Buffer md(64 * sizeof(int), s);
    md.copy_from(m, s);
    const auto back = md.to_host<int>(s);
    for (int i = 0; i < 64; ++i) EXPECT_EQ(back[std::size_t(i)], i * i);
}

TEST(Buffer, ForeignStreamAdoptedAndLeftAlive) {
    GPUMATH_REQUIRE_GPU();
    cudaStream_t raw = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking), cudaSuccess);
    {
        core::StreamRef ref(raw);
        EXPECT_EQ(ref.handle(), raw);
        std::vector<float> v{1.f, 2.f, 3.f};
        core::Buffer b = core::Buffer::from_host(v, ref);
        EXPECT_EQ(b.stream().handle(), raw);
        EXPECT_EQ(b.to_host<float>(ref), v);
    }
    // The StreamRef did not own the stream: it is still usable, and destroying it is ours to do.
    EXPECT_EQ(cudaStreamQuery(raw), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(raw), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(raw), cudaSuccess);
}

TEST(Buffer, BadCopiesAndViews) {
    GPUMATH_REQUIRE_GPU();
    core::Buffer a(16), b(32);
    test::expect_throw_with<InvalidArgument>([&] { a.copy_from(b); }, {"16", "32", "copy_from"});
    test::expect_throw_with<InvalidArgument>([&] { (void)a.view<float>({2, 3}); }, {"24 bytes", "16"});
    core::Buffer odd(6);
    test::expect_throw_with<InvalidArgument>([&] { (void)odd.to_host<float>(); }, {"6 bytes", "sizeof(T) = 4"});
    const auto v = b.view<float>({2, 4});
    EXPECT_EQ(v.data(), b.data());
    EXPECT_EQ(v.dtype(), DataType::f32);
}

TEST(Tensor, EmptyFromHostToHost) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    auto rng = test::rng_for_test();
    const auto host = test::random_vector<double>(35, rng);
    Tensor t = Tensor::from_host(host, {5, 7}, s);
    EXPECT_EQ(t.dtype(), DataType::f64);
    EXPECT_EQ(t.shape(0), 5);
    EXPECT_EQ(t.strides()[0], 7);
    EXPECT_EQ(t.to_host<double>(s), host);
    test::expect_throw_with<InvalidArgument>([&] { (void)t.to_host<float>(s); }, {"f64", "f32"});
    Tensor e = Tensor::empty(DataType::bf16, {3, 4}, s);
    EXPECT_EQ(e.buffer().size_bytes(), 24u);
    TensorView view = e;
    EXPECT_EQ(view.data(), e.data());
}

TEST(Tensor, MoveLeavesTheSourceEmpty) {
    GPUMATH_REQUIRE_GPU();
    Tensor a = Tensor::empty(DataType::f32, {4, 4});
    void* p = a.data();
    Tensor b(std::move(a));
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.size(), 16);
    EXPECT_FALSE(a.has_data());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(a.size(), 0);      // NOLINT(bugprone-use-after-move)
    Tensor c;
    c = std::move(b);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(b.size(), 0);  // NOLINT(bugprone-use-after-move)
}

// The per-stream scratch areas the math modules share: one per stream, grown in stream order, and
// one per thread for cudaStreamPerThread (one handle, a different stream in every thread).
TEST(StreamWorkspace, AreasPerStreamAndPerThreadForThePerThreadStream) {
    GPUMATH_REQUIRE_GPU();
    const int device = gpumath::core::Device::current().ordinal();
    gpumath::detail::StreamWorkspace ws(device, gpumath::core::DeviceMemoryResource::default_resource(device));
    gpumath::core::Stream s1, s2;
    void* a1 = nullptr;
    {
        auto lease = ws.acquire(1024, s1);
        a1 = lease.data;
        ASSERT_NE(a1, nullptr);
        // The area is usable on its stream while the lease is held.
        ASSERT_EQ(cudaMemsetAsync(lease.data, 0x5A, 1024, s1.handle()), cudaSuccess);
    }
    {
        auto lease = ws.acquire(512, s1);
        EXPECT_EQ(lease.data, a1) << "a smaller request reuses the stream's area";
    }
    void* a2 = nullptr;
    {
        auto lease = ws.acquire(1024, s2);
        a2 = lease.data;
    }
    EXPECT_NE(a2, a1) << "two streams never share an area";
    {
        auto lease = ws.acquire(std::size_t(1) << 20, s1);  // grows: the old area is freed in stream order
        ASSERT_NE(lease.data, nullptr);
        std::vector<unsigned char> host(1024, 0);
        ASSERT_EQ(cudaMemsetAsync(lease.data, 0x3C, 1024, s1.handle()), cudaSuccess);
        ASSERT_EQ(cudaMemcpyAsync(host.data(), lease.data, 1024, cudaMemcpyDeviceToHost, s1.handle()), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(s1.handle()), cudaSuccess);
        EXPECT_EQ(host[0], 0x3C);
        EXPECT_EQ(host[1023], 0x3C);
    }
    EXPECT_EQ(ws.acquire(0, s1).data, nullptr);

    // Two live threads (a finished thread's id may be reused), both holding their areas at once.
    void* per_thread[2] = {nullptr, nullptr};
    std::latch both_acquired(2);
    std::vector<std::thread> workers;
    for (int t = 0; t < 2; ++t) {
        workers.emplace_back([&, t] {
            auto lease = ws.acquire(4096, gpumath::core::StreamRef(cudaStreamPerThread));
            per_thread[t] = lease.data;
            EXPECT_EQ(cudaMemsetAsync(lease.data, 0, 4096, cudaStreamPerThread), cudaSuccess);
            both_acquired.arrive_and_wait();
            EXPECT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
        });
    }
    for (auto& w : workers) w.join();
    ASSERT_NE(per_thread[0], nullptr);
    ASSERT_NE(per_thread[1], nullptr);
    EXPECT_NE(per_thread[0], per_thread[1]) << "cudaStreamPerThread of two threads are two streams";
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ws.release();
}

// A gpumath Stream frees its scratch areas in order on itself just before it is destroyed: a
// stream per request does not grow device memory, and no area is freed on a destroyed handle. A
// stream used all along keeps its area.
TEST(StreamWorkspace, AGpumathStreamFreesItsAreasOnItselfBeforeItGoes) {
    GPUMATH_REQUIRE_GPU();
    const int device = gpumath::core::Device::current().ordinal();
    auto resource = std::make_shared<test::RecordingResource>();
    {
        const std::shared_ptr<gpumath::detail::StreamWorkspace> ws =
            gpumath::detail::stream_workspace(device, resource);
        core::Stream steady;
        void* steady_area = nullptr;
        for (int i = 0; i < 300; ++i) {
            cudaStream_t handle = nullptr;
            {
                core::Stream request;
                handle = request.handle();
                auto lease = ws->acquire(4096, request);
                ASSERT_EQ(cudaMemsetAsync(lease.data, i & 0xFF, 4096, handle), cudaSuccess);
            }
            const std::vector<cudaStream_t> freed_on = resource->deallocations();
            ASSERT_FALSE(freed_on.empty());
            EXPECT_EQ(freed_on.back(), handle) << "request " << i << "'s area was not freed on its stream";
            auto lease = ws->acquire(4096, steady);
            if (i == 0) steady_area = lease.data;
            EXPECT_EQ(lease.data, steady_area) << "the stream used all along lost its area at request " << i;
            ASSERT_EQ(ws->entries(), 1u) << "at request " << i;
            ASSERT_EQ(resource->live(), 1) << "at request " << i;
        }
        EXPECT_EQ(resource->deallocations().size(), 300u);
    }
    EXPECT_EQ(resource->live(), 0);
}

// to_host copies into pageable memory and synchronizes: inside a capture that would end the
// capture with an error. It is refused with nothing enqueued, and the capture goes on.
TEST(Buffer, ToHostIsRefusedWhileTheStreamCaptures) {
    GPUMATH_REQUIRE_GPU();
    core::Stream s;
    const std::vector<float> host = {1, 2, 3, 4};
    const core::Buffer a = core::Buffer::from_host(host, s);
    core::Buffer b(a.size_bytes(), s);
    const Tensor t = Tensor::from_host(host, {4}, s);
    s.synchronize();
    ASSERT_EQ(cudaStreamBeginCapture(s.handle(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
    b.copy_from(a, s);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.to_host<float>(s); },
                                             {"Buffer::to_host", "capturing a CUDA graph", "cudaStreamEndCapture"});
    test::expect_throw_with<InvalidArgument>([&] { (void)t.to_host<float>(s); },
                                             {"Tensor::to_host", "capturing a CUDA graph", "PinnedMemoryResource"});
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(s.handle(), &graph), cudaSuccess) << "the capture was invalidated";
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s.handle()), cudaSuccess);
    EXPECT_EQ(b.to_host<float>(s), host) << "the captured copy ran";
    EXPECT_EQ(t.to_host<float>(s), host);
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
}

// An event recorded on a stream must come from that stream's device; wait(other) and record()
// made theirs on the current device instead.
TEST(Stream, WaitsOnAndRecordsStreamsOfAnotherDevice) {
    GPUMATH_REQUIRE_GPU();
    if (core::Device::count() < 2) GTEST_SKIP() << "needs two devices";
    const core::Device previous = core::Device::current();
    core::Device(0).set_current();
    const core::Stream other = core::Device(1).create_stream();
    const core::Stream mine = core::Device(0).create_stream();
    const std::vector<float> host(1 << 20, 3.0f);
    core::Buffer on_one;
    {
        const detail::DeviceGuard guard(1);
        on_one = core::Buffer::from_host(host, other);
    }
    mine.wait(other);
    const core::Event e = other.record();
    EXPECT_EQ(core::Device::current(), core::Device(0)) << "the current device changed";
    e.synchronize();
    EXPECT_TRUE(other.ready());
    mine.synchronize();
    EXPECT_EQ(on_one.to_host<float>(other), host);
    previous.set_current();
}
