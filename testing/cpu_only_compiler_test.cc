// The compiler built with only the CPU device (issue 6: "a core test builds
// the compiler with only the CPU device and passes"). This binary links
// backends/cpu and no other device implementation (see its BUILD deps); it
// registers the CPU, checks that the registries hold nothing else, compiles
// and runs a small graph against the interpreter, and checks that asking
// for another device is a NotFound error naming what is registered.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "devices/device_guard.h"
#include "devices/device_registry.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "runtime/interpreter.h"
#include "runtime/register_kernels.h"
#include "wrapper/codegen.h"
#include "wrapper/device_op_overrides.h"
#include "driver/compile_graph.h"
#include "wrapper/python_printer.h"

namespace kiln::testing {
namespace {

constexpr const char* kGraph = R"(graph(%x : Float(4, 8), %w : Float(8, 8)):
  %one : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %a : Tensor = aten::mm(%x, %w)
  %b : Tensor = aten::add(%a, %x, %one)
  %c : Tensor = aten::tanh(%b)
  %s : Tensor = aten::softmax(%c, %one, %n)
  return (%s, %c))";

class CpuOnlyCompilerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (const char* tmp = std::getenv("TEST_TMPDIR")) {
      setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
    }
    ASSERT_TRUE(runtime::RegisterReferenceKernels(ir::BuiltinOps()).ok());
    ASSERT_TRUE(backends::cpu::RegisterCpuBackend().ok());
  }
};

TEST_F(CpuOnlyCompilerTest, OnlyTheCpuIsRegistered) {
  EXPECT_EQ(devices::DeviceRegistry::Global().Names(), (std::vector<std::string>{"cpu", "cpu:0"}));
  EXPECT_EQ(wrapper::RegisteredDeviceOpOverrides(), (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(wrapper::CreateDeviceCodegen("cpu").ok());
  EXPECT_TRUE(wrapper::CreateDeviceCodegen("cpu:0").ok());  // indexed names find the type
}

TEST_F(CpuOnlyCompilerTest, CompilesAndRunsAGraphLikeTheInterpreter) {
  auto reference_graph = ir::ParseGraph(kGraph);
  ASSERT_TRUE(reference_graph.ok()) << reference_graph.status();
  Tensor x = Tensor::Empty(DType::kFloat32, {4, 8});
  Tensor w = Tensor::Empty(DType::kFloat32, {8, 8});
  for (int64_t i = 0; i < 32; ++i) x.data<float>()[i] = static_cast<float>(std::sin(0.3 * i));
  for (int64_t i = 0; i < 64; ++i) w.data<float>()[i] = static_cast<float>(std::cos(0.7 * i)) * 0.5f;
  auto want = runtime::RunGraph(**reference_graph, {ir::IValue::FromTensor(x), ir::IValue::FromTensor(w)});
  ASSERT_TRUE(want.ok()) << want.status();

  auto graph = ir::ParseGraph(kGraph);
  ASSERT_TRUE(graph.ok());
  driver::CompileOptions options;
  options.device = "cpu";
  auto compiled = driver::CompileGraph(**graph, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_GE(compiled->num_kernels, 1);
  auto got = compiled->compiled->Run({x, w});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < got->size(); ++o) {
    const Tensor& expected = (*want)[o].toTensor();
    ASSERT_EQ((*got)[o].sizes(), expected.sizes());
    for (int64_t i = 0; i < expected.numel(); ++i) {
      EXPECT_NEAR((*got)[o].GetDouble(i), expected.GetDouble(i), 1e-5) << "output " << o << " at " << i;
    }
  }

  // The printed wrapper uses the CPU's registered device-op strings.
  auto python = wrapper::PrintPythonWrapper(compiled->program);
  ASSERT_TRUE(python.ok()) << python.status();
  EXPECT_NE(python->find("async_compile.cpp_pybinding("), std::string::npos);
  EXPECT_NE(python->find("empty_strided_cpu("), std::string::npos);
  for (const wrapper::Line& line : compiled->program.lines) {
    EXPECT_FALSE(std::holds_alternative<wrapper::EnterDeviceContextManagerLine>(line))
        << "the CPU needs no device guard";
  }
}

TEST_F(CpuOnlyCompilerTest, OtherDevicesAreNotFoundAndTheErrorListsTheCpu) {
  auto device = devices::DeviceRegistry::Global().Find("cuda");
  ASSERT_FALSE(device.ok());
  EXPECT_TRUE(absl::IsNotFound(device.status()));
  EXPECT_NE(device.status().message().find("registered: cpu, cpu:0"), std::string::npos)
      << device.status();
  EXPECT_TRUE(absl::IsNotFound(devices::DeviceGuard::Create("cuda:0").status()));
  EXPECT_TRUE(absl::IsNotFound(devices::DeviceRegistry::Global().Find("cpu:1").status()));

  auto graph = ir::ParseGraph(kGraph);
  ASSERT_TRUE(graph.ok());
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = true;
  auto compiled = driver::CompileGraph(**graph, options);
  ASSERT_FALSE(compiled.ok());
  EXPECT_TRUE(absl::IsNotFound(compiled.status())) << compiled.status();
  EXPECT_NE(compiled.status().message().find("[cpu]"), std::string::npos) << compiled.status();
}

}  // namespace
}  // namespace kiln::testing
