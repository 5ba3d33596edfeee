// The interfaces without any backend: a clear error, never an abort.
#include "lazy/backend_interface.h"

#include <string>

#include "lazy/backend_device.h"
#include "lazy/lazy_tensor.h"
#include "lazy/lowering_context.h"
#include "gtest/gtest.h"
#include "support/tensor.h"

namespace kiln::lazy {
namespace {

TEST(BackendInterfaceTest, NoBackendIsAClearError) {
  EXPECT_FALSE(HasBackend());
  absl::StatusOr<BackendImplInterface*> backend = GetBackend();
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(backend.status().message().find("RegisterKilnLazyBackend"), std::string::npos);

  EXPECT_FALSE(LoweringContext::Create("x", BackendDevice()).ok());
  LazyTensor t = LazyTensor::FromTensor(Tensor::Empty(DType::kFloat32, {2}));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(MarkStep().ok());
}

class NamedType : public BackendDeviceType {
 public:
  explicit NamedType(int8_t t) : BackendDeviceType(t) {}
  std::string ToString() const override { return type == 0 ? "cpu" : "cuda"; }
};

TEST(BackendInterfaceTest, DevicesOrderByTypeThenOrdinal) {
  auto cpu = std::make_shared<NamedType>(0);
  auto cuda = std::make_shared<NamedType>(1);
  BackendDevice c0(cpu, 0), c1(cpu, 1), g0(cuda, 0);
  EXPECT_TRUE(c0 < c1);
  EXPECT_TRUE(c1 < g0);
  EXPECT_FALSE(g0 < c0);
  EXPECT_EQ(c0, BackendDevice(std::make_shared<NamedType>(0), 0));
  EXPECT_NE(c0, c1);
  EXPECT_EQ(g0.ToString(), "cuda:0");
  EXPECT_EQ(c1.ToString(), "cpu:1");
  EXPECT_EQ(BackendDevice().ordinal(), 0);
}

}  // namespace
}  // namespace kiln::lazy
