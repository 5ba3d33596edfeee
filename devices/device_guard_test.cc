#include "devices/device_guard.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devices/device_registry.h"
#include "gtest/gtest.h"

namespace kiln::devices {
namespace {

// A device with `count` indices whose current index is per thread, as a
// GPU runtime's is. Records every SetDevice call.
class MultiIndexDevice : public DeviceInterface {
 public:
  // One device at a time per thread in these tests: a new one starts at 0.
  explicit MultiIndexDevice(int count) : count_(count) { current_ = 0; }
  std::string type() const override { return "multi"; }
  bool is_available() const override { return true; }
  int device_count() const override { return count_; }
  absl::StatusOr<DeviceAllocator*> allocator(int) override {
    return absl::UnimplementedError("no memory");
  }
  absl::Status Synchronize(int) override { return absl::OkStatus(); }
  int CurrentDevice() const override { return current_; }
  absl::Status SetDevice(int index) override {
    if (index < 0 || index >= count_) return absl::InvalidArgumentError("bad index");
    if (index == fail_on_) return absl::InternalError("driver refused");
    current_ = index;
    calls.push_back(index);
    return absl::OkStatus();
  }
  void FailOn(int index) { fail_on_ = index; }

  std::vector<int> calls;

 private:
  int count_;
  int fail_on_ = -1;
  static thread_local int current_;
};
thread_local int MultiIndexDevice::current_ = 0;

TEST(DeviceGuard, MakesTheIndexCurrentAndRestoresThePreviousOne) {
  MultiIndexDevice device(3);
  ASSERT_TRUE(device.SetDevice(1).ok());
  {
    auto guard = DeviceGuard::Create(device, 2);
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ(device.CurrentDevice(), 2);
    EXPECT_EQ(guard->index(), 2);
    EXPECT_EQ(guard->previous_index(), 1);
    {
      auto inner = DeviceGuard::Create(device, 0);
      ASSERT_TRUE(inner.ok());
      EXPECT_EQ(device.CurrentDevice(), 0);
    }
    EXPECT_EQ(device.CurrentDevice(), 2);
  }
  EXPECT_EQ(device.CurrentDevice(), 1);
}

TEST(DeviceGuard, SameIndexDoesNotCallTheDriver) {
  MultiIndexDevice device(2);
  {
    auto guard = DeviceGuard::Create(device, 0);
    ASSERT_TRUE(guard.ok());
  }
  EXPECT_TRUE(device.calls.empty());
}

TEST(DeviceGuard, MinusOneIsANoOp) {
  MultiIndexDevice device(2);
  ASSERT_TRUE(device.SetDevice(1).ok());
  device.calls.clear();
  {
    auto guard = DeviceGuard::Create(device, -1);
    ASSERT_TRUE(guard.ok());
    EXPECT_EQ(guard->previous_index(), -1);
    EXPECT_EQ(device.CurrentDevice(), 1);
  }
  EXPECT_EQ(device.CurrentDevice(), 1);
  EXPECT_TRUE(device.calls.empty());
}

TEST(DeviceGuard, BadIndicesAreNotFoundAndChangeNothing) {
  MultiIndexDevice device(2);
  for (int bad : {2, 7, -2}) {
    auto guard = DeviceGuard::Create(device, bad);
    ASSERT_FALSE(guard.ok()) << bad;
    EXPECT_TRUE(absl::IsNotFound(guard.status())) << guard.status();
    EXPECT_NE(guard.status().message().find("multi"), std::string::npos);
  }
  EXPECT_EQ(device.CurrentDevice(), 0);
  EXPECT_TRUE(device.calls.empty());
}

TEST(DeviceGuard, DriverFailureIsReturned) {
  MultiIndexDevice device(2);
  device.FailOn(1);
  auto guard = DeviceGuard::Create(device, 1);
  ASSERT_FALSE(guard.ok());
  EXPECT_TRUE(absl::IsInternal(guard.status()));
  EXPECT_EQ(device.CurrentDevice(), 0);
}

TEST(DeviceGuard, MovedGuardRestoresOnce) {
  MultiIndexDevice device(3);
  std::vector<DeviceGuard> guards;
  {
    auto guard = DeviceGuard::Create(device, 2);
    ASSERT_TRUE(guard.ok());
    guards.push_back(std::move(*guard));
  }  // the moved-from guard restores nothing
  EXPECT_EQ(device.CurrentDevice(), 2);
  auto second = DeviceGuard::Create(device, 1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(device.CurrentDevice(), 1);
  // Move-assigning first restores what the target guarded (back to 0, the
  // index before the first guard), then takes over the source's restore
  // (to 2, the index before the second guard).
  guards[0] = std::move(*second);
  EXPECT_EQ(device.CurrentDevice(), 0);
  EXPECT_TRUE(guards[0].Restore().ok());
  EXPECT_EQ(device.CurrentDevice(), 2);
  EXPECT_TRUE(guards[0].Restore().ok());  // second Restore: nothing to do
  guards.clear();
  EXPECT_EQ(device.CurrentDevice(), 2);
}

TEST(DeviceGuard, CurrentIndexIsPerThread) {
  MultiIndexDevice device(2);
  auto guard = DeviceGuard::Create(device, 1);
  ASSERT_TRUE(guard.ok());
  int seen_by_other_thread = -1;
  std::thread other([&] { seen_by_other_thread = device.CurrentDevice(); });
  other.join();
  EXPECT_EQ(seen_by_other_thread, 0);
  EXPECT_EQ(device.CurrentDevice(), 1);
}

TEST(DeviceGuard, CreatesByNameThroughTheRegistry) {
  DeviceRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<MultiIndexDevice>(2)).ok());
  {
    auto guard = DeviceGuard::Create("multi:1", registry);
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ(guard->device()->CurrentDevice(), 1);
  }
  auto ref = registry.Find("multi");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->device->CurrentDevice(), 0);
  auto past = DeviceGuard::Create("multi:2", registry);
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(absl::IsNotFound(past.status()));
  EXPECT_NE(past.status().message().find("multi:0, multi:1"), std::string::npos) << past.status();
  auto unknown = DeviceGuard::Create("cuda", registry);
  EXPECT_TRUE(absl::IsNotFound(unknown.status()));
  EXPECT_NE(unknown.status().message().find("multi:1"), std::string::npos);
}

}  // namespace
}  // namespace kiln::devices
