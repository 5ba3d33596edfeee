#include "sim/sim_device.h"

#include <chrono>
#include <memory>
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
