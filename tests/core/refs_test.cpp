// SPDX-License-Identifier: Apache-2.0
// The non-owning references of the runtime layer (StreamRef, EventRef): what they can and cannot
// be made from, and that an empty one is refused before any CUDA call. Runs without a GPU.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <type_traits>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

namespace {
// A call site that takes a stream, as every gpumath entry point does.
template <class T>
concept passes_as_stream = requires(T v) {
    [](core::StreamRef) {}(v);
};
template <class T>
concept passes_as_event = requires(T v) {
    [](core::EventRef) {}(v);
};
}  // namespace

TEST(StreamRef, NeverFromZeroOrNullptrAndDefaultIsTheDefaultStream) {
    // `f(0)` used to compile and silently mean the default stream.
    static_assert(!std::is_constructible_v<core::StreamRef, int>);
    static_assert(!std::is_constructible_v<core::StreamRef, long>);
    static_assert(!std::is_constructible_v<core::StreamRef, unsigned>);
    static_assert(!std::is_constructible_v<core::StreamRef, std::nullptr_t>);
    static_assert(!passes_as_stream<int>);
    static_assert(!passes_as_stream<std::nullptr_t>);
    static_assert(passes_as_stream<cudaStream_t>);
    static_assert(passes_as_stream<core::Stream&>);
    static_assert(std::is_trivially_copyable_v<core::StreamRef>);
    constexpr core::StreamRef def{};
    static_assert(def.handle() == nullptr);  // the documented default: the CUDA default stream
    const auto foreign = reinterpret_cast<cudaStream_t>(std::uintptr_t(0x5eed));  // NOLINT(performance-no-int-to-ptr)
    EXPECT_EQ(core::StreamRef(foreign).handle(), foreign);
    EXPECT_EQ(core::StreamRef(cudaStreamPerThread).handle(), cudaStreamPerThread);
}

TEST(EventRef, AdoptsForeignHandlesAndEventConvertsToIt) {
    static_assert(!std::is_constructible_v<core::EventRef, int>);
    static_assert(!std::is_constructible_v<core::EventRef, std::nullptr_t>);
    static_assert(!std::is_default_constructible_v<core::EventRef>);
    static_assert(!passes_as_event<int>);
    static_assert(passes_as_event<cudaEvent_t>);
    static_assert(passes_as_event<core::Event&>);
    static_assert(passes_as_event<const core::Event&>);
    static_assert(std::is_base_of_v<core::EventRef, core::Event>);
    static_assert(std::is_trivially_copyable_v<core::EventRef>);
    static_assert(!std::is_copy_constructible_v<core::Event>);
    const auto foreign = reinterpret_cast<cudaEvent_t>(std::uintptr_t(0xe7e));  // NOLINT(performance-no-int-to-ptr)
    const core::EventRef ref(foreign);
    EXPECT_EQ(ref.handle(), foreign);
    EXPECT_TRUE(ref);
    EXPECT_EQ(ref, core::EventRef(foreign));
}

TEST(EventRef, ANullHandleIsRefusedBeforeAnyCudaCall) {
    // Without a GPU every CUDA call would throw CudaError: InvalidArgument proves none was made.
    const core::EventRef null(cudaEvent_t{});
    EXPECT_FALSE(null);
    test::expect_throw_with<InvalidArgument>([&] { null.record(); }, {"Event::record", "this Event is empty"});
    test::expect_throw_with<InvalidArgument>([&] { null.synchronize(); }, {"Event::synchronize", "null"});
    test::expect_throw_with<InvalidArgument>([&] { (void)null.ready(); }, {"Event::ready", "null"});
    test::expect_throw_with<InvalidArgument>([&] { core::StreamRef{}.wait(null); },
                                             {"StreamRef::wait", "event: this Event is empty"});
    test::expect_throw_with<InvalidArgument>([&] { core::StreamRef{}.record(null); }, {"StreamRef::record", "empty"});
}

TEST(StreamScope, MakesAStreamCurrentOnItsThreadAndNests) {
    // Handles that are never used on a device: the current stream is bookkeeping of the thread.
    const auto handle = [](std::uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); };
    EXPECT_EQ(core::current_stream(), core::StreamRef{});
    {
        const core::StreamScope outer(handle(0x100));
        EXPECT_EQ(core::current_stream().handle(), handle(0x100));
        {
            const core::StreamScope inner(handle(0x200));
            EXPECT_EQ(core::current_stream().handle(), handle(0x200));
            // Another thread has its own current stream.
            cudaStream_t seen = handle(0x1);
            std::thread([&] { seen = core::current_stream().handle(); }).join();
            EXPECT_EQ(seen, nullptr);
        }
        EXPECT_EQ(core::current_stream().handle(), handle(0x100));
    }
    EXPECT_EQ(core::current_stream(), core::StreamRef{});
    EXPECT_FALSE(core::StreamOptions{}.non_blocking) << "a Stream orders itself against the default stream";
}
