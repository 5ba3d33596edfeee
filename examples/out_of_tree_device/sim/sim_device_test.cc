#include "sim/sim_device.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "devices/device_guard.h"
#include "devices/device_registry.h"
#include "gtest/gtest.h"
#include "sim/register.h"
#include "sim/sim_launch.h"
#include "wrapper/codegen.h"
#include "wrapper/device_op_overrides.h"

namespace kiln_sim {
namespace {

using kiln::devices::DeviceGuard;
using kiln::devices::DeviceRegistry;

TEST(SimRegistration, RegistersTheDeviceWithItsIndexedNames) {
  ASSERT_TRUE(RegisterSimBackend().ok());
  ASSERT_TRUE(RegisterSimBackend().ok());  // idempotent
  EXPECT_EQ(DeviceRegistry::Global().Names(), (std::vector<std::string>{"sim", "sim:0", "sim:1"}));
  auto one = DeviceRegistry::Global().Find("sim:1");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->device, RegisteredSimDevice());
  EXPECT_EQ(one->index, 1);
  auto past = DeviceRegistry::Global().Find("sim:2");
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(absl::IsNotFound(past.status()));
  EXPECT_NE(past.status().message().find("sim, sim:0, sim:1"), std::string::npos) << past.status();
  auto cpu = DeviceRegistry::Global().Find("cpu");
  EXPECT_TRUE(absl::IsNotFound(cpu.status()));  // only what this binary links in
  EXPECT_TRUE(kiln::wrapper::CreateDeviceCodegen("sim").ok());
  auto ops = kiln::wrapper::FindDeviceOpOverrides("sim:1");
  ASSERT_TRUE(ops.ok());
  EXPECT_TRUE((*ops)->NeedsDeviceGuard());
  EXPECT_EQ((*ops)->DeviceGuard(1), "kiln_sim.device_guard(1)");
}

TEST(SimDevice, GuardsExchangeThePerThreadIndex) {
  SimDevice sim;
  EXPECT_EQ(sim.CurrentDevice(), 0);
  {
    auto guard = DeviceGuard::Create(sim, 1);
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ(sim.CurrentDevice(), 1);
    int other_thread = -1;
    std::thread t([&] { other_thread = sim.CurrentDevice(); });
    t.join();
    EXPECT_EQ(other_thread, 0);
  }
  EXPECT_EQ(sim.CurrentDevice(), 0);
  EXPECT_TRUE(absl::IsNotFound(DeviceGuard::Create(sim, 2).status()));
  EXPECT_TRUE(absl::IsNotFound(sim.SetDevice(5)));
}

TEST(SimDevice, StreamsRunQueuedWorkWhenSynchronized) {
  SimDevice sim;
  auto created = sim.CreateStream(0);
  ASSERT_TRUE(created.ok());
  auto* stream = dynamic_cast<SimStream*>(created->get());
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->id(), 1);
  std::vector<int> ran;
  stream->Enqueue([&] { ran.push_back(1); return absl::OkStatus(); });
  stream->Enqueue([&] { ran.push_back(2); return absl::OkStatus(); });
  EXPECT_TRUE(ran.empty());
  EXPECT_FALSE(*stream->Query());
  ASSERT_TRUE(stream->Synchronize().ok());
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_TRUE(*stream->Query());

  // A failure sticks to the stream.
  stream->Enqueue([] { return absl::InternalError("kernel fault"); });
  EXPECT_TRUE(absl::IsInternal(stream->Synchronize()));
  EXPECT_FALSE(stream->Query().ok());
}

TEST(SimDevice, CurrentStreamIsPerThreadAndFoundById) {
  SimDevice sim;
  auto* default_stream = *sim.CurrentStream(1);
  EXPECT_EQ(default_stream->id(), 0);
  EXPECT_EQ(default_stream->device_index(), 1);
  auto s = sim.CreateStream(1);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(sim.SetStream(s->get()).ok());
  EXPECT_EQ(*sim.CurrentStream(1), s->get());
  EXPECT_EQ(*sim.CurrentStream(0), *sim.CurrentStream(0));
  EXPECT_NE(*sim.CurrentStream(0), s->get());
  EXPECT_EQ(*sim.GetRawStream(1), static_cast<void*>(s->get()));
  ASSERT_TRUE(sim.SetStreamById(1, 0).ok());
  EXPECT_EQ(*sim.CurrentStream(1), default_stream);
  ASSERT_TRUE(sim.SetStreamById(1, (*s)->id()).ok());
  EXPECT_TRUE(absl::IsNotFound(sim.SetStreamById(1, 42)));
  s->reset();
  EXPECT_EQ(*sim.CurrentStream(1), default_stream);
}

TEST(SimDevice, EventsOrderStreamsAndTimeWork) {
  SimDevice sim;
  auto producer_owned = sim.CreateStream(0);
  auto consumer_owned = sim.CreateStream(0);
  ASSERT_TRUE(producer_owned.ok() && consumer_owned.ok());
  auto* producer = dynamic_cast<SimStream*>(producer_owned->get());
  auto* consumer = dynamic_cast<SimStream*>(consumer_owned->get());
  auto start = sim.CreateEvent(0, true);
  auto done = sim.CreateEvent(0, true);
  ASSERT_TRUE(start.ok() && done.ok());
  EXPECT_TRUE(*(*done)->Query());  // never recorded
  std::vector<std::string> order;
  ASSERT_TRUE((*start)->Record(*producer).ok());
  producer->Enqueue([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
    order.push_back("produce");
    return absl::OkStatus();
  });
  ASSERT_TRUE((*done)->Record(*producer).ok());
  EXPECT_FALSE(*(*done)->Query());
  ASSERT_TRUE(consumer->WaitEvent(**done).ok());
  consumer->Enqueue([&] { order.push_back("consume"); return absl::OkStatus(); });
  ASSERT_TRUE(consumer->Synchronize().ok());  // runs the producer first
  EXPECT_EQ(order, (std::vector<std::string>{"produce", "consume"}));
  EXPECT_TRUE(*(*done)->Query());
  auto ms = (*start)->ElapsedTime(**done);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 14.0);
  auto untimed = sim.CreateEvent(0, false);
  ASSERT_TRUE((*untimed)->Record(*producer).ok());
  ASSERT_TRUE((*untimed)->Synchronize().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*start)->ElapsedTime(**untimed).status()));
  auto other_index = sim.CreateStream(1);
  EXPECT_FALSE((*start)->Record(**other_index).ok());
}

// Several threads synchronizing one stream at once: the work still runs one
// item at a time in queue order, every Synchronize returns only once all the
// work queued before it is done, and an event never reports done before the
// work recorded ahead of it has finished.
TEST(SimDevice, ConcurrentSynchronizeRunsWorkInOrderOnce) {
  SimDevice sim;
  auto owned = sim.CreateStream(0);
  ASSERT_TRUE(owned.ok());
  auto* stream = dynamic_cast<SimStream*>(owned->get());
  constexpr int kItems = 24;
  constexpr int kThreads = 4;
  std::mutex mu;
  std::vector<int> ran;
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  std::unique_ptr<std::atomic<bool>[]> finished(new std::atomic<bool>[kItems]);
  std::vector<std::unique_ptr<kiln::devices::Event>> events;
  for (int i = 0; i < kItems; ++i) {
    finished[i] = false;
    stream->Enqueue([&, i] {
      if (running.fetch_add(1) != 0) ++overlaps;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      {
        std::lock_guard<std::mutex> lock(mu);
        ran.push_back(i);
      }
      finished[i] = true;
      running.fetch_sub(1);
      return absl::OkStatus();
    });
    auto event = sim.CreateEvent(0, false);
    ASSERT_TRUE(event.ok());
    ASSERT_TRUE((*event)->Record(*stream).ok());
    events.push_back(std::move(*event));
  }
  std::atomic<int> early_sync{0};
  std::atomic<int> early_event{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      if (!stream->Synchronize().ok()) return;
      for (int i = 0; i < kItems; ++i) {
        if (!finished[i]) ++early_sync;
      }
    });
  }
  // A poller: whenever event i says done, item i must have finished.
  threads.emplace_back([&] {
    for (int round = 0; round < 200; ++round) {
      for (int i = 0; i < kItems; ++i) {
        absl::StatusOr<bool> done = events[i]->Query();
        if (done.ok() && *done && !finished[i]) ++early_event;
      }
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(early_sync, 0);
  EXPECT_EQ(early_event, 0);
  ASSERT_EQ(ran.size(), static_cast<size_t>(kItems));
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
  EXPECT_EQ(stream->completed(), stream->queued());
  for (const auto& event : events) EXPECT_TRUE(*event->Query());
}

// Two streams waiting on each other's earlier work, synchronized from two
// threads at once: each runs in order and neither blocks the other forever.
TEST(SimDevice, CrossStreamWaitsSynchronizedConcurrentlyDoNotDeadlock) {
  SimDevice sim;
  for (int round = 0; round < 50; ++round) {
    auto a_owned = sim.CreateStream(0);
    auto b_owned = sim.CreateStream(0);
    ASSERT_TRUE(a_owned.ok() && b_owned.ok());
    auto* a = dynamic_cast<SimStream*>(a_owned->get());
    auto* b = dynamic_cast<SimStream*>(b_owned->get());
    auto a_done = sim.CreateEvent(0, false);
    auto b_done = sim.CreateEvent(0, false);
    std::mutex mu;
    std::vector<std::string> order;
    auto step = [&](std::string name) {
      return [&, name] {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(name);
        return absl::OkStatus();
      };
    };
    a->Enqueue(step("a1"));
    ASSERT_TRUE((*a_done)->Record(*a).ok());
    ASSERT_TRUE(b->WaitEvent(**a_done).ok());
    b->Enqueue(step("b1"));
    ASSERT_TRUE((*b_done)->Record(*b).ok());
    ASSERT_TRUE(a->WaitEvent(**b_done).ok());
    a->Enqueue(step("a2"));
    absl::Status a_status, b_status;
    std::thread ta([&] { a_status = a->Synchronize(); });
    std::thread tb([&] { b_status = b->Synchronize(); });
    ta.join();
    tb.join();
    ASSERT_TRUE(a_status.ok()) << a_status;
    ASSERT_TRUE(b_status.ok()) << b_status;
    ASSERT_EQ(order, (std::vector<std::string>{"a1", "b1", "a2"})) << "round " << round;
  }
}

// CUDA allows destroying a stream with events recorded on it; the events
// (and waits already queued elsewhere) must stay usable. Run under ASan.
TEST(SimDevice, EventsOutliveTheirStream) {
  SimDevice sim;
  auto other_owned = sim.CreateStream(0);
  ASSERT_TRUE(other_owned.ok());
  auto* other = dynamic_cast<SimStream*>(other_owned->get());
  auto event = sim.CreateEvent(0, true);
  auto end = sim.CreateEvent(0, true);
  ASSERT_TRUE(event.ok() && end.ok());
  std::vector<std::string> order;
  {
    auto doomed_owned = sim.CreateStream(0);
    ASSERT_TRUE(doomed_owned.ok());
    auto* doomed = dynamic_cast<SimStream*>(doomed_owned->get());
    doomed->Enqueue([&] { order.push_back("doomed"); return absl::OkStatus(); });
    ASSERT_TRUE((*event)->Record(*doomed).ok());
    ASSERT_TRUE((*end)->Record(*doomed).ok());
    ASSERT_TRUE(other->WaitEvent(**event).ok());  // queued while the stream lives
    other->Enqueue([&] { order.push_back("other"); return absl::OkStatus(); });
  }  // the stream is destroyed (its queued work runs)
  EXPECT_EQ(order, (std::vector<std::string>{"doomed"}));
  auto done = (*event)->Query();
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(*done);
  EXPECT_TRUE((*event)->Synchronize().ok());
  EXPECT_TRUE((*event)->ElapsedTime(**end).ok());
  EXPECT_TRUE((*event)->Wait(*other).ok());  // waits after the stream is gone
  EXPECT_TRUE(other->WaitEvent(**event).ok());
  ASSERT_TRUE(other->Synchronize().ok());
  EXPECT_EQ(order, (std::vector<std::string>{"doomed", "other"}));

  // A stream that failed before the event: the event reports the failure.
  auto failed = sim.CreateEvent(0, false);
  {
    auto doomed_owned = sim.CreateStream(0);
    auto* doomed = dynamic_cast<SimStream*>(doomed_owned->get());
    doomed->Enqueue([] { return absl::InternalError("kernel fault"); });
    ASSERT_TRUE((*failed)->Record(*doomed).ok());
  }
  EXPECT_TRUE(absl::IsInternal((*failed)->Query().status()));
  EXPECT_TRUE(absl::IsInternal((*failed)->Synchronize()));
  auto waiter = sim.CreateStream(0);
  ASSERT_TRUE((*failed)->Wait(**waiter).ok());
  EXPECT_TRUE(absl::IsInternal((*waiter)->Synchronize()));
}

// Work queued after a failure never runs, so it is dropped: two failed
// streams waiting on each other do not keep each other alive (LeakSanitizer
// under --config=asan).
TEST(SimDevice, FailedStreamsWaitingOnEachOtherAreReleased) {
  SimDevice sim;
  auto a = sim.CreateStream(0);
  auto b = sim.CreateStream(0);
  auto a_event = sim.CreateEvent(0, false);
  auto b_event = sim.CreateEvent(0, false);
  ASSERT_TRUE(a.ok() && b.ok() && a_event.ok() && b_event.ok());
  for (auto* s : {a->get(), b->get()}) {
    dynamic_cast<SimStream*>(s)->Enqueue([] { return absl::InternalError("kernel fault"); });
  }
  ASSERT_TRUE((*a_event)->Record(**a).ok());
  ASSERT_TRUE((*b_event)->Record(**b).ok());
  ASSERT_TRUE((*a)->WaitEvent(**b_event).ok());
  ASSERT_TRUE((*b)->WaitEvent(**a_event).ok());
  EXPECT_TRUE(absl::IsInternal((*a)->Synchronize()));
  EXPECT_TRUE(absl::IsInternal((*b)->Synchronize()));
  EXPECT_TRUE(absl::IsInternal((*a_event)->Synchronize()));
}

// Nothing else runs the simulated device, so Query must make progress: a
// loop polling a stream or an event ends.
TEST(SimDevice, PollingQueryTerminates) {
  SimDevice sim;
  auto owned = sim.CreateStream(0);
  ASSERT_TRUE(owned.ok());
  auto* stream = dynamic_cast<SimStream*>(owned->get());
  int ran = 0;
  constexpr int kItems = 5;
  for (int i = 0; i < kItems; ++i) stream->Enqueue([&] { ++ran; return absl::OkStatus(); });
  auto event = sim.CreateEvent(0, false);
  ASSERT_TRUE((*event)->Record(*stream).ok());
  for (int i = 0; i < kItems; ++i) stream->Enqueue([&] { ++ran; return absl::OkStatus(); });

  constexpr int kMaxPolls = 1000;  // a bound, so a regression fails instead of hanging
  int polls = 0;
  while (polls < kMaxPolls) {
    ++polls;
    absl::StatusOr<bool> done = (*event)->Query();
    ASSERT_TRUE(done.ok()) << done.status();
    if (*done) break;
  }
  EXPECT_LT(polls, kMaxPolls);
  EXPECT_GE(ran, kItems);           // the work before the event ran
  EXPECT_LT(ran, 2 * kItems);       // polling the event ran nothing past it
  polls = 0;
  while (polls < kMaxPolls) {
    ++polls;
    absl::StatusOr<bool> done = stream->Query();
    ASSERT_TRUE(done.ok()) << done.status();
    if (*done) break;
  }
  EXPECT_LT(polls, kMaxPolls);
  EXPECT_EQ(ran, 2 * kItems);

  // A failing item ends the poll with the failure.
  stream->Enqueue([] { return absl::InternalError("kernel fault"); });
  absl::StatusOr<bool> done = false;
  for (polls = 0; polls < kMaxPolls && done.ok() && !*done; ++polls) done = stream->Query();
  EXPECT_TRUE(absl::IsInternal(done.status())) << done.status();
}

TEST(SimDevice, MemoryIsPerIndexAndCounted) {
  SimDevice sim;
  auto a0 = sim.allocator(0);
  auto a1 = sim.allocator(1);
  ASSERT_TRUE(a0.ok() && a1.ok());
  auto p = (*a0)->Allocate(4096, 64);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*sim.MemoryAllocated(0), 4096);
  EXPECT_EQ(*sim.MemoryAllocated(1), 0);
  EXPECT_TRUE(absl::IsResourceExhausted((*a1)->Allocate(size_t{2} << 30, 64).status()));
  (*a0)->Free(*p);
  EXPECT_EQ(*sim.MemoryAllocated(0), 0);
  EXPECT_EQ(*sim.MaxMemoryAllocated(0), 4096);
  auto props = sim.GetDeviceProperties(1);
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(props->total_memory, kSimMemoryBytes);
  EXPECT_EQ(props->warp_size, 32);
  EXPECT_TRUE(sim.IsDtypeSupported(kiln::DType::kFloat32));
  EXPECT_FALSE(sim.IsDtypeSupported(kiln::DType::kFloat16));
  EXPECT_TRUE(absl::IsNotFound(sim.GetDeviceProperties(2).status()));
}

}  // namespace
}  // namespace kiln_sim
