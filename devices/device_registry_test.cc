#include "devices/device_registry.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::devices {
namespace {

class FakeDevice : public DeviceInterface {
 public:
  FakeDevice(std::string type, int count) : type_(std::move(type)), count_(count) {}
  std::string type() const override { return type_; }
  bool is_available() const override { return true; }
  int device_count() const override { return count_; }
  absl::StatusOr<DeviceAllocator*> allocator(int) override {
    return absl::UnimplementedError("fake");
  }
  absl::Status Synchronize(int) override { return absl::OkStatus(); }

 private:
  std::string type_;
  int count_;
};

TEST(ParseDeviceName, AcceptsTypeAndIndex) {
  auto a = ParseDeviceName("cpu");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->type, "cpu");
  EXPECT_EQ(a->index, 0);
  auto b = ParseDeviceName("fake_2:3");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->type, "fake_2");
  EXPECT_EQ(b->index, 3);
}

TEST(ParseDeviceName, RejectsMalformedNames) {
  for (const char* bad : {"", ":0", "cpu:", "cpu:-1", "cpu:x", "CPU", "cp u", "cpu:1:2",
                          "cpu:99999999999", "x); system(\"rm\")"}) {
    EXPECT_FALSE(ParseDeviceName(bad).ok()) << bad;
  }
}

TEST(DeviceRegistry, FindsRegisteredDevicesByTypeAndIndex) {
  DeviceRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("fake", 2)).ok());
  auto d0 = registry.Find("fake");
  ASSERT_TRUE(d0.ok()) << d0.status();
  EXPECT_EQ(d0->index, 0);
  EXPECT_EQ(d0->device->type(), "fake");
  auto d1 = registry.Find("fake:1");
  ASSERT_TRUE(d1.ok());
  EXPECT_EQ(d1->index, 1);
  EXPECT_TRUE(registry.Contains("fake"));
  EXPECT_EQ(registry.Names(), (std::vector<std::string>{"fake", "fake:0", "fake:1"}));
}

TEST(DeviceRegistry, UnknownNamesAreNotFoundAndListRegisteredOnes) {
  DeviceRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("fake", 1)).ok());
  auto missing = registry.Find("cuda");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("fake:0"), std::string::npos);
  auto past = registry.Find("fake:1");
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(absl::IsNotFound(past.status()));
  EXPECT_TRUE(absl::IsNotFound(registry.Find("not a name").status()));
}

// A type with no device present (a CUDA build on a machine without a GPU)
// is still found by type: compiling for it needs no device.
TEST(DeviceRegistry, FindTypeIgnoresTheDeviceCount) {
  DeviceRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("fake", 0)).ok());
  EXPECT_TRUE(absl::IsNotFound(registry.Find("fake").status()));
  absl::StatusOr<DeviceInterface*> by_type = registry.FindType("fake");
  ASSERT_TRUE(by_type.ok()) << by_type.status();
  EXPECT_EQ((*by_type)->type(), "fake");
  EXPECT_TRUE(registry.FindType("fake:3").ok());
  EXPECT_TRUE(absl::IsNotFound(registry.FindType("cuda").status()));
  EXPECT_TRUE(absl::IsNotFound(registry.FindType("not a name").status()));
}

TEST(DeviceRegistry, EveryDeviceIsListedWithItsIndexedNames) {
  DeviceRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("zeta", 3)).ok());
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("alpha", 1)).ok());
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("none", 0)).ok());
  EXPECT_EQ(registry.Names(), (std::vector<std::string>{"alpha", "alpha:0", "none", "zeta", "zeta:0",
                                                        "zeta:1", "zeta:2"}));
  for (const char* name : {"alpha", "alpha:0", "zeta", "zeta:2"}) {
    EXPECT_TRUE(registry.Find(name).ok()) << name;
  }
  // A device with no index (no hardware) stays listed but cannot be found.
  auto none = registry.Find("none");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(absl::IsNotFound(none.status()));
  auto past = registry.Find("zeta:3");
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(absl::IsNotFound(past.status()));
  const std::string message(past.status().message());
  for (const char* listed : {"alpha:0", "none", "zeta:0", "zeta:1", "zeta:2"}) {
    EXPECT_NE(message.find(listed), std::string::npos) << listed << " missing from: " << message;
  }
  EXPECT_NE(message.find("index 3 is past the device count 3"), std::string::npos) << message;
}

TEST(DeviceRegistry, DoubleRegistrationIsAnErrorUnlessIfAbsent) {
  DeviceRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<FakeDevice>("fake", 1)).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(
      registry.Register(std::make_unique<FakeDevice>("fake", 1))));
  EXPECT_TRUE(registry.RegisterIfAbsent(std::make_unique<FakeDevice>("fake", 1)).ok());
  EXPECT_FALSE(registry.Register(nullptr).ok());
  EXPECT_FALSE(registry.Register(std::make_unique<FakeDevice>("Bad-Name", 1)).ok());
}

}  // namespace
}  // namespace kiln::devices
